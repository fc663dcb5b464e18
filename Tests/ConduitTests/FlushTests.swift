import Conduit
import ConduitCore
import ConduitLoopback
import ConduitTesting
import Testing

/// Reliable data is done only when the peer acknowledged it: `flush(timeout:)`,
/// `close(timeout:)` and `hangUp(timeout:)` return then, or throw `notAcknowledged` saying how
/// many messages were not. On virtual time, over an impaired loopback path (so the reliability
/// engine carries the call and its acknowledgements are real).
@Suite("Flush and close wait for acknowledgement")
struct FlushTests {
    static func hub(of pair: CallPair) throws -> LoopbackHub {
        try #require(pair.runtime.registry.transport(for: "loopback") as? LoopbackTransport).hub
    }

    static func payload(_ index: Int) -> [UInt8] { (0..<200).map { UInt8(truncatingIfNeeded: index &+ $0) } }

    @Test("flush returns once every message is acknowledged; cut off, it throws how many were not; healed, close delivers all, once, in order")
    func flushReportsWhatWasNotAcknowledged() async throws {
        let clock = VirtualClock()
        let name = "flush-cut"
        let pair = try await CallPair.connect(name, query: "?loss=0.01&seed=5", configuration: ImpairedPathVirtualTimeTests.configuration, clock: clock)
        let (outbound, inbound) = try await clock.run(advancingBy: .milliseconds(5), limit: .seconds(10)) {
            try await pair.open(100, .reliableMessage)
        }
        let received = EventRecorder(inbound.events)
        for index in 0..<20 { try await outbound.send(Self.payload(index), timestamp: UInt64(index)) }
        try await clock.run(advancingBy: .milliseconds(5), limit: .seconds(10)) {
            try await outbound.flush(timeout: .seconds(5))
        }
        // Everything the flush waited for is acknowledged, so the receiver has it (once read).
        #expect(await clock.advance(by: .milliseconds(5), until: { received.all.compactMap(\.message).count == 20 }, limit: .seconds(2)))

        // The path is cut: 7 more messages cannot be acknowledged within the flush's 2 s.
        let hub = try Self.hub(of: pair)
        hub.setPartitioned(name, true)
        for index in 20..<27 { try await outbound.send(Self.payload(index), timestamp: UInt64(index)) }
        let error = try await clock.run(advancingBy: .milliseconds(20), limit: .seconds(10)) {
            await conduitError { () async throws(ConduitError) in try await outbound.flush(timeout: .seconds(2)) }
        }
        #expect(error?.code == .notAcknowledged)
        #expect(error?.message.hasPrefix("7 reliable messages of ") == true, "\(String(describing: error))")

        // Healed: the engine retransmits, and the graceful close returns once all 27 arrived.
        hub.setPartitioned(name, false)
        try await clock.run(advancingBy: .milliseconds(20), limit: .seconds(60)) {
            try await outbound.close(timeout: .seconds(30))
        }
        #expect(await clock.advance(by: .milliseconds(5), until: { received.all.compactMap(\.message).count == 27 }, limit: .seconds(2)))
        let messages = received.all.compactMap(\.message)
        #expect(messages.map(\.timestamp) == Array(UInt64(0)..<27))
        #expect(messages.map(\.bytes) == (0..<27).map(Self.payload))
        received.cancel()
        try await clock.run(advancingBy: .milliseconds(20), limit: .seconds(60)) { try await pair.finish() }
    }

    @Test("hangUp(timeout:) with the path cut: the call ends anyway and the error counts the messages never acknowledged")
    func hangUpReportsWhatWasNotAcknowledged() async throws {
        let clock = VirtualClock()
        let name = "flush-hangup"
        let pair = try await CallPair.connect(name, query: "?loss=0.01&seed=6", configuration: ImpairedPathVirtualTimeTests.configuration, clock: clock)
        let (outbound, _) = try await clock.run(advancingBy: .milliseconds(5), limit: .seconds(10)) {
            try await pair.open(101, .reliableMessage)
        }
        try Self.hub(of: pair).setPartitioned(name, true)
        for index in 0..<5 { try await outbound.send(Self.payload(index)) }
        let caller = pair.caller
        let error = try await clock.run(advancingBy: .milliseconds(20), limit: .seconds(60)) {
            await conduitError { () async throws(ConduitError) in try await caller.hangUp(timeout: .seconds(1)) }
        }
        #expect(error?.code == .notAcknowledged)
        #expect(error?.message.hasPrefix("5 reliable messages of the call") == true, "\(String(describing: error))")
        #expect(await caller.isEnded)
        try await clock.run(advancingBy: .milliseconds(20), limit: .seconds(60)) { try await pair.finish() }
    }

    @Test("over an in-process link, flush and close(timeout:) return at once with nothing owed")
    func inProcessLinkAcknowledgesOnWrite() async throws {
        let pair = try await CallPair.connect("flush-plain")
        let (outbound, inbound) = try await pair.open(102, .reliableMessage)
        for index in 0..<10 { try await outbound.send(Self.payload(index), timestamp: UInt64(index)) }
        try await outbound.flush(timeout: .seconds(10))
        try await outbound.close(timeout: .seconds(10))
        #expect(await pair.caller.linkStatistics == nil, "an in-process link measures no path")
        #expect(try await readMessages(10, from: inbound).map(\.timestamp) == (0..<10).map { UInt64($0) })
        try await pair.finish()
    }
}

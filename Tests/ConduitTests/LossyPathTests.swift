import Conduit
import Foundation
import ConduitTesting
import ConduitCore
import Testing
import ConduitImpairment

/// Calls over loopback that loses 10 %, reorders 5 % and duplicates 1 % of datagrams in each
/// direction: the runtime puts the core's reliability engine under the call, and the public API
/// must behave exactly as on a perfect link for reliable types. CONDUIT_SOAK=1 sends more.
@Suite("Calls over a lossy path")
struct LossyPathTests {
    static let impairment = "?loss=0.1&reorder=0.05&dup=0.01&seed=31"
    static let soak = ProcessInfo.processInfo.environment["CONDUIT_SOAK"] == "1"

    @Test("reliable messages of 1 B to 128 KiB arrive exactly once, in order, byte-identical, on virtual time")
    func reliableOrderedThroughLoss() async throws {
        // The runtime, the reliability engine's timers and the impaired path all run on one
        // virtual clock: retransmission happens on virtual time, and the run repeats exactly.
        let clock = VirtualClock()
        let pair = try await CallPair.connect("lossy-reliable", query: Self.impairment, clock: clock)
        let (outbound, inbound) = try await pair.open(100, .reliableMessage)
        let count = Self.soak ? 2_000 : 300
        var random = SeededRandom(seed: 2_026)
        let messages: [[UInt8]] = (0..<count).map { _ in random.bytes(max(1, random.logUniformSize(max: 131_072))) }
        let started = clock.now()
        let sender = Task {
            for (index, message) in messages.enumerated() { try await outbound.send(message, timestamp: UInt64(index)) }
        }
        let received = try await clock.run(advancingBy: .milliseconds(5), limit: .seconds(Self.soak ? 600 : 120)) {
            var received: [InboundDataSession.Message] = []
            for await event in inbound.events {
                guard case .message(let message) = event else { continue }
                received.append(message)
                if received.count == count { break }
            }
            return received
        }
        try await sender.value
        #expect(received.map(\.timestamp) == (0..<UInt64(count)).map { $0 })
        #expect(received.map(\.bytes) == messages)
        let bytes = messages.reduce(0) { $0 + $1.count }
        print("[lossy path] \(count) messages, \(bytes) bytes through 10 % loss in \(clock.now() - started) of virtual time")
        // The goodbye crosses the lossy path too: its retransmissions need time to move.
        try await clock.run(advancingBy: .milliseconds(5), limit: .seconds(60)) { try await pair.finish() }
    }
}

#if SCTP
import Conduit
import ConduitNetworkTestSupport
import ConduitCore
import ConduitImpairment
import ConduitSCTP
import Testing

/// A Conduit call over sctp+udp through the user-space impairment proxy (`conduit impair`):
/// 10 % loss, 5 % reordering, 1 % duplication and 1 % corruption each way. SCTP's own
/// retransmission, ordering and CRC32c carry it; there is no reliability engine of ours under it.
@Suite("Calls over SCTP through the impairment proxy", .timeLimit(.minutes(3)))
struct SCTPLossyCallTests {
    /// The caller asks for a 30 s connect timeout in its URL: INIT and COOKIE-ECHO can be lost too.
    static func connect(impairment: ImpairmentConfiguration) async throws -> ImpairedCall {
        var configuration = ConduitConfiguration()
        configuration.rateLimit = .unlimited
        configuration.connectTimeout = .seconds(30)
        return try await ImpairedCall.connect(
            scheme: "sctp+udp", transport: SCTPTransport(), configuration: configuration, impairment: impairment,
            connectQuery: "?connect-timeout-ms=30000")
    }

    @Test("1,000 reliable messages of 1 B to 16 KiB: exactly once, in order, byte-identical")
    func reliableMessagesThroughImpairment() async throws {
        let call = try await Self.connect(impairment: .harsh(seed: 2026, corrupt: 0.01))
        let count = 1_000
        var random = SeededRandom(seed: 314)
        let messages: [[UInt8]] = (0..<count).map { _ in random.bytes(max(1, random.logUniformSize(max: 16_384))) }
        let started = ContinuousClock.now
        let received = try await call.transferReliably(on: 100, messages)
        let elapsed = started.duration(to: .now)
        #expect(received.map(\.timestamp) == (0..<UInt64(count)).map { $0 })
        #expect(received.map(\.bytes) == messages)
        let stats = await call.proxy.statistics()
        #expect(stats.clientToUpstream.dropped > 0 && stats.clientToUpstream.reordered > 0)
        #expect(stats.clientToUpstream.duplicated > 0 && stats.clientToUpstream.corrupted > 0)
        print("[sctp lossy] \(count) messages, \(messages.reduce(0) { $0 + $1.count }) bytes through 10 % loss / 5 % reorder / 1 % dup / 1 % corrupt in \(elapsed)")
        await call.end()
    }

    @Test("unreliable messages (PR-SCTP, no retransmission): at most once, intact, some lost")
    func unreliableMessagesThroughLoss() async throws {
        let call = try await Self.connect(impairment: .harsh(seed: 77))
        let outbound = try await call.caller.makeOutboundDataSession(streamID: 101, type: .unreliableMessage)
        #expect(await call.nextIncomingSession()?.streamID == 101)
        let inbound = try await call.callee.makeInboundDataSession(streamID: 101, expecting: .unreliableMessage)
        var random = SeededRandom(seed: 79)
        // One SCTP packet each, so each message's fate is one toss of the loss model.
        let messages: [[UInt8]] = (0..<600).map { _ in random.bytes(1 + random.below(900)) }
        for (index, message) in messages.enumerated() {
            try await outbound.send(message, timestamp: UInt64(index))
            if index % 50 == 49 { try await Task.sleep(for: .milliseconds(5)) }
        }
        let collector = Task { () -> (seen: [UInt64: Int], corrupted: Int) in
            var seen: [UInt64: Int] = [:]
            var corrupted = 0
            for await event in inbound.events {
                guard case .message(let message) = event else { continue }
                seen[message.timestamp, default: 0] += 1
                if Int(message.timestamp) >= messages.count || messages[Int(message.timestamp)] != message.bytes { corrupted += 1 }
            }
            return (seen, corrupted)
        }
        // Whatever is coming has come once the association has had a few RTOs.
        try await Task.sleep(for: .seconds(3))
        await call.caller.hangUp()
        await call.callee.hangUp()
        let (seen, corrupted) = await collector.value
        #expect(corrupted == 0)
        #expect(seen.values.allSatisfy { $0 == 1 }, "a message arrived twice")
        #expect(seen.count < messages.count, "nothing was lost at 10 % loss without retransmission")
        #expect(seen.count > messages.count / 2)
        await call.listener.close()
        await call.proxy.stop()
    }
}
#endif

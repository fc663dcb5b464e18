import Conduit
import Foundation
import Testing
import ConduitImpairment

/// Calls over loopback that loses 10 %, reorders 5 % and duplicates 1 % of datagrams in each
/// direction: the runtime puts the core's reliability engine under the call, and the public API
/// must behave exactly as on a perfect link for reliable types. CONDUIT_SOAK=1 sends more.
@Suite("Calls over a lossy path")
struct LossyPathTests {
    static let impairment = "?loss=0.1&reorder=0.05&dup=0.01&seed=31"
    static let soak = ProcessInfo.processInfo.environment["CONDUIT_SOAK"] == "1"

    @Test("reliable messages of 1 B to 128 KiB arrive exactly once, in order, byte-identical")
    func reliableOrderedThroughLoss() async throws {
        let pair = try await CallPair.connect("lossy-reliable", query: Self.impairment)
        let (outbound, inbound) = try await pair.open(100, .reliableMessage)
        let count = Self.soak ? 2_000 : 300
        var random = SeededRandom(seed: 2_026)
        let messages: [[UInt8]] = (0..<count).map { _ in random.bytes(max(1, random.logUniformSize(max: 131_072))) }
        let started = ContinuousClock.now
        let sender = Task {
            for (index, message) in messages.enumerated() { try await outbound.send(message, timestamp: UInt64(index)) }
        }
        let received = try await within("\(count) messages through 10 % loss", limit: .seconds(Self.soak ? 120 : 60)) {
            var received: [InboundDataSession.Message] = []
            for await event in inbound.events {
                guard case .message(let message) = event else { continue }
                received.append(message)
                if received.count == count { break }
            }
            return received
        }
        try await sender.value
        let elapsed = started.duration(to: .now)
        #expect(received.map(\.timestamp) == (0..<UInt64(count)).map { $0 })
        #expect(received.map(\.bytes) == messages)
        let bytes = messages.reduce(0) { $0 + $1.count }
        print("[lossy path] \(count) messages, \(bytes) bytes through 10 % loss in \(elapsed): \(String(format: "%.1f", Double(bytes) * 8 / elapsed.seconds / 1e6)) Mbit/s")
        try await pair.finish()
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

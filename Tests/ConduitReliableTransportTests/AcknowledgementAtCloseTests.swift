import ConduitARQ
import ConduitCore
import ConduitLoopback
import ConduitReliableTransport
import ConduitTesting
import MetricsTestKit
import Testing

/// A link that closes right after reading the peer's last frame acknowledges it first: the ACK
/// for a lone frame waits on the ACK delay timer, which closing cancels. On virtual time.
@Suite("Acknowledgement at close")
struct AcknowledgementAtCloseTests {
    @Test("the reader closes within the ACK delay of the last frame: the writer still learns it was delivered")
    func closingSendsTheDelayedAcknowledgement() async throws {
        let pair = try await VirtualReliablePair(name: "rtl-last-ack", connectQuery: "?max-ack-delay-ms=500&pmtud=off", metrics: TestMetrics())
        let (clock, link, peer) = (pair.clock, pair.link, pair.peer)

        var batch = DatagramBatch()
        batch.append([UInt8](repeating: 7, count: 100))
        try await link.write(batch)
        let read = try await clock.run(advancingBy: .milliseconds(1), limit: .seconds(5)) { try await peer.read() }
        #expect(read?.count == 1 && read?[0] == [UInt8](repeating: 7, count: 100))
        // Closed with nothing of its own outstanding, so at once: the ACK (held up to 500 ms) is still owed.
        try await clock.run(advancingBy: .milliseconds(1), limit: .seconds(5)) { await peer.close(drainTimeout: .zero) }
        try await clock.run(advancingBy: .milliseconds(1), limit: .seconds(5)) { await link.close(drainTimeout: .seconds(1)) }

        #expect(await link.framesUnacknowledgedAtEnd == 0)
        #expect(await peer.framesUnacknowledgedAtEnd == 0)
        await pair.listener.close()
    }
}

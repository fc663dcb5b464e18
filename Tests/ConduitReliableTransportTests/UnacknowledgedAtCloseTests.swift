import ConduitARQ
import ConduitCore
import ConduitLoopback
import ConduitReliableTransport
import ConduitTesting
import MetricsTestKit
import Testing

/// A reliable link that closes with frames the peer never acknowledged says so: the count is on
/// the link and in metrics (and in a warning log), never dropped unseen. On virtual time, over an
/// impaired loopback path cut in both directions.
@Suite("Frames unacknowledged at close")
struct UnacknowledgedAtCloseTests {
    @Test("three frames written into a cut path: the close gives up after its drain limit and counts all three")
    func unacknowledgedFramesAreCounted() async throws {
        let name = "rtl-unacknowledged"
        let metrics = TestMetrics()
        let pair = try await VirtualReliablePair(name: name, connectQuery: "?loss=0.01&seed=2", metrics: metrics)
        let (clock, hub, link, peer) = (pair.clock, pair.hub, pair.link, pair.peer)

        hub.setPartitioned(name, true)
        var batch = DatagramBatch()
        for frame in 0..<3 { batch.append([UInt8](repeating: UInt8(frame), count: 100)) }
        try await link.write(batch)
        try await clock.run(advancingBy: .milliseconds(50), limit: .seconds(30)) { await link.close(drainTimeout: .seconds(1)) }

        #expect(await link.framesUnacknowledgedAtEnd == 3)
        let counter = try metrics.expectCounter("conduit_frames_unacknowledged_at_close_total", [("transport", "loopback")])
        #expect(counter.totalValue == 3)
        try await clock.run(advancingBy: .milliseconds(50), limit: .seconds(30)) { await peer.close(drainTimeout: .zero) }
        await pair.listener.close()
    }
}

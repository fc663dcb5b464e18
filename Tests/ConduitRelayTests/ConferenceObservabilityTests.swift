import Conduit
import ConduitRelay
import ConduitLogCapture
import Logging
import MetricsTestKit
import Synchronization
import Testing

/// A conference whose runtime was given a logger and a metrics factory: joining and leaving are
/// logged with the room and the peer, and the messages counted with `kind` = `conference`.
@Suite("Conference logging and metrics")
struct ConferenceObservabilityTests {
    @Test func joinDataAndLeaveAreLoggedAndCounted() async throws {
        let room = try await LoopbackRoom.start(name: "relay-observed")
        let lines = LogCapture()
        let metrics = TestMetrics()
        var observed = room.runtime
        observed.observability = ConduitObservability(
            logger: lines.logger(label: "test"), metricsFactory: metrics
        )
        let (alice, _) = try await room.join("alice", runtime: observed)
        let (bob, bobLog) = try await room.join("bob", runtime: observed)
        let chat = try await alice.makeOutboundDataSession(streamID: 140, type: .reliableMessage)
        try await bobLog.wait(for: "incoming at bob") { $0 == .dataSessionIncoming(streamID: 140, subgroup: nil, type: .reliableMessage, from: "alice") }
        let bobChat = try await bob.makeInboundDataSession(streamID: 140)
        for text in ["one", "two", "three"] { try await chat.send(Array(text.utf8)) }
        #expect(try await read(bobChat, count: 3).map(\.1) == ["one", "two", "three"])
        await alice.leave()
        await bob.leave()
        await room.server.shutdown()

        let logged = lines.entries
        let joined = logged.filter { $0.message == "joined room" }
        try #require(joined.count == 2)
        #expect(Set(joined.compactMap { $0.metadata["conduit.peer"] }) == ["alice", "bob"])
        #expect(joined.allSatisfy { $0.metadata["conduit.room"] == "room" && $0.metadata["conduit.transport"] == "loopback" })
        #expect(joined.allSatisfy { ($0.metadata["conduit.call"]?.count ?? 0) == 8 })
        #expect(logged.filter { $0.message == "left room" }.count == 2)
        #expect(logged.contains { $0.message == "outbound data session opened" && $0.metadata["conduit.stream"] == "140" && $0.metadata["conduit.peer"] == "alice" })

        let conference = [("transport", "loopback"), ("kind", "conference")]
        #expect(metrics.counterTotal(label: "conduit_messages_sent_total", dimensions: conference) == 3)
        #expect(metrics.counterTotal(label: "conduit_messages_received_total", dimensions: conference) == 3)
        #expect(metrics.counterTotal(label: "conduit_calls_total", dimensions: conference) == 2)
        #expect(try metrics.expectMeter("conduit_calls_active", conference).values.last == 0)
        #expect(metrics.counterTotal(label: "conduit_link_bytes_sent_total", dimensions: conference) > 0)
    }
}

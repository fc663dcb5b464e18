#if SCTP
import Conduit
import ConduitCore
import ConduitImpairment
import ConduitNetworkTestSupport
import ConduitSCTP
import ConduitLogCapture
import Logging
import MetricsTestKit
import Synchronization
import Testing

/// A call over SCTP over UDP whose transport and runtime were given a logger and a metrics
/// factory: the links are logged, and each association's totals counted when its link closes.
@Suite("SCTP over UDP logging and metrics", .timeLimit(.minutes(2)))
struct SCTPObservabilityTests {
    @Test func linksAreLoggedAndAssociationsCounted() async throws {
        let lines = LogCapture()
        let metrics = TestMetrics()
        let logger = lines.logger(label: "test")
        var configuration = ConduitConfiguration()
        configuration.rateLimit = .unlimited
        configuration.connectTimeout = .seconds(30)
        let call = try await ImpairedCall.connect(
            scheme: "sctp+udp", transport: SCTPTransport(logger: logger, metricsFactory: metrics), configuration: configuration,
            impairment: ImpairmentConfiguration(), connectQuery: "?connect-timeout-ms=30000",
            observability: ConduitObservability(logger: logger, metricsFactory: metrics)
        )
        let messages = (0..<20).map { index in [UInt8](repeating: UInt8(index), count: 100 + index * 700) }
        let received = try await call.transferReliably(on: 150, messages)
        #expect(received.map(\.bytes) == messages)
        await call.end()

        let sctp = [("transport", "sctp+udp")]
        #expect(metrics.counterTotal(label: "conduit_transport_links_total", dimensions: sctp + [("role", "client")]) == 1)
        #expect(metrics.counterTotal(label: "conduit_transport_links_total", dimensions: sctp + [("role", "server")]) == 1)
        // Both links closed: every message alice's association sent, bob's received, and more
        // (the call's own hello and goodbye); nothing was lost on this path.
        #expect(metrics.counterTotal(label: "conduit_transport_messages_sent_total", dimensions: sctp) >= Int64(messages.count))
        #expect(metrics.counterTotal(label: "conduit_transport_packets_received_total", dimensions: sctp) > 0)
        let callDimensions = sctp + [("kind", "call")]
        #expect(metrics.counterTotal(label: "conduit_messages_received_total", dimensions: callDimensions) == Int64(messages.count))
        #expect(metrics.counterTotal(label: "conduit_bytes_received_total", dimensions: callDimensions) == Int64(messages.map(\.count).reduce(0, +)))

        let logged = lines.entries
        #expect(logged.contains { $0.message == "sctp link connected" && $0.metadata["conduit.transport"] == "sctp+udp" })
        #expect(logged.contains { $0.message == "sctp link accepted" })
        #expect(logged.filter { $0.message == "sctp link closed" }.count == 2)
        #expect(logged.contains { $0.message == "call connected" && $0.metadata["conduit.transport"] == "sctp+udp" && $0.metadata["conduit.peer"] == "alice" })
    }
}
#endif

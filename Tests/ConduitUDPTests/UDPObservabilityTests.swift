import Conduit
import ConduitCore
import ConduitImpairment
import ConduitNetworkTestSupport
import ConduitUDP
import ConduitLogCapture
import Logging
import MetricsTestKit
import Synchronization
import Testing

extension UDPTransportTests {
    /// What a call over lossy UDP reports when the host gives the runtime and the UDP transport
    /// a logger and a metrics factory: the links' lifecycle, the reliability engine's repairs and
    /// the datagrams the transport carried, with `transport` = `udp`.
    @Suite("Logging and metrics over UDP", .timeLimit(.minutes(2)))
    struct UDPObservabilityTests {
        @Test("retransmissions, losses, links and datagrams are counted; link lifecycle is logged")
        func lossyCallIsObserved() async throws {
            let logs = LogCapture()
            let metrics = TestMetrics()
            let logger = logs.logger()
            var configuration = ConduitConfiguration()
            configuration.rateLimit = .unlimited
            configuration.reassembly.incompleteTimeout = .seconds(3_600)
            configuration.queueDelayOn = .seconds(3_600)
            let call = try await ImpairedCall.connect(
                scheme: "udp", transport: UDPTransport(logger: logger, metricsFactory: metrics), configuration: configuration,
                impairment: .harsh(seed: 43), observability: ConduitObservability(logger: logger, metricsFactory: metrics)
            )
            var random = SeededRandom(seed: 43)
            let messages = (0..<60).map { _ in random.bytes(max(1, random.logUniformSize(max: 16_384))) }
            let received = try await call.transferReliably(on: 140, messages)
            #expect(received.map(\.bytes) == messages)
            await call.end()

            let udp = [("transport", "udp")]
            let callDimensions = udp + [("kind", "call")]
            #expect(metrics.counterTotal(label: "conduit_messages_sent_total", dimensions: callDimensions) == Int64(messages.count))
            #expect(metrics.counterTotal(label: "conduit_messages_received_total", dimensions: callDimensions) == Int64(messages.count))
            #expect(metrics.counterTotal(label: "conduit_bytes_received_total", dimensions: callDimensions) == Int64(messages.map(\.count).reduce(0, +)))
            // 10 % loss each way: the engine repaired, and said so.
            #expect(metrics.counterTotal(label: "conduit_retransmissions_total", dimensions: udp) > 0)
            #expect(metrics.counterTotal(label: "conduit_packets_lost_total", dimensions: udp) > 0)
            #expect(try metrics.expectGauge("conduit_link_rtt_seconds", udp).lastValue ?? 0 > 0)
            // The path's other figures, as `linkStatistics` gives them on demand.
            #expect(try metrics.expectGauge("conduit_link_min_rtt_seconds", udp).lastValue ?? 0 > 0)
            #expect(try metrics.expectGauge("conduit_link_congestion_window_bytes", udp).lastValue ?? 0 > 0)
            #expect(try metrics.expectGauge("conduit_link_pacing_rate_bytes_per_second", udp).lastValue ?? 0 > 0)
            #expect(try metrics.expectGauge("conduit_link_mtu_bytes", udp).lastValue ?? 0 >= 1_200)
            _ = try metrics.expectGauge("conduit_link_rtt_variation_seconds", udp)

            // The transport's own counters, added when each link ended.
            try await waitUntilEnded(logs, links: 2)
            #expect(metrics.counterTotal(label: "conduit_transport_links_total", dimensions: udp + [("role", "client")]) == 1)
            #expect(metrics.counterTotal(label: "conduit_transport_links_total", dimensions: udp + [("role", "server")]) == 1)
            let datagramsSent = metrics.counterTotal(label: "conduit_transport_datagrams_sent_total", dimensions: udp)
            let bytesSent = metrics.counterTotal(label: "conduit_transport_bytes_sent_total", dimensions: udp)
            #expect(datagramsSent > Int64(messages.count))
            #expect(bytesSent > Int64(messages.map(\.count).reduce(0, +)))
            // Loss happens in the proxy, not in the sockets: fewer arrive than left.
            #expect(metrics.counterTotal(label: "conduit_transport_datagrams_received_total", dimensions: udp) < datagramsSent)

            let entries = logs.entries
            #expect(entries.contains { $0.message == "udp link connected" && $0.metadata["conduit.transport"] == "udp" })
            #expect(entries.contains { $0.message == "udp link accepted" && $0.metadata["conduit.remote"]?.hasPrefix("udp://127.0.0.1:") == true })
            #expect(entries.contains { $0.message == "call connected" && $0.metadata["conduit.transport"] == "udp" && $0.metadata["conduit.peer"] == "bob" })
            #expect(entries.contains { $0.message.hasPrefix("reliable link") && $0.metadata["conduit.framesRetransmitted"] != "0" })
            // The side that hung up logs its link's end too (its close, not the peer's).
            #expect(entries.contains { $0.message == "reliable link closed" && $0.metadata["conduit.reason"] == "closed" })
        }

        private func waitUntilEnded(_ logs: LogCapture, links: Int) async throws {
            let deadline = ContinuousClock.now + .seconds(10)
            while logs.entries.filter({ $0.message == "udp link ended" }).count < links {
                guard ContinuousClock.now < deadline else {
                    Issue.record("only \(logs.entries.filter { $0.message == "udp link ended" }.count) of \(links) UDP links reported their end")
                    return
                }
                try await Task.sleep(for: .milliseconds(5))
            }
        }
    }
}

import CoreMetrics
import Logging

/// What the UDP transport reports, created once per ``UDPTransport`` (its counters too): links
/// established and ended at `debug`, each link's traffic and drops added to the counters when it
/// ends (the link counts in its statistics meanwhile, never per datagram here).
///
/// Metric labels, each with the dimension `transport` = `udp`:
/// - `conduit_transport_links_total` with `role` (`client`, `server`): links established.
/// - `conduit_transport_datagrams_sent_total`, `conduit_transport_datagrams_received_total`.
/// - `conduit_transport_bytes_sent_total`, `conduit_transport_bytes_received_total`: UDP payload
///   bytes (RTP headers and SRTP tags excluded both ways, as ``UDPLinkStatistics``).
/// - `conduit_drops_total` with `kind` = `transport` and `reason` (`queue_full`, `malformed`,
///   `stranger`, `srtp`, `send_error`).
/// - `conduit_drops_total` with `kind` = `handshake`, `reason` = `overload`: HELLOs a listener
///   left unanswered while behind its socket.
final class UDPObserver: Sendable {
    let logger: Logger
    private let counters: [Counter]
    private let clientLinks: Counter?
    private let serverLinks: Counter?
    private let handshakesShed: Counter?

    init(logger: Logger, metricsFactory: any MetricsFactory) {
        var logger = logger
        logger[metadataKey: "conduit.transport"] = "udp"
        self.logger = logger
        guard !(metricsFactory is NOOPMetricsHandler) else {
            counters = []
            clientLinks = nil
            serverLinks = nil
            handshakesShed = nil
            return
        }
        let dimensions = [("transport", "udp")]
        let drops = dimensions + [("kind", "transport")]
        counters = [
            Counter(label: "conduit_transport_datagrams_sent_total", dimensions: dimensions, factory: metricsFactory),
            Counter(label: "conduit_transport_bytes_sent_total", dimensions: dimensions, factory: metricsFactory),
            Counter(label: "conduit_transport_datagrams_received_total", dimensions: dimensions, factory: metricsFactory),
            Counter(label: "conduit_transport_bytes_received_total", dimensions: dimensions, factory: metricsFactory),
            Counter(label: "conduit_drops_total", dimensions: drops + [("reason", "queue_full")], factory: metricsFactory),
            Counter(label: "conduit_drops_total", dimensions: drops + [("reason", "malformed")], factory: metricsFactory),
            Counter(label: "conduit_drops_total", dimensions: drops + [("reason", "stranger")], factory: metricsFactory),
            Counter(label: "conduit_drops_total", dimensions: drops + [("reason", "srtp")], factory: metricsFactory),
            Counter(label: "conduit_drops_total", dimensions: drops + [("reason", "send_error")], factory: metricsFactory),
        ]
        clientLinks = Counter(label: "conduit_transport_links_total", dimensions: dimensions + [("role", "client")], factory: metricsFactory)
        serverLinks = Counter(label: "conduit_transport_links_total", dimensions: dimensions + [("role", "server")], factory: metricsFactory)
        handshakesShed = Counter(label: "conduit_drops_total", dimensions: dimensions + [("kind", "handshake"), ("reason", "overload")], factory: metricsFactory)
    }

    /// A listener left a handshake unanswered: it was behind its socket.
    func handshakeShed() { handshakesShed?.increment() }

    /// A link completed its handshake.
    func linkEstablished(remote: String, isClient: Bool) {
        (isClient ? clientLinks : serverLinks)?.increment()
        logger.debug(isClient ? "udp link connected" : "udp link accepted", metadata: ["conduit.remote": "\(remote)"])
    }

    /// A link ended (closed here, or the peer said bye): its totals go to the counters.
    func linkEnded(remote: String, statistics: UDPLinkStatistics, reason: String) {
        let values = [
            statistics.datagramsSent, statistics.bytesSent, statistics.datagramsReceived, statistics.bytesReceived,
            statistics.droppedQueueFull, statistics.droppedMalformed, statistics.droppedStranger, statistics.droppedSRTP,
            statistics.sendErrors,
        ]
        for (counter, value) in zip(counters, values) where value > 0 { counter.increment(by: Int64(value)) }
        logger.debug(
            "udp link ended",
            metadata: [
                "conduit.remote": "\(remote)", "conduit.reason": "\(reason)",
                "conduit.datagramsSent": "\(statistics.datagramsSent)", "conduit.datagramsReceived": "\(statistics.datagramsReceived)",
                "conduit.dropped": "\(statistics.droppedQueueFull + statistics.droppedMalformed + statistics.droppedStranger + statistics.droppedSRTP)",
            ]
        )
    }
}

#if SCTP
import CoreMetrics
import Logging

/// What the SCTP-over-UDP transport reports, created once per ``SCTPTransport`` (its counters
/// too): links connected, accepted and closed at `debug`, and each association's totals added to
/// the counters when its link closes (the association counts meanwhile, never per message here).
///
/// Metric labels, each with the dimension `transport` = `sctp+udp`:
/// - `conduit_transport_links_total` with `role` (`client`, `server`).
/// - `conduit_transport_packets_sent_total`, `conduit_transport_packets_received_total`: SCTP
///   packets (UDP datagrams).
/// - `conduit_transport_messages_sent_total`, `conduit_transport_messages_received_total`.
/// - `conduit_drops_total` with `kind` = `transport` and `reason` (`checksum`, `no_channel`,
///   `dcep`, `ppid`, `oversize`, `abandoned`).
final class SCTPObserver: Sendable {
    let logger: Logger
    private let counters: [Counter]
    private let clientLinks: Counter?
    private let serverLinks: Counter?

    init(logger: Logger, metricsFactory: any MetricsFactory) {
        var logger = logger
        logger[metadataKey: "conduit.transport"] = "\(SCTPOptions.scheme)"
        self.logger = logger
        guard !(metricsFactory is NOOPMetricsHandler) else {
            counters = []
            clientLinks = nil
            serverLinks = nil
            return
        }
        let dimensions = [("transport", SCTPOptions.scheme)]
        let drops = dimensions + [("kind", "transport")]
        let names = [
            "conduit_transport_packets_sent_total", "conduit_transport_packets_received_total",
            "conduit_transport_messages_sent_total", "conduit_transport_messages_received_total",
        ]
        let reasons = ["checksum", "no_channel", "dcep", "ppid", "oversize", "abandoned"]
        counters = names.map { Counter(label: $0, dimensions: dimensions, factory: metricsFactory) }
            + reasons.map { Counter(label: "conduit_drops_total", dimensions: drops + [("reason", $0)], factory: metricsFactory) }
        clientLinks = Counter(label: "conduit_transport_links_total", dimensions: dimensions + [("role", "client")], factory: metricsFactory)
        serverLinks = Counter(label: "conduit_transport_links_total", dimensions: dimensions + [("role", "server")], factory: metricsFactory)
    }

    /// A Conduit link is up over a new association.
    func linkEstablished(remote: String, isClient: Bool) {
        (isClient ? clientLinks : serverLinks)?.increment()
        logger.debug(isClient ? "sctp link connected" : "sctp link accepted", metadata: ["conduit.remote": "\(remote)"])
    }

    /// A link closed: its association's totals go to the counters.
    func linkClosed(remote: String, statistics: SCTPAssociationStatistics) {
        let values = [
            statistics.packetsSent, statistics.packetsReceived, statistics.messagesSent, statistics.messagesReceived,
            statistics.droppedChecksum, statistics.droppedNoChannel, statistics.droppedDCEP, statistics.droppedPPID,
            statistics.droppedOversize, statistics.sendsAbandoned,
        ]
        for (counter, value) in zip(counters, values) where value > 0 { counter.increment(by: Int64(value)) }
        logger.debug(
            "sctp link closed",
            metadata: [
                "conduit.remote": "\(remote)",
                "conduit.packetsSent": "\(statistics.packetsSent)", "conduit.packetsReceived": "\(statistics.packetsReceived)",
                "conduit.messagesSent": "\(statistics.messagesSent)", "conduit.messagesReceived": "\(statistics.messagesReceived)",
                "conduit.droppedChecksum": "\(statistics.droppedChecksum)",
            ]
        )
    }
}
#endif

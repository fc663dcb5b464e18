import ConduitCore
import ConduitARQ
import CoreMetrics
import Logging

/// What a ``ReliableTransportLink`` reports: its end at `debug` ("closed" when closed from
/// above, "ended" with the reason when the peer closed it, writing failed or it idled out), and
/// its engine's counters as metrics, exported as deltas in batches (each pump round and at the
/// end), never per packet.
///
/// Metric labels, each with the dimension `transport` (the URL scheme):
/// - `conduit_retransmissions_total`: frames sent again.
/// - `conduit_packets_lost_total`: packets declared lost.
/// - `conduit_spurious_retransmissions_total`: packets declared lost that the peer acknowledged
///   after all (reordering, not loss).
/// - `conduit_frames_abandoned_total`: frames given up on (`maxRetransmits`, lifetime).
/// - `conduit_drops_total` with `kind` `link` and `reason` `duplicate`, `malformed` or
///   `over_window`: packets and frames the engine refused on receipt.
/// - `conduit_frames_unacknowledged_at_close_total`: frames still unacknowledged when the link
///   closed or ended (also logged at `warning` when nobody above was told of them).
/// - `conduit_link_rtt_seconds` (gauge): the smoothed round-trip time.
/// - `conduit_link_min_rtt_seconds`, `conduit_link_rtt_variation_seconds` (gauges): the lowest
///   round-trip time seen and the variation of its samples.
/// - `conduit_link_bytes_in_flight` (gauge): bytes sent and not yet acknowledged.
/// - `conduit_link_congestion_window_bytes`, `conduit_link_pacing_rate_bytes_per_second`,
///   `conduit_link_mtu_bytes` (gauges): the congestion controller's window and pacing rate, and
///   the datagram size.
struct ARQEngineObserver {
    var logger: Logger
    private let counters: [Counter]
    private let rtt: Gauge?
    private let unacknowledgedAtClose: Counter?
    private let inFlight: Gauge?
    /// Minimum RTT, RTT variation, congestion window, pacing rate, MTU, in that order.
    private let pathGauges: [Gauge]
    private var exported: [Int]

    init(logger: Logger, metricsFactory: any MetricsFactory, transport: String, remote: String) {
        var logger = logger
        logger[metadataKey: "conduit.transport"] = "\(transport)"
        logger[metadataKey: "conduit.remote"] = "\(remote)"
        self.logger = logger
        guard !(metricsFactory is NOOPMetricsHandler) else {
            counters = []
            unacknowledgedAtClose = nil
            rtt = nil
            inFlight = nil
            pathGauges = []
            exported = []
            return
        }
        let dimensions = [("transport", transport)]
        let drops = dimensions + [("kind", "link")]
        counters = [
            Counter(label: "conduit_retransmissions_total", dimensions: dimensions, factory: metricsFactory),
            Counter(label: "conduit_packets_lost_total", dimensions: dimensions, factory: metricsFactory),
            Counter(label: "conduit_frames_abandoned_total", dimensions: dimensions, factory: metricsFactory),
            Counter(label: "conduit_drops_total", dimensions: drops + [("reason", "duplicate")], factory: metricsFactory),
            Counter(label: "conduit_drops_total", dimensions: drops + [("reason", "malformed")], factory: metricsFactory),
            Counter(label: "conduit_drops_total", dimensions: drops + [("reason", "over_window")], factory: metricsFactory),
            Counter(label: "conduit_spurious_retransmissions_total", dimensions: dimensions, factory: metricsFactory),
            Counter(label: "conduit_drops_total", dimensions: drops + [("reason", "part_refused")], factory: metricsFactory),
        ]
        unacknowledgedAtClose = Counter(label: "conduit_frames_unacknowledged_at_close_total", dimensions: dimensions, factory: metricsFactory)
        rtt = Gauge(label: "conduit_link_rtt_seconds", dimensions: dimensions, factory: metricsFactory)
        inFlight = Gauge(label: "conduit_link_bytes_in_flight", dimensions: dimensions, factory: metricsFactory)
        pathGauges = [
            "conduit_link_min_rtt_seconds", "conduit_link_rtt_variation_seconds", "conduit_link_congestion_window_bytes",
            "conduit_link_pacing_rate_bytes_per_second", "conduit_link_mtu_bytes",
        ].map { Gauge(label: $0, dimensions: dimensions, factory: metricsFactory) }
        exported = Array(repeating: 0, count: counters.count)
    }

    /// False with the no-op factory: nothing to export.
    var isCounting: Bool { !counters.isEmpty }

    /// Adds what changed since the last export to the counters and sets the gauges.
    mutating func export(_ statistics: ARQEngine.Statistics, pacingRate: Int, mtu: Int) {
        guard isCounting else { return }
        let now = [
            statistics.framesRetransmitted,
            statistics.packetsLost,
            statistics.framesAbandoned,
            statistics.duplicatePacketsSuppressed + statistics.duplicateFramesSuppressed,
            statistics.malformedPacketsDropped,
            statistics.framesDroppedOverWindow + statistics.framesDroppedOutsideChannelWindow + statistics.framesDroppedTooManyChannels,
            statistics.spuriousRetransmissions,
            statistics.framePartsRefused,
        ]
        for index in counters.indices where now[index] > exported[index] {
            counters[index].increment(by: Int64(now[index] - exported[index]))
        }
        exported = now
        rtt?.record(Self.seconds(statistics.smoothedRtt))
        inFlight?.record(statistics.bytesInFlight)
        // The minimum RTT is unknown until the first sample: its gauge is left unset until then.
        let path: [Double?] = [
            statistics.minRtt.map(Self.seconds), Self.seconds(statistics.rttVariation), Double(statistics.congestionWindow),
            Double(pacingRate), Double(mtu),
        ]
        for (gauge, value) in zip(pathGauges, path) { if let value { gauge.record(value) } }
    }

    private static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// The link's end, with what the engine had to repair.
    func logEnd(_ statistics: ARQEngine.Statistics, reason: String?) {
        let metadata: Logger.Metadata = [
            "conduit.reason": "\(reason ?? "closed")",
            "conduit.packetsSent": "\(statistics.packetsSent)",
            "conduit.packetsReceived": "\(statistics.packetsReceived)",
            "conduit.framesRetransmitted": "\(statistics.framesRetransmitted)",
            "conduit.packetsLost": "\(statistics.packetsLost)",
            "conduit.spuriousRetransmissions": "\(statistics.spuriousRetransmissions)",
            "conduit.framesAbandoned": "\(statistics.framesAbandoned)",
        ]
        // At debug either way: the call above logs its own end, with its reason, at info.
        logger.debug(reason == nil ? "reliable link closed" : "reliable link ended", metadata: metadata)
    }

    /// Frames the link held unacknowledged when it closed or ended: counted, and logged at
    /// `warning` unless a flush had already told the app (`told`), so none is lost unseen.
    func framesUnacknowledgedAtEnd(_ frames: Int, told: Bool) {
        guard frames > 0 else { return }
        unacknowledgedAtClose?.increment(by: Int64(frames))
        guard !told else { return }
        logger.warning(
            "reliable link ended with frames the peer never acknowledged (flush, or close, hang up or leave with a timeout, to be told)",
            metadata: ["conduit.framesUnacknowledged": "\(frames)"]
        )
    }
}

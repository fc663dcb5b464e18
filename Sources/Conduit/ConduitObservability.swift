public import CoreMetrics
public import Logging

/// Where the library logs and counts: a swift-log `Logger` and a swift-metrics `MetricsFactory`,
/// chosen by the host and passed down explicitly (the library never touches `LoggingSystem` or
/// `MetricsSystem`).
///
/// The default, ``disabled``, is silent: a logger whose handler drops everything and the no-op
/// metrics factory, so a runtime the host did not configure emits nothing and creates no metric.
///
/// ```swift
/// var runtime = ConduitRuntime(configuration: configuration)
/// runtime.observability = ConduitObservability(
///     logger: Logger(label: "com.example.app.conduit"),   // the host's handler, its level
///     metricsFactory: prometheusFactory                     // any MetricsFactory
/// )
/// ```
///
/// What it reports (see the README's "Logging and metrics"):
/// - Logs, at `info` for a call's or a conference's start and end, and at `debug` for handshakes,
///   data sessions opening and closing and queue-delay alerts, with the metadata keys in
///   ``MetadataKey``. Nothing is logged per message.
/// - Metrics, the names in ``MetricName``, with the dimensions `transport` (the URL scheme) and
///   `kind` (`call` or `conference`); drops also carry `reason`. Counters are created once per
///   call and fed from the call's statistics in batches (each time the pump has drained and at
///   the end), never per message.
public struct ConduitObservability: Sendable {
    /// Where lifecycle logs go. Its metadata is kept and extended with the keys in ``MetadataKey``.
    public var logger: Logger
    /// Where counters and meters are created.
    public var metricsFactory: any MetricsFactory

    /// Logs through `logger` and counts through `metricsFactory` (by default nowhere).
    public init(logger: Logger, metricsFactory: any MetricsFactory = NOOPMetricsHandler.instance) {
        self.logger = logger
        self.metricsFactory = metricsFactory
    }

    /// Counts through `metricsFactory` and logs nowhere.
    public init(metricsFactory: any MetricsFactory) {
        self.init(logger: Self.silentLogger, metricsFactory: metricsFactory)
    }

    /// Logs nothing and counts nothing: the default of every ``ConduitRuntime``.
    public static var disabled: ConduitObservability { ConduitObservability(logger: silentLogger) }

    /// A logger whose handler drops everything.
    static var silentLogger: Logger { Logger(label: "conduit", factory: { _ in SwiftLogNoOpLogHandler() }) }

    /// False for the no-op factory: then no statistics are gathered for export at all.
    var isCounting: Bool { !(metricsFactory is NOOPMetricsHandler) }

    /// The logger metadata keys the library sets.
    public enum MetadataKey {
        /// A random identifier of one call or conference, stable for its lifetime (8 hex digits).
        public static let call = "conduit.call"
        /// The remote peer of a call; this side's peer in a conference.
        public static let peer = "conduit.peer"
        /// This side's peer in a call.
        public static let localPeer = "conduit.local"
        /// The room of a conference.
        public static let room = "conduit.room"
        /// The stream ID of a data session.
        public static let stream = "conduit.stream"
        /// The subgroup of a data session, when it has one.
        public static let subgroup = "conduit.subgroup"
        /// The session type (`reliable-message`, ...).
        public static let sessionType = "conduit.type"
        /// The transport's URL scheme (`loopback`, `udp`, `sctp+udp`, ...).
        public static let transport = "conduit.transport"
        /// The link's description of the remote end (an address, a loopback name).
        public static let remote = "conduit.remote"
        /// Why something ended or failed.
        public static let reason = "conduit.reason"
    }

    /// The metric labels the library creates (stable; see the README's table).
    public enum MetricName {
        /// Counter: calls and conferences established. Dimensions `transport`, `kind`.
        public static let sessionsEstablished = "conduit_calls_total"
        /// Meter: calls and conferences connected now. Dimensions `transport`, `kind`.
        public static let sessionsActive = "conduit_calls_active"
        /// Counter: payload bytes sent in data frames. Dimensions `transport`, `kind`.
        public static let bytesSent = "conduit_bytes_sent_total"
        /// Counter: payload bytes delivered to the app. Dimensions `transport`, `kind`.
        public static let bytesReceived = "conduit_bytes_received_total"
        /// Counter: messages whose last fragment was sent. Dimensions `transport`, `kind`.
        public static let messagesSent = "conduit_messages_sent_total"
        /// Counter: messages delivered to the app. Dimensions `transport`, `kind`.
        public static let messagesReceived = "conduit_messages_received_total"
        /// Counter: datagram bytes written to the link (frames, headers included).
        public static let linkBytesSent = "conduit_link_bytes_sent_total"
        /// Counter: datagram bytes read from the link (frames, headers included).
        public static let linkBytesReceived = "conduit_link_bytes_received_total"
        /// Counter: frames and datagrams dropped on receipt. Dimensions `transport`, `kind`,
        /// `reason` (`malformed`, `unsupported`, `pending_overflow`, `out_of_state`,
        /// `unknown_subgroup`, `closed_session`, `unknown_sender`, `wrong_type`, `reassembly`, `events`: events
        /// the app did not read in time, as ``Call/droppedEventCount``).
        public static let drops = "conduit_drops_total"
        /// Counter: times a session's queueing delay crossed the `tooLongQueuedData` threshold.
        public static let queueDelayAlerts = "conduit_queue_delay_alerts_total"
        /// Timer: the longest queueing delay among a call's sessions, sampled once per pump round
        /// while something is queued. Dimensions `transport`, `kind`.
        public static let queueDelay = "conduit_queue_delay"
    }
}

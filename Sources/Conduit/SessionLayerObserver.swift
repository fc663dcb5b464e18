import ConduitCore
import ConduitRooms
import CoreMetrics
import Logging

/// What an engine (call or conference) reports, built once per engine: its logger with the
/// engine's metadata, and its metric handles. Statistics are exported as deltas against what
/// was exported before, in batches; with the no-op factory nothing is gathered at all.
struct SessionLayerObserver {
    /// The counters one snapshot feeds, in ``Snapshot``'s order.
    struct Snapshot: Equatable {
        var bytesSent = 0
        var bytesReceived = 0
        var messagesSent = 0
        var messagesReceived = 0
        var linkBytesSent = 0
        var linkBytesReceived = 0
        var queueDelayAlerts = 0
        var drops = [Int](repeating: 0, count: DropReason.allCases.count)
    }

    enum DropReason: String, CaseIterable {
        case malformed, unsupported, pendingOverflow = "pending_overflow", outOfState = "out_of_state"
        case unknownSubgroup = "unknown_subgroup", closedSession = "closed_session", unknownSender = "unknown_sender"
        case wrongType = "wrong_type", reassembly
        /// Call or conference events the app did not read in time (``Call/droppedEventCount``).
        case events
    }

    enum Kind: String {
        case call, conference
    }

    var logger: Logger
    let isCounting: Bool
    private let counters: [Counter]
    private let drops: [Counter]
    private let established: Counter?
    private let active: Meter?
    private let queueDelay: CoreMetrics.Timer?
    private var exported = Snapshot()
    private var isActive = false

    init(_ observability: ConduitObservability, kind: Kind, transport: String, link: any TransportLink) {
        var logger = observability.logger
        logger[metadataKey: ConduitObservability.MetadataKey.call] = "\(Self.makeID())"
        logger[metadataKey: ConduitObservability.MetadataKey.transport] = "\(transport)"
        logger[metadataKey: ConduitObservability.MetadataKey.remote] = "\(link.remoteDescription)"
        self.logger = logger
        isCounting = observability.isCounting
        guard isCounting else {
            counters = []
            drops = []
            established = nil
            active = nil
            queueDelay = nil
            return
        }
        let factory = observability.metricsFactory
        let dimensions = [("transport", transport), ("kind", kind.rawValue)]
        typealias Name = ConduitObservability.MetricName
        counters = [
            Name.bytesSent, Name.bytesReceived, Name.messagesSent, Name.messagesReceived,
            Name.linkBytesSent, Name.linkBytesReceived, Name.queueDelayAlerts,
        ].map { Counter(label: $0, dimensions: dimensions, factory: factory) }
        drops = DropReason.allCases.map { Counter(label: Name.drops, dimensions: dimensions + [("reason", $0.rawValue)], factory: factory) }
        established = Counter(label: Name.sessionsEstablished, dimensions: dimensions, factory: factory)
        active = Meter(label: Name.sessionsActive, dimensions: dimensions, factory: factory)
        queueDelay = CoreMetrics.Timer(label: Name.queueDelay, dimensions: dimensions, factory: factory)
    }

    /// Eight hex digits, random: tells one call's log lines from another's.
    private static func makeID() -> String {
        let value = UInt32.random(in: .min ... .max)
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 8 - digits.count) + digits
    }

    /// The call or conference is established.
    mutating func connected() {
        guard isCounting, !isActive else { return }
        isActive = true
        established?.increment()
        active?.increment()
    }

    /// The call or conference ended (after its last export).
    mutating func ended() {
        guard isActive else { return }
        isActive = false
        active?.decrement()
    }

    /// Records one sample of the longest queueing delay (while something is queued).
    func recordQueueDelay(_ delay: Duration) {
        guard let queueDelay, delay > .zero else { return }
        let (seconds, attoseconds) = delay.components
        queueDelay.recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    /// Adds what changed since the last export to the counters.
    mutating func export(_ snapshot: Snapshot) {
        guard isCounting, snapshot != exported else { return }
        let now = [
            snapshot.bytesSent, snapshot.bytesReceived, snapshot.messagesSent, snapshot.messagesReceived,
            snapshot.linkBytesSent, snapshot.linkBytesReceived, snapshot.queueDelayAlerts,
        ]
        let before = [
            exported.bytesSent, exported.bytesReceived, exported.messagesSent, exported.messagesReceived,
            exported.linkBytesSent, exported.linkBytesReceived, exported.queueDelayAlerts,
        ]
        for index in counters.indices where now[index] > before[index] {
            counters[index].increment(by: Int64(now[index] - before[index]))
        }
        for index in drops.indices where snapshot.drops[index] > exported.drops[index] {
            drops[index].increment(by: Int64(snapshot.drops[index] - exported.drops[index]))
        }
        exported = snapshot
    }

    /// Metadata for one data session's log lines.
    static func metadata(_ key: SessionKey, type: SessionType? = nil) -> Logger.Metadata {
        var metadata: Logger.Metadata = [ConduitObservability.MetadataKey.stream: "\(key.streamID.rawValue)"]
        if let subgroup = key.subgroup { metadata[ConduitObservability.MetadataKey.subgroup] = "\(subgroup)" }
        if let type { metadata[ConduitObservability.MetadataKey.sessionType] = "\(type.name)" }
        return metadata
    }
}

extension SessionLayerObserver.Snapshot {
    /// A call's counters.
    init(_ statistics: CallStatistics, linkBytesSent: Int, linkBytesReceived: Int, queueDelayAlerts: Int, eventsDropped: Int) {
        bytesSent = statistics.bytesSent
        bytesReceived = statistics.bytesDelivered
        messagesSent = statistics.messagesSent
        messagesReceived = statistics.messagesDelivered
        self.linkBytesSent = linkBytesSent
        self.linkBytesReceived = linkBytesReceived
        self.queueDelayAlerts = queueDelayAlerts
        let reassembly = statistics.reassembly
        drops = [
            statistics.malformedDatagrams, statistics.droppedUnsupported, statistics.droppedPendingOverflow,
            statistics.droppedOutOfState, statistics.droppedUnknownSubgroup, statistics.droppedClosedSession, 0,
            statistics.droppedWrongType, reassembly.messagesDroppedOverCapacity + reassembly.messagesDroppedTimedOut + reassembly.messagesEvicted,
            eventsDropped,
        ]
    }

    /// A conference's counters.
    init(_ statistics: ConferenceStatistics, linkBytesSent: Int, linkBytesReceived: Int, queueDelayAlerts: Int, eventsDropped: Int) {
        messagesSent = statistics.messagesSent
        messagesReceived = statistics.messagesDelivered
        self.linkBytesSent = linkBytesSent
        self.linkBytesReceived = linkBytesReceived
        self.queueDelayAlerts = queueDelayAlerts
        drops = [
            statistics.malformedDatagrams, statistics.droppedUnsupported, statistics.droppedPendingOverflow,
            statistics.droppedOutOfState, statistics.droppedUnknownSubgroup, statistics.droppedClosedSession,
            statistics.droppedUnknownSender, statistics.droppedWrongType, 0, eventsDropped,
        ]
    }
}

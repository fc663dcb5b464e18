/// The knobs of one call's data sessions. Every queue and buffer has a cap here.
public struct CallConfiguration: Sendable, Hashable {
    /// Payload bytes per data frame: the transport's datagram size less ``DataFrameHeader/size``.
    public var fragmentSize: Int
    /// Per-session send rate cap.
    public var rateLimit: RateLimit
    /// Per-session send queue cap, in bytes. One send is always admitted into an empty queue, so a
    /// cap below 4 MiB never makes a legal send impossible.
    public var maxQueuedBytesPerSession: Int
    /// When `tooLongQueuedData(enabled: true)` and `(enabled: false)` fire.
    public var queueDelayOn: Duration
    /// The queueing delay at or below which `tooLongQueuedData(enabled: false)` fires.
    public var queueDelayOff: Duration
    /// Data received for an announced stream before the app makes its inbound session is held up to
    /// this many bytes per stream. Past it, unreliable data is dropped and counted; reliable data is
    /// held and the machine reports ``CallMachine/isHoldingBeyondLimit`` (stop reading the link).
    public var maxPendingInboundBytes: Int
    /// The same across every announced stream together: past it, unreliable data is dropped and
    /// counted, and reliable data makes the machine report ``CallMachine/isHoldingBeyondLimit``.
    /// A peer announcing many streams the app never answers cannot grow memory without bound.
    public var maxPendingInboundBytesTotal: Int
    /// Reassembly caps per peer.
    public var reassembly: Reassembler.Configuration
    /// Whether this side accepts data sessions at all (`isDataSessionSupported`).
    public var dataSessionsSupported: Bool

    /// Makes a configuration; the defaults are those of `ConduitConfiguration` in `Conduit`.
    public init(
        fragmentSize: Int = 1_200,
        rateLimit: RateLimit = .default,
        maxQueuedBytesPerSession: Int = 8 * 1024 * 1024,
        queueDelayOn: Duration = .milliseconds(500),
        queueDelayOff: Duration = .milliseconds(100),
        maxPendingInboundBytes: Int = 1024 * 1024,
        maxPendingInboundBytesTotal: Int = 8 * 1024 * 1024,
        reassembly: Reassembler.Configuration = .init(),
        dataSessionsSupported: Bool = true
    ) {
        self.fragmentSize = fragmentSize
        self.rateLimit = rateLimit
        self.maxQueuedBytesPerSession = maxQueuedBytesPerSession
        self.queueDelayOn = queueDelayOn
        self.queueDelayOff = queueDelayOff
        self.maxPendingInboundBytes = maxPendingInboundBytes
        self.maxPendingInboundBytesTotal = maxPendingInboundBytesTotal
        self.reassembly = reassembly
        self.dataSessionsSupported = dataSessionsSupported
    }
}

/// Counters for everything the call refused or dropped.
public struct CallStatistics: Sendable, Hashable {
    /// Datagrams received on the link.
    public var datagramsReceived = 0
    /// Data frames among them.
    public var dataFramesReceived = 0
    /// Datagrams the parser refused (truncated, wrong version, oversize claims, ...).
    public var malformedDatagrams = 0
    /// Data for a stream this side declared unsupported.
    public var droppedUnsupported = 0
    /// Unreliable data for an announced stream beyond ``CallConfiguration/maxPendingInboundBytes``.
    public var droppedPendingOverflow = 0
    /// Frames that arrived before the handshake or after the call ended.
    public var droppedOutOfState = 0
    /// Frames naming a subgroup ID the peer never announced (or past the subgroup cap).
    public var droppedUnknownSubgroup = 0
    /// Data for an inbound session the app already closed or that the sender closed.
    public var droppedClosedSession = 0
    /// Data of another type than its stream was announced with.
    public var droppedWrongType = 0
    /// Whole messages delivered to the app.
    public var messagesDelivered = 0
    /// Bytes-type fragments delivered to the app.
    public var fragmentsDelivered = 0
    /// Payload bytes of the messages and fragments handed to the app (``InboundDelivery`` bytes).
    public var bytesDelivered = 0
    /// Messages the app sent.
    public var messagesSent = 0
    /// Payload bytes that left in data frames (every fragment's payload, frame headers excluded).
    public var bytesSent = 0
    /// Frames written to the link.
    public var framesSent = 0
    /// What the reassembler completed and refused.
    public var reassembly = Reassembler.Statistics()
    /// All counters at zero.
    public init() {}
}

/// What the call machine tells its driver.
public enum CallEvent: Sendable, Hashable {
    /// Both sides said hello.
    case connected(peer: PeerID, peerSupportsDataSessions: Bool)
    /// The call ended, with why. The last event.
    case disconnected(DisconnectReason)
    /// The peer created an outbound session (or data for an unknown stream began to flow).
    case dataSessionIncoming(SessionKey, SessionType)
    /// Data for an inbound session.
    case received(SessionKey, InboundDelivery)
    /// An outbound session closed.
    case outboundClosed(SessionKey, DataSessionCloseReason)
    /// An inbound session closed.
    case inboundClosed(SessionKey, DataSessionCloseReason)
    /// An outbound session's queueing delay crossed a threshold.
    case tooLongQueuedData(SessionKey, enabled: Bool)
    /// A session's send queue has room again (wake senders that waited).
    case sendQueueHasRoom(SessionKey)
}

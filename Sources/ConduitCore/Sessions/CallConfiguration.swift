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
    public var queueDelayOff: Duration
    /// Data received for an announced stream before the app makes its inbound session is held up to
    /// this many bytes per stream; past it, the data is dropped and counted.
    public var maxPendingInboundBytes: Int
    public var reassembly: Reassembler.Configuration
    /// Whether this side accepts data sessions at all (`isDataSessionSupported`).
    public var dataSessionsSupported: Bool

    public init(
        fragmentSize: Int = 1_200,
        rateLimit: RateLimit = .default,
        maxQueuedBytesPerSession: Int = 8 * 1024 * 1024,
        queueDelayOn: Duration = .milliseconds(500),
        queueDelayOff: Duration = .milliseconds(100),
        maxPendingInboundBytes: Int = 1024 * 1024,
        reassembly: Reassembler.Configuration = .init(),
        dataSessionsSupported: Bool = true
    ) {
        self.fragmentSize = fragmentSize
        self.rateLimit = rateLimit
        self.maxQueuedBytesPerSession = maxQueuedBytesPerSession
        self.queueDelayOn = queueDelayOn
        self.queueDelayOff = queueDelayOff
        self.maxPendingInboundBytes = maxPendingInboundBytes
        self.reassembly = reassembly
        self.dataSessionsSupported = dataSessionsSupported
    }
}

/// Counters for everything the call refused or dropped.
public struct CallStatistics: Sendable, Hashable {
    public var datagramsReceived = 0
    public var dataFramesReceived = 0
    /// Datagrams the parser refused (truncated, wrong version, oversize claims, ...).
    public var malformedDatagrams = 0
    /// Data for a stream this side declared unsupported.
    public var droppedUnsupported = 0
    /// Data for an announced stream beyond ``CallConfiguration/maxPendingInboundBytes``.
    public var droppedPendingOverflow = 0
    /// Frames that arrived before the handshake or after the call ended.
    public var droppedOutOfState = 0
    /// Frames naming a subgroup ID the peer never announced (or past the subgroup cap).
    public var droppedUnknownSubgroup = 0
    /// Data for an inbound session the app already closed or that the sender closed.
    public var droppedClosedSession = 0
    public var messagesDelivered = 0
    public var fragmentsDelivered = 0
    /// Payload bytes of the messages and fragments handed to the app (``InboundDelivery`` bytes).
    public var bytesDelivered = 0
    public var messagesSent = 0
    /// Payload bytes that left in data frames (every fragment's payload, frame headers excluded).
    public var bytesSent = 0
    public var framesSent = 0
    public var reassembly = Reassembler.Statistics()
    public init() {}
}

/// What the call machine tells its driver.
public enum CallEvent: Sendable, Hashable {
    /// Both sides said hello.
    case connected(peer: PeerID, peerSupportsDataSessions: Bool)
    case disconnected(DisconnectReason)
    /// The peer created an outbound session (or data for an unknown stream began to flow).
    case dataSessionIncoming(SessionKey, SessionType)
    case received(SessionKey, InboundDelivery)
    case outboundClosed(SessionKey, DataSessionCloseReason)
    case inboundClosed(SessionKey, DataSessionCloseReason)
    case tooLongQueuedData(SessionKey, enabled: Bool)
    /// A session's send queue has room again (wake senders that waited).
    case sendQueueHasRoom(SessionKey)
}

/// One outbound data session's counters and queue, on demand (compare W3C `RTCDataChannelStats`
/// and dcSCTP's per-stream metrics): what `OutboundDataSession.statistics` returns.
public struct OutboundDataSessionStatistics: Sendable, Hashable {
    /// Messages the app queued (sends accepted).
    public var messagesQueued = 0
    /// Messages handed to the link whole (their last fragment written).
    public var messagesSent = 0
    /// Payload bytes handed to the link.
    public var bytesSent = 0
    /// Bytes accepted and not yet handed to the link.
    public var queuedBytes = 0
    /// How long the oldest queued message has waited, or how long the queue takes to drain at the
    /// session's rate cap, whichever is longer (what `tooLongQueuedData` watches).
    public var queueingDelay: Duration = .zero
    /// Accepted messages discarded unsent because the session or its call ended abruptly.
    public var messagesDiscarded = 0

    /// Statistics with every counter at zero.
    public init() {}
}

/// One inbound data session's counters, on demand: what `InboundDataSession.statistics` returns.
/// They count from the stream's announcement, so data held before the app made the session counts.
public struct InboundDataSessionStatistics: Sendable, Hashable {
    /// Messages delivered (or held for the app); for a bytes session, fragments.
    public var messagesReceived = 0
    /// Payload bytes delivered (or held for the app).
    public var bytesReceived = 0
    /// Bytes held now because the app has not made the session yet.
    public var heldBytes = 0
    /// Unreliable data dropped because it arrived before the app made the session and past
    /// `maxPendingInboundBytes` (messages or fragments).
    public var droppedPendingOverflow = 0
    /// Data that arrived after the session closed.
    public var droppedAfterClose = 0
    /// Data of another type than the stream was announced with: in a room, a second sender that
    /// made the stream with another type (the receiver keeps one session per stream, of the type
    /// first announced; the sender is not told, as with a receiver that declined the stream).
    public var droppedWrongType = 0

    /// Statistics with every counter at zero.
    public init() {}
}

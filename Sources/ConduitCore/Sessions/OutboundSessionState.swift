import DequeModule

/// One outbound data session's send side: its queue, pacer and queue-delay hysteresis.
struct OutboundSessionState: Sendable {
    struct QueuedMessage: Sendable {
        var bytes: [UInt8]
        var fragmenter: Fragmenter
        var enqueuedAt: ConduitInstant
        /// Where it goes (the host's number; 0 for everyone in scope), fixed when it was queued.
        var destination: UInt16
    }

    let type: SessionType
    /// The session's subgroup's wire number (0: the main room).
    let subgroupID: UInt16
    /// Where new messages go (the host's number; 0 for everyone in scope).
    package var destination: UInt16 = 0
    /// How the link carries this session's data frames (its channel, its type's delivery).
    let tag: FrameTag
    var nextMessageID: UInt32 = 0
    /// Accepted messages thrown away unsent when the session closed abruptly (a flush reports them).
    var discardedMessages = 0
    var queue = Deque<QueuedMessage>()
    /// Bytes not yet emitted, across the queue.
    var queuedBytes = 0
    var pacer: Pacer
    var delayMonitor: QueueDelayMonitor
    var closeReason: DataSessionCloseReason?
    /// The app closed the session: no more sends; what was queued still goes out, then the close.
    var isClosing = false
    /// A sender found the queue full and waits for a `sendQueueHasRoom` event.
    var senderIsWaiting = false
    /// Messages whose last fragment went to the link, and their payload bytes.
    var messagesSent = 0
    var bytesSent = 0

    /// Fragments per scheduling round while backlogged (the priority's weight).
    let weight: Int

    init(type: SessionType, subgroupID: UInt16, configuration: CallConfiguration, options: OutboundSessionOptions, now: ConduitInstant, tag: FrameTag) {
        self.type = type
        self.subgroupID = subgroupID
        self.tag = tag
        self.weight = options.priority.weight
        self.pacer = Pacer(limit: options.rateLimit ?? configuration.rateLimit, now: now)
        self.delayMonitor = QueueDelayMonitor(onThreshold: configuration.queueDelayOn, offThreshold: configuration.queueDelayOff)
    }

    var isOpen: Bool { closeReason == nil }

    func statistics(now: ConduitInstant) -> OutboundDataSessionStatistics {
        var statistics = OutboundDataSessionStatistics()
        statistics.messagesQueued = Int(nextMessageID)
        statistics.messagesSent = messagesSent
        statistics.bytesSent = bytesSent
        statistics.queuedBytes = queuedBytes
        statistics.queueingDelay = queueingDelay(now: now)
        statistics.messagesDiscarded = discardedMessages
        return statistics
    }
    var acceptsSends: Bool { closeReason == nil && !isClosing }

    /// The queueing delay: how long the oldest message has waited, or how long the queue will take
    /// to drain at the capped rate, whichever is longer.
    func queueingDelay(now: ConduitInstant) -> Duration {
        guard let head = queue.first else { return .zero }
        return max(now - head.enqueuedAt, pacer.drainTime(of: queuedBytes))
    }
}

/// A frame waiting to be written, with how the link should carry it.
package struct TaggedFrame: Sendable {
    package var bytes: [UInt8]
    package var tag: FrameTag

    package init(_ bytes: [UInt8], tag: FrameTag = .neutral) {
        self.bytes = bytes
        self.tag = tag
    }
}

/// The outcome of offering a message to a session's queue.
public enum EnqueueResult: Sendable, Hashable {
    /// Queued under this message ID.
    case queued(messageID: UInt32)
    /// The queue is at its cap; try again after ``CallEvent/sendQueueHasRoom(_:)``.
    case queueFull
    /// Refused: too large, or the session is closed.
    case failed(ConduitError)
}

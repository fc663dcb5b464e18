package import DequeModule

/// One outbound data session's send side: its queue, pacer and queue-delay hysteresis.
package struct OutboundSessionState: Sendable {
    package struct QueuedMessage: Sendable {
        package var bytes: [UInt8]
        package var fragmenter: Fragmenter
        package var enqueuedAt: ConduitInstant

        package init(bytes: [UInt8], fragmenter: Fragmenter, enqueuedAt: ConduitInstant) {
            self.bytes = bytes
            self.fragmenter = fragmenter
            self.enqueuedAt = enqueuedAt
        }
    }

    package let type: SessionType
    package var nextMessageID: UInt32 = 0
    package var queue = Deque<QueuedMessage>()
    /// Bytes not yet emitted, across the queue.
    package var queuedBytes = 0
    package var pacer: Pacer
    package var delayMonitor: QueueDelayMonitor
    package var closeReason: DataSessionCloseReason?
    /// The app closed the session: no more sends; what was queued still goes out, then the close.
    package var isClosing = false
    /// A sender found the queue full and waits for a `sendQueueHasRoom` event.
    package var senderIsWaiting = false

    package init(type: SessionType, configuration: CallConfiguration, now: ConduitInstant) {
        self.type = type
        self.pacer = Pacer(limit: configuration.rateLimit, now: now)
        self.delayMonitor = QueueDelayMonitor(onThreshold: configuration.queueDelayOn, offThreshold: configuration.queueDelayOff)
    }

    package var isOpen: Bool { closeReason == nil }
    package var acceptsSends: Bool { closeReason == nil && !isClosing }

    /// The queueing delay: how long the oldest message has waited, or how long the queue will take
    /// to drain at the capped rate, whichever is longer.
    package func queueingDelay(now: ConduitInstant) -> Duration {
        guard let head = queue.first else { return .zero }
        return max(now - head.enqueuedAt, pacer.drainTime(of: queuedBytes))
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

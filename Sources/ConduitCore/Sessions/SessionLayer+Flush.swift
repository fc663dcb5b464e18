/// Where an outbound session stood when a flush began: the channel its frames go on, whether the
/// link must have them acknowledged, and the ID its next message will get (every message below
/// it counts for the flush).
package struct OutboundFlushMark: Sendable, Hashable {
    /// The link channel of the session's frames (``FrameTag/sessionChannel(stream:subgroupID:)``).
    package let channel: UInt32
    /// Reliable session types wait for acknowledgement; unreliable ones only for their queue.
    package let isReliable: Bool
    /// Messages with IDs below this were accepted before the flush.
    package let nextMessageID: UInt32
    /// Messages of the session discarded from its queue before the flush (an abrupt close).
    package let discardedBefore: Int
}

/// How far the messages accepted before a mark have got.
package struct OutboundFlushProgress: Sendable, Hashable {
    /// The mark asked about, or where the session stands now when none was given.
    package let mark: OutboundFlushMark
    /// Messages accepted before the mark still in the queue (not every fragment written).
    package let queued: Int
    /// Messages accepted before the mark discarded unsent since (an abrupt close).
    package let discarded: Int
}

/// What a flush and a graceful close ask of the send side: how far the messages accepted before
/// a point have left their session's queue, and how many were discarded instead.
extension SessionLayer {
    /// How far outbound session `key` has got with the messages accepted before `mark` (before
    /// now when nil), or nil if there is no such session.
    package func flushProgress(_ key: SessionKey, since mark: OutboundFlushMark?) -> OutboundFlushProgress? {
        guard let mark = mark ?? flushMark(key) else { return nil }
        return OutboundFlushProgress(mark: mark, queued: messagesQueued(key, before: mark), discarded: messagesDiscarded(key, since: mark))
    }

    /// Where outbound session `key` stands now, or nil if there is no such session.
    func flushMark(_ key: SessionKey) -> OutboundFlushMark? {
        guard let session = outbound[key] else { return nil }
        return OutboundFlushMark(
            channel: session.tag.channel, isReliable: session.type.isReliable,
            nextMessageID: session.nextMessageID, discardedBefore: session.discardedMessages
        )
    }

    /// Messages accepted before `mark` that are still in the queue (not every fragment written).
    func messagesQueued(_ key: SessionKey, before mark: OutboundFlushMark) -> Int {
        guard let session = outbound[key], let head = session.queue.first else { return 0 }
        // Message IDs are consecutive in the queue and wrap at 2^32.
        let ahead = mark.nextMessageID &- head.fragmenter.header.messageID
        guard ahead < 1 << 31 else { return 0 }
        return min(session.queue.count, Int(ahead))
    }

    /// Messages accepted before `mark` that were discarded from the queue since (an abrupt
    /// close): they will never be sent. A message discarded was accepted before any later mark.
    func messagesDiscarded(_ key: SessionKey, since mark: OutboundFlushMark) -> Int {
        guard let session = outbound[key] else { return 0 }
        return session.discardedMessages - mark.discardedBefore
    }
}

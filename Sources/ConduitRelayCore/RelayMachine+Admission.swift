import DequeModule
import ConduitCore
import ConduitRooms

/// Limits on links that have not joined yet: a join deadline pings do not extend, eviction of the
/// oldest waiting link when the pending table is full, the token size and the join rate. A link
/// proves itself only by joining; until then it holds a table entry and nothing more.
extension RelayMachine {
    /// Remembers the order links opened in; drops entries of links that joined or closed once
    /// they outnumber the waiting links, so the queue stays as large as the pending table.
    mutating func notePending(_ id: RelayConnectionID) {
        pendingOrder.append(id)
        if pendingOrder.count > 2 * max(pendingConnections, 16) {
            pendingOrder = Deque(pendingOrder.filter(isAwaitingJoin))
        }
    }

    func isAwaitingJoin(_ id: RelayConnectionID) -> Bool {
        if case .awaitingJoin? = connections[id]?.phase { return true }
        return false
    }

    /// Refuses and closes the link that has waited longest without joining. False if none waits
    /// (every pending link is being authorized, or the cap is zero).
    mutating func evictOldestPending(now: ConduitInstant) -> Bool {
        while let oldest = pendingOrder.popFirst() {
            guard isAwaitingJoin(oldest) else { continue }
            statistics.pendingEvicted += 1
            refuse(oldest, .notJoined, now: now)
            return true
        }
        return false
    }

    /// Links whose join deadline passed are refused (`notJoined`) and closed, pings or not.
    mutating func refuseLinksPastJoinDeadline(now: ConduitInstant) {
        let late = connections.filter { id, connection in
            guard case .awaitingJoin = connection.phase else { return false }
            return now - connection.openedAt >= configuration.joinTimeout
        }.keys.sorted()
        for id in late {
            statistics.joinDeadlinesMissed += 1
            refuse(id, .notJoined, now: now)
        }
    }

    /// The token size and join-rate limits, checked before a join goes to the driver to verify:
    /// false (the link refused and closing) if the join breaks one.
    mutating func mayAuthorizeJoin(_ id: RelayConnectionID, tokenBytes: Int, now: ConduitInstant) -> Bool {
        guard tokenBytes <= configuration.maxTokenBytes else {
            refuse(id, .tokenTooLarge, now: now)
            return false
        }
        guard joinLimiter.admit(now: now) else {
            statistics.joinsRateLimited += 1
            refuse(id, .joinRateLimited, now: now)
            return false
        }
        return true
    }

    /// A join that does not parse, on a link waiting to join, is refused at once: `tokenTooLarge`
    /// if its token length field claims more than the relay takes, else `malformed`. Returns
    /// false if the datagram is not such a join (the caller counts it as a malformed frame).
    mutating func refuseUnparsableJoin(_ id: RelayConnectionID, _ datagram: UnsafeRawBufferPointer, now: ConduitInstant) -> Bool {
        guard isAwaitingJoin(id), RoomControlFrame.isJoin(datagram) else { return false }
        let claimed = RoomControlFrame.claimedTokenLength(ofJoin: datagram) ?? 0
        refuse(id, claimed > configuration.maxTokenBytes ? .tokenTooLarge : .malformed, now: now)
        return true
    }
}

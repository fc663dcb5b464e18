import ConduitCore
import ConduitRooms

// Isolating a slow receiver ends what the relay sends it, not what it sent.
//
//   isolated ──► its queue is dropped, the reason (disconnect slowReceiver) is its last frame,
//     │          nothing more is queued for it; it holds nobody back
//     ├──► the driver closes its link after that frame, but reads the link to its end: what the
//     │    link accepted before (reliable links acknowledge on receipt, and backpressure may
//     │    have left it unread) is forwarded as any member's frames are, under the same backpressure
//     └──► the link ends ──► the member leaves the room, after every frame it sent
//          (a reader the room still holds back isolateAfter after the close is ended anyway,
//          counted as isolatedReadsCutShort, so an isolated member never stays for good)
//
// A member that also sends learned from its link that those frames were delivered; refusing
// them as `notJoined` once it was isolated lost them with nobody told (issue 16).
extension RelayMachine {
    /// Isolates `id` as a slow receiver, telling it `text` (see the diagram above). A link that
    /// has not joined is disconnected outright.
    mutating func isolateSlowReceiver(_ id: RelayConnectionID, _ text: String, now: ConduitInstant) {
        guard let connection = connections[id], !connection.isolated else { return }
        if case .closing = connection.phase { return }
        statistics.slowReceiversDisconnected += 1
        guard case .member = connection.phase else {
            return disconnect(id, .slowReceiver, text, now: now)
        }
        connections[id]!.clearOutbox()
        sendControl(id, RoomControlFrame.disconnect(.slowReceiver, text).encoded)
        connections[id]!.isolated = true
        // May resume the member's own reader too: it is a sender like any other now.
        stopHoldingBack(id, phase: connection.phase)
        actions.append(.close(id))
    }

    /// The driver ended isolated member `id`'s link before it was read to its end (a reader
    /// held back too long): counted, then ``connectionClosed(_:now:)`` as for any link.
    public mutating func isolatedReadCutShort(_ id: RelayConnectionID) {
        guard readsUntilLinkEnds(id) else { return }
        statistics.isolatedReadsCutShort += 1
    }

    /// Whether the driver should read `id`'s link to its end after closing it (an isolated
    /// member: its frames still go on), and let that end, not the close, end the connection.
    public func readsUntilLinkEnds(_ id: RelayConnectionID) -> Bool {
        guard let connection = connections[id], connection.isolated, case .member = connection.phase else { return false }
        return true
    }
}

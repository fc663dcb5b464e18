public import ConduitCore

/// Where one invitee stands in one invitation.
public enum InviteeState: UInt8, Hashable, Sendable {
    /// Invited, no answer yet.
    case pending
    /// Accepted.
    case accepted
    /// Rejected.
    case rejected
    /// Did not answer before the deadline.
    case timedOut
    /// Left the relay before answering (reported to the others as a timeout, cause `inviteeLeft`).
    case left
    /// Had not answered when the inviter cancelled.
    case cancelled

    /// True once the invitee's part is settled.
    public var isFinal: Bool { self != .pending }
}

/// How an invitation ended.
public enum InvitationEnd: Hashable, Sendable {
    /// Every invitee accepted, rejected, timed out or left.
    case settled
    /// The inviter cancelled, or left the relay.
    case cancelled(InvitationEvent.CancelReason)
}

/// One invitation as the book holds it: its parties, the state of each invitee, and whether it
/// is still open. Read-only outside the book.
public struct Invitation: Hashable, Sendable {
    /// The invitation's ID, unpredictable to other peers.
    public let id: InvitationID
    /// Who invited, as the relay authenticated it.
    public let inviter: PeerID
    /// The group (room) the invitation was made in; `nil` for a one-to-one invitation.
    public let groupID: RoomID?
    /// Who was invited, in order.
    public let invitees: [PeerID]
    /// Emptied when the invitation ends (a tombstone keeps only who answered what).
    public package(set) var data: [UInt8]
    /// Seconds to answer; 0 means no deadline.
    public let timeoutSeconds: UInt32
    /// `nil` when the invitation never times out.
    public let deadline: ConduitInstant?
    /// Parallel to ``invitees``.
    public package(set) var states: [InviteeState]
    /// `nil` while the invitation is open.
    public package(set) var end: InvitationEnd?
    /// Order of creation in the book: makes fan-out across invitations deterministic.
    package let sequence: UInt64
    /// Parallel to ``invitees``: the invitee left the relay, so nothing more is sent to it.
    package var gone: [Bool]
    /// Invitees still pending.
    package var pendingCount: Int

    package init(id: InvitationID, inviter: PeerID, request: InvitationRequest, invitees: [PeerID], deadline: ConduitInstant?, sequence: UInt64) {
        self.id = id
        self.inviter = inviter
        self.groupID = request.groupID
        self.invitees = invitees
        self.data = request.data
        self.timeoutSeconds = request.timeoutSeconds
        self.deadline = deadline
        self.states = Array(repeating: .pending, count: invitees.count)
        self.end = nil
        self.sequence = sequence
        self.gone = Array(repeating: false, count: invitees.count)
        self.pendingCount = invitees.count
    }

    /// Whether some invitee has not settled and the inviter has not cancelled.
    public var isOpen: Bool { end == nil }

    /// The state of `peer` if it is an invitee.
    public func state(of peer: PeerID) -> InviteeState? {
        index(of: peer).map { states[$0] }
    }

    package func index(of peer: PeerID) -> Int? {
        invitees.firstIndex(of: peer)
    }

    /// Calls `body` for everyone involved who is still on the relay, except `actor`: the inviter
    /// first, then the invitees in list order. The seed tells "everyone involved"; for a
    /// one-to-one invitation this is exactly the other party. (A closure, not an array: fan-out
    /// is on the hot path and allocates nothing here.)
    package func forEachAudience(except actor: PeerID?, _ body: (PeerID) -> Void) {
        if inviter != actor { body(inviter) }
        for i in invitees.indices where !gone[i] && invitees[i] != actor { body(invitees[i]) }
    }
}

public import ConduitCore

/// What one peer knows of one invitation it made or received, kept by ``InvitationClient`` from
/// the relay's replies and events. It mirrors the relay's ``Invitation``: every party is told
/// every answer, timeout and cancellation, so the mirror is complete while the peer stays on the relay.
public struct InvitationView: Hashable, Sendable {
    /// Which side of the invitation this peer is on.
    public enum Role: Hashable, Sendable {
        /// This peer invited.
        case inviter
        /// This peer was invited.
        case invitee
    }

    /// The invitation's ID.
    public let id: InvitationID
    /// Whether this peer invited or was invited.
    public let role: Role
    /// Who invited.
    public let inviter: PeerID
    /// The group (room) of the invitation; `nil` for a one-to-one invitation.
    public let groupID: RoomID?
    /// Who was invited, in order (parallel to ``states``).
    public let invitees: [PeerID]
    /// The inviter's custom data.
    public let data: [UInt8]
    /// Seconds to answer; 0 means no deadline.
    public let timeoutSeconds: UInt32
    /// Parallel to ``invitees``.
    public package(set) var states: [InviteeState]
    /// `nil` while open.
    public package(set) var end: InvitationEnd?

    init(id: InvitationID, role: Role, inviter: PeerID, groupID: RoomID?, invitees: [PeerID], data: [UInt8], timeoutSeconds: UInt32) {
        self.id = id
        self.role = role
        self.inviter = inviter
        self.groupID = groupID
        self.invitees = invitees
        self.data = data
        self.timeoutSeconds = timeoutSeconds
        self.states = Array(repeating: .pending, count: invitees.count)
        self.end = nil
    }

    /// Whether the invitation is still open.
    public var isOpen: Bool { end == nil }

    /// The state of invitee `peer`, or nil if `peer` was not invited.
    public func state(of peer: PeerID) -> InviteeState? {
        invitees.firstIndex(of: peer).map { states[$0] }
    }

    /// Invitees that accepted, in list order (the classroom's "hands raised").
    public var accepted: [PeerID] {
        zip(invitees, states).compactMap { $1 == .accepted ? $0 : nil }
    }

    /// Sets `peer`'s state if it is still pending; true when something changed.
    mutating func settle(_ peer: PeerID, _ state: InviteeState) -> Bool {
        guard let index = invitees.firstIndex(of: peer), states[index] == .pending else { return false }
        states[index] = state
        return true
    }

    /// Ends the view when no invitee is pending; true when it just ended.
    mutating func endIfSettled() -> Bool {
        guard end == nil, !states.contains(.pending) else { return false }
        end = .settled
        return true
    }
}

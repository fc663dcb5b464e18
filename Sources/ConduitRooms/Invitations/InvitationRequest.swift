public import ConduitCore

/// What an inviter asks for (Tencent `invite` / `inviteInGroup`).
public struct InvitationRequest: Hashable, Sendable {
    /// One peer for a call, or members of a group. Order is kept in every event.
    public var invitees: [PeerID]
    /// The group the invitees belong to (`inviteInGroup`); `nil` for a one-to-one invitation.
    /// The book does not check membership: the relay, which knows its rooms, does that first.
    public var groupID: RoomID?
    /// Application data, for example the room ID to join for a call.
    public var data: [UInt8]
    /// Seconds before unanswered invitees time out; 0 means never.
    public var timeoutSeconds: UInt32
    /// Invite only the invitees that are online now: offline ones are left out (and listed in the
    /// ``InvitationReceipt``); if none is online the invite is refused with `inviteesOffline`.
    /// Without it, offline invitees stay invited: the relay drops (or holds) what it cannot
    /// deliver, and they answer if they come back in time, or time out.
    public var onlineUserOnly: Bool

    /// Makes a request; `timeoutSeconds` 0 means the invitation never times out.
    public init(invitees: [PeerID], groupID: RoomID? = nil, data: [UInt8] = [], timeoutSeconds: UInt32 = 0, onlineUserOnly: Bool = false) {
        self.invitees = invitees
        self.groupID = groupID
        self.data = data
        self.timeoutSeconds = timeoutSeconds
        self.onlineUserOnly = onlineUserOnly
    }
}

/// What the inviter gets back from a successful invite.
public struct InvitationReceipt: Hashable, Sendable {
    /// The new invitation's ID.
    public var id: InvitationID
    /// Invitees left out because they were offline (only with `onlineUserOnly`).
    public var skippedOffline: [PeerID]

    /// Makes a receipt.
    public init(id: InvitationID, skippedOffline: [PeerID] = []) {
        self.id = id
        self.skippedOffline = skippedOffline
    }
}

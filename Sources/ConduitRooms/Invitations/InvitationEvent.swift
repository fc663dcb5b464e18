public import ConduitCore

/// What a party of an invitation is told (Tencent signaling: `onReceiveNewInvitation`,
/// `onInviteeAccepted`, `onInviteeRejected`, `onInvitationCancelled`, `onInvitationTimeout`).
public enum InvitationEvent: Hashable, Sendable {
    /// To each invitee when the invitation is made. Carries the whole invitee list, as the seed's
    /// classroom scenario needs ("based on the inviteeList and data fields").
    case newInvitation(NewInvitation)
    /// An invitee accepted, with its custom data.
    case inviteeAccepted(InvitationID, invitee: PeerID, data: [UInt8])
    /// An invitee rejected, with its custom data (for example "busy").
    case inviteeRejected(InvitationID, invitee: PeerID, data: [UInt8])
    /// The inviter cancelled (with its custom data), or left the relay (empty data). Ends the invitation.
    case invitationCancelled(InvitationID, inviter: PeerID, data: [UInt8], reason: CancelReason)
    /// These invitees did not answer in time, or left the relay before answering.
    case invitationTimeout(InvitationID, invitees: [PeerID], cause: TimeoutCause)

    /// Why an invitation was cancelled.
    public enum CancelReason: UInt8, Hashable, Sendable {
        /// The inviter called cancel.
        case cancelledByInviter = 0
        /// The inviter left the relay while the invitation was open.
        case inviterLeft = 1
    }

    /// Why invitees timed out.
    public enum TimeoutCause: UInt8, Hashable, Sendable {
        /// The invitation's timeout ran out.
        case deadline = 0
        /// The invitee left the relay before answering: it can no longer answer, so its part ends
        /// at once instead of at the deadline (which a timeout of 0 would never reach).
        case inviteeLeft = 1
    }

    /// The invitation the event is about.
    public var invitationID: InvitationID {
        switch self {
        case .newInvitation(let new): new.id
        case .inviteeAccepted(let id, _, _), .inviteeRejected(let id, _, _): id
        case .invitationCancelled(let id, _, _, _), .invitationTimeout(let id, _, _): id
        }
    }
}

/// The body of ``InvitationEvent/newInvitation(_:)``.
public struct NewInvitation: Hashable, Sendable {
    /// The invitation's ID.
    public var id: InvitationID
    /// Who invited.
    public var inviter: PeerID
    /// The group (room) the invitation was made in; `nil` for a one-to-one invitation.
    public var groupID: RoomID?
    /// Everyone invited, this side included.
    public var invitees: [PeerID]
    /// The inviter's custom data (for example the call's room ID).
    public var data: [UInt8]
    /// Seconds; 0 means the invitation never times out.
    public var timeoutSeconds: UInt32

    /// Makes the body of a `newInvitation` event.
    public init(id: InvitationID, inviter: PeerID, groupID: RoomID?, invitees: [PeerID], data: [UInt8], timeoutSeconds: UInt32) {
        self.id = id
        self.inviter = inviter
        self.groupID = groupID
        self.invitees = invitees
        self.data = data
        self.timeoutSeconds = timeoutSeconds
    }
}

/// One event for one peer: what the relay sends.
public struct InvitationDelivery: Hashable, Sendable, CustomStringConvertible {
    /// The peer the event is for.
    public var to: PeerID
    /// The event.
    public var event: InvitationEvent

    /// Makes a delivery of `event` to `to`.
    public init(to: PeerID, event: InvitationEvent) {
        self.to = to
        self.event = event
    }

    public var description: String { "→\(to): \(event)" }
}

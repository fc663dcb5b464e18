import ConduitCore

/// An invitee's answer to an invitation, as it travels from the invitee to the relay.
public enum InvitationAnswer: UInt8, Hashable, Sendable {
    /// The invitee accepts.
    case accept = 1
    /// The invitee rejects.
    case reject = 2

    /// The invitee's state once this answer is recorded.
    package var state: InviteeState { self == .accept ? .accepted : .rejected }
}

/// The relay extension that carries invitations (room control `extension` frames with this ID are
/// the relay's own, answered by it and never forwarded to members).
public enum InvitationExtension {
    /// The extension ID of invitation messages.
    public static let id: UInt8 = 1
}

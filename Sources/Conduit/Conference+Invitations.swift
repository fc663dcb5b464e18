public import ConduitCore

public import ConduitRooms
/// How an invitation ended, as this side saw it: the last view (each invitee's state) and the
/// custom data each invitee answered with (a rejection's "busy", for example).
public struct InvitationOutcome: Hashable, Sendable {
    /// Every invitee's final state, as the relay last reported it.
    public var view: InvitationView
    /// Data of each invitee that accepted or rejected, by invitee.
    public var answerData: [PeerID: [UInt8]]

    /// Makes an outcome from a view and the invitees' answer data.
    public init(view: InvitationView, answerData: [PeerID: [UInt8]]) {
        self.view = view
        self.answerData = answerData
    }

    /// The invitation this outcome is of.
    public var id: InvitationID { view.id }
    /// The invitees that accepted, in invitation order.
    public var accepted: [PeerID] { view.accepted }
    /// The final state of `peer`, or nil if `peer` was not invited.
    public func state(of peer: PeerID) -> InviteeState? { view.state(of: peer) }
}

/// Invitations through the relay (Tencent signaling, `seeds/004`): any peer joined to a room on a
/// relay may invite peers joined to that relay (in any room), addressed by peer ID. The relay
/// stamps the inviter with the identity its token proved and keeps the one table of
/// invitations, its deadlines included; this side keeps a view of each.
///
/// ```swift
/// let receipt = try await lobby.invite(["bob"], data: Array("call-42".utf8), timeout: .seconds(30))
/// for await event in lobby.invitationEvents { ... }   // .inviteeAccepted, .inviteeRejected, ...
/// let outcome = await lobby.outcome(of: receipt.id)   // when every invitee settled, or cancelled
/// ```
///
/// Each request waits for the relay's reply and throws its typed refusal (`InvitationError`:
/// `unknownInvitation`, `invitationEnded`, `alreadyAnswered`, `notInvitee`, ...), or
/// `notConnected` if the conference ends first.
extension Conference {
    /// What ``invitationEvents`` yields: a ``NotificationStream``, bounded, with every drop counted.
    public typealias InvitationEvents = NotificationStream<InvitationEvent>

    /// Events of invitations this side made or received. Bounded (8,192 unread) but never
    /// silently: an event that finds it full is counted (``droppedInvitationMessages``,
    /// ``NotificationStream/droppedCount``) and reported on ``events`` as
    /// ``Event/invitationEventsDropped(count:)``. One consumer; every call returns the same stream.
    public var invitationEvents: InvitationEvents { engine.invitationEvents.stream }

    /// Invites `peers`. `timeout` is rounded up to whole seconds (the wire's unit); `.zero` means
    /// never. With `onlineOnly`, peers not on the relay now are left out (listed in the receipt),
    /// and the invite is refused with `inviteesOffline` if none is.
    @discardableResult
    public func invite(
        _ peers: [PeerID], group: RoomID? = nil, data: [UInt8] = [], timeout: Duration, onlineOnly: Bool = false
    ) async throws(InvitationError) -> InvitationReceipt {
        let request = InvitationRequest(invitees: peers, groupID: group, data: data, timeoutSeconds: Self.wholeSeconds(timeout), onlineUserOnly: onlineOnly)
        let update = try await engine.invitationRequest { (client: inout InvitationClient) throws(InvitationError) in try client.invite(request) }
        switch update {
        case .inviteSent(_, let receipt): return receipt
        case .requestRefused(_, let error): throw error
        default: throw InvitationError(.malformedRequest, "unexpected reply \(update)")
        }
    }

    /// Accepts invitation `id` (this side must be one of its invitees).
    public func accept(_ id: InvitationID, data: [UInt8] = []) async throws(InvitationError) {
        try Self.expectDone(try await engine.invitationRequest { (client: inout InvitationClient) throws(InvitationError) in try client.accept(id, data: data) })
    }

    /// Rejects invitation `id`, for example with data "busy".
    public func reject(_ id: InvitationID, data: [UInt8] = []) async throws(InvitationError) {
        try Self.expectDone(try await engine.invitationRequest { (client: inout InvitationClient) throws(InvitationError) in try client.reject(id, data: data) })
    }

    /// Cancels invitation `id` (this side must be its inviter); invitees still pending are told.
    public func cancel(_ id: InvitationID, data: [UInt8] = []) async throws(InvitationError) {
        try Self.expectDone(try await engine.invitationRequest { (client: inout InvitationClient) throws(InvitationError) in try client.cancel(id, data: data) })
    }

    /// Waits until invitation `id` ends (every invitee settled, or it was cancelled) and returns
    /// how; at once if it ended lately. Nil if this side does not know it or the conference ended.
    public func outcome(of id: InvitationID) async -> InvitationOutcome? { await engine.invitationOutcome(id) }

    /// This side's view of an open invitation.
    public func invitation(_ id: InvitationID) async -> InvitationView? { await engine.invitationView(id) }

    /// Open invitations this side made or received.
    public var openInvitations: [InvitationView] { get async { await engine.openInvitations } }

    /// Invitation messages from the relay that were malformed or matched nothing here, plus
    /// events dropped because ``invitationEvents`` was left unread past its bound (8,192).
    public var droppedInvitationMessages: Int { get async { await engine.invitationDrops } }

    static func expectDone(_ update: InvitationClient.Update) throws(InvitationError) {
        switch update {
        case .requestDone: return
        case .requestRefused(_, let error): throw error
        default: throw InvitationError(.malformedRequest, "unexpected reply \(update)")
        }
    }

    static func wholeSeconds(_ timeout: Duration) -> UInt32 {
        let (seconds, attoseconds) = timeout.components
        guard seconds >= 0 else { return 0 }
        let rounded = seconds + (attoseconds > 0 ? 1 : 0)
        return UInt32(clamping: rounded)
    }
}

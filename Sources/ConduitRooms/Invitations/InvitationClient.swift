public import ConduitCore

/// The peer's side of invitations, sans-IO: it makes the request messages, matches the relay's
/// replies to them by tag, and keeps an ``InvitationView`` of every open invitation the peer made
/// or received, so the public API can stay thin (send what it returns, feed it what arrives).
///
/// ```
/// app --invite/accept/reject/cancel--> InvitationClient --InvitationMessage--> relay
/// app <--------- Update (events, replies, ended) ------- InvitationClient <-- relay
/// ```
///
/// It refuses locally what the relay would refuse for sure (answering an invitation it does not
/// know, the wrong role, an ended one, the other answer after answering), so a bad call costs no
/// round trip; the relay stays the authority. Bounded: open invitations tracked and requests in
/// flight are capped; a `newInvitation` beyond the cap, an unmatched reply or a request-type
/// message from the relay is a counted drop (``droppedMessages``). Ended invitations are removed
/// once their ``Update/ended(_:_:)`` is reported.
public struct InvitationClient: Sendable {
    /// Caps on what the client tracks.
    public struct Configuration: Hashable, Sendable {
        /// The most open invitations tracked; a `newInvitation` beyond it is dropped and counted.
        public var maxTrackedInvitations = 1_024
        /// The most requests awaiting the relay's reply; more throw `tooManyInvitations`.
        public var maxRequestsInFlight = 256
        /// The defaults: 1,024 invitations, 256 requests.
        public init() {}
    }

    /// What the app is told.
    public enum Update: Hashable, Sendable {
        /// The relay accepted our invite: its ID, and invitees left out because offline.
        case inviteSent(tag: UInt32, InvitationReceipt)
        /// The relay did what request `tag` asked (answer or cancel).
        case requestDone(tag: UInt32, InvitationID)
        /// The relay refused request `tag`.
        case requestRefused(tag: UInt32, InvitationError)
        /// An event about an invitation we are a party of.
        case event(InvitationEvent)
        /// The invitation is over; its last view (who answered what) is attached.
        case ended(InvitationID, InvitationView)
    }

    enum Pending: Hashable, Sendable {
        case invite(InvitationRequest)
        case answer(InvitationID, InvitationAnswer)
        case cancel(InvitationID)
    }

    /// This side's peer ID.
    public let me: PeerID
    /// The caps this client enforces.
    public let configuration: Configuration
    var views: [InvitationID: InvitationView] = [:]
    var inFlight: [UInt32: Pending] = [:]
    var nextTag: UInt32 = 0
    /// Messages ignored: unmatched replies, request types, invitations beyond the cap.
    public internal(set) var droppedMessages = 0

    /// Makes a client for `me` with nothing tracked.
    public init(me: PeerID, configuration: Configuration = Configuration()) {
        self.me = me
        self.configuration = configuration
    }

    /// Open invitations we made or received.
    public var openInvitations: [InvitationView] { views.values.sorted { $0.id < $1.id } }
    /// The latest view of invitation `id`, if tracked.
    public func view(_ id: InvitationID) -> InvitationView? { views[id] }
    /// Requests sent and not yet answered by the relay.
    public var requestsInFlight: Int { inFlight.count }

    // MARK: Requests

    /// The message that invites `request.invitees`; the ID comes back as ``Update/inviteSent(tag:_:)``.
    public mutating func invite(_ request: InvitationRequest) throws(InvitationError) -> InvitationMessage {
        guard !request.invitees.isEmpty else { throw InvitationError(.emptyInviteeList, "invite names no invitee") }
        guard !request.invitees.contains(me) else { throw InvitationError(.invalidInviteeList, "a peer cannot invite itself") }
        let tag = try reserveTag()
        inFlight[tag] = .invite(request)
        return .invite(tag: tag, request)
    }

    /// The message that accepts `id` with `data`. Throws `InvitationError` at once if this side is not an invitee, already answered otherwise, or the invitation ended.
    public mutating func accept(_ id: InvitationID, data: [UInt8] = []) throws(InvitationError) -> InvitationMessage {
        try answer(.accept, id, data: data)
    }

    /// The message that rejects `id` with `data`. Throws as ``accept(_:data:)`` does.
    public mutating func reject(_ id: InvitationID, data: [UInt8] = []) throws(InvitationError) -> InvitationMessage {
        try answer(.reject, id, data: data)
    }

    mutating func answer(_ answer: InvitationAnswer, _ id: InvitationID, data: [UInt8]) throws(InvitationError) -> InvitationMessage {
        guard let view = views[id] else { throw InvitationError(.unknownInvitation, "no open invitation \(id)") }
        guard view.role == .invitee, let state = view.state(of: me) else {
            throw InvitationError(.notInvitee, "we made invitation \(id); only invitees answer")
        }
        switch state {
        case .pending: break
        case answer.state: break  // the same answer again is harmless: the relay treats it as done
        case .accepted, .rejected: throw InvitationError(.alreadyAnswered, "we already \(state) invitation \(id)")
        case .timedOut, .left, .cancelled: throw InvitationError(.invitationEnded, "invitation \(id) ended for us: \(state)")
        }
        let tag = try reserveTag()
        inFlight[tag] = .answer(id, answer)
        return answer == .accept ? .accept(tag: tag, id, data: data) : .reject(tag: tag, id, data: data)
    }

    /// The message that cancels `id` with `data`. Throws `InvitationError` at once if this side is not the inviter or the invitation ended.
    public mutating func cancel(_ id: InvitationID, data: [UInt8] = []) throws(InvitationError) -> InvitationMessage {
        guard let view = views[id] else { throw InvitationError(.unknownInvitation, "no open invitation \(id)") }
        guard view.role == .inviter else { throw InvitationError(.notInviter, "only the inviter cancels invitation \(id)") }
        let tag = try reserveTag()
        inFlight[tag] = .cancel(id)
        return .cancel(tag: tag, id, data: data)
    }

    /// Forgets request `tag` whose message could not be sent (the link is gone, or it was too
    /// large for the carrier): no reply will come for it.
    public mutating func abandonRequest(tag: UInt32) {
        inFlight[tag] = nil
    }

    mutating func reserveTag() throws(InvitationError) -> UInt32 {
        guard inFlight.count < configuration.maxRequestsInFlight else {
            throw InvitationError(.tooManyInvitations, "\(inFlight.count) requests are waiting for the relay")
        }
        // Tags skip 0 (events carry 0) and any still in flight after wrapping.
        repeat {
            nextTag = nextTag == .max ? 1 : nextTag + 1
        } while inFlight[nextTag] != nil
        return nextTag
    }
}

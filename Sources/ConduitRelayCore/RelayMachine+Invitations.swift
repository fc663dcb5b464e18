import DequeModule
public import ConduitCore
import ConduitRooms

/// Invitations hosted by the relay (issue 8, Tencent signaling, `seeds/004`).
///
/// Invitations are relay-wide: any joined peer may invite any peer by `PeerID`, whatever room
/// each is in. A peer is *online* while it has at least one joined connection (in any room) to
/// this relay or, in a cluster, to another relay of it; when it is online nowhere any more, the
/// book hears ``InvitationBook/peerLeft(_:now:)``. In a cluster an invitation lives in the book of
/// its inviter's relay (its home); the others forward its events to their peers and their peers'
/// answers to it (RelayMachine+ClusterInvitations.swift).
///
/// ## Framing
///
/// An `InvitationMessage` rides a room-control `extension` frame with extension ID 1 and
/// member 0 (the relay itself) in both directions. The relay intercepts extension 1: it is never
/// forwarded to a member, and the inviter's identity is the one its join token proved (the
/// relay takes it from the connection, never from the body).
///
/// ```
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +-------+-------+---------------+-------------------------------+
/// |Ver=1  |Kind=4 | Type=extension|          Body Length          |  room-control header
/// +-------+-------+---------------+-------------------------------+
/// |  Ext ID = 1   |   Member = 0 (the relay)      | Invitation... |
/// +---------------+-------------------------------+               +
/// |        InvitationMessage (16-byte header + body, see there)   |
/// +---------------------------------------------------------------+
/// ```
///
/// | Direction   | InvitationMessage                | Sent to                                 |
/// |-------------|----------------------------------|-----------------------------------------|
/// | peer→relay  | invite, accept, reject, cancel   | the relay (tag chosen by the peer)      |
/// | relay→peer  | invited, done, refused (replies) | the requesting connection only          |
/// | relay→peer  | newInvitation, invitee*, invitation* (events) | every joined connection of each recipient peer |
///
/// A body that does not parse, or a reply/event type sent by a peer, gets `refused` with code
/// `malformedRequest` (tag 0 when unparseable) and is counted in ``RelayInvitations/malformedRequests``.
/// An invite whose `newInvitation` would not fit one extension frame is refused with
/// `customDataTooLarge`. Events for a peer with no joined connection are dropped and counted
/// (``RelayInvitations/undeliverableEvents``): that peer times out, or answers if it comes back in time.
public struct RelayInvitations: Sendable {
    /// The room-control extension that carries invitation messages.
    public static let extensionID: UInt8 = InvitationExtension.id

    /// The relay's one table of invitations.
    public internal(set) var book: InvitationBook
    /// Joined connections of each online peer, in the order they joined. Bounded by the relay's
    /// connections; a peer leaves the table with its last connection.
    var connectionsByPeer: [PeerID: [RelayConnectionID]] = [:]
    /// The other relays of the cluster where each peer is online (RelayMachine+ClusterOnline.swift),
    /// at most `RelayClusterNodeLimits.maxRemoteOnline` (peer, relay) pairs.
    var remoteOnline: [PeerID: [RelayNodeID]] = [:]
    var remoteOnlineCount = 0
    /// Invitations of other relays whose events reached peers here (RelayMachine+ClusterInvitations.swift).
    var proxies: [InvitationID: InvitationProxy] = [:]
    /// Proxies in the order they were made (evicted oldest first at the cap; entries of proxies
    /// gone since are skipped and compacted away).
    var proxyOrder = Deque<InvitationID>()
    /// Ended proxies, with when each is forgotten (in that order: the lifetime is one constant).
    var proxyExpiries = Deque<(expires: ConduitInstant, id: InvitationID)>()
    /// Answers and cancels forwarded to home relays, by handle, and their handles in order of deadline.
    var remoteRequests: [UInt64: RemoteInvitationRequest] = [:]
    var remoteRequestOrder = Deque<UInt64>()
    var nextRemoteHandle: UInt64 = 1
    /// Invitations of this relay's book whose events went to other relays: their end is announced.
    var crossed: Set<InvitationID> = []
    /// Requests that did not parse or were not requests.
    public internal(set) var malformedRequests = 0
    /// Requests handled (answered with `invited`, `done` or `refused`).
    public internal(set) var requestsHandled = 0
    /// Event frames queued to connections.
    public internal(set) var eventsDelivered = 0
    /// Events whose recipient had no joined connection.
    public internal(set) var undeliverableEvents = 0

    init(configuration: InvitationBook.Configuration, key: UInt64) {
        book = InvitationBook(configuration: configuration, idKey: key)
    }

    /// True while `peer` has a joined connection to this relay, or (in a cluster) to another relay
    /// as far as this one heard.
    public func isOnline(_ peer: PeerID) -> Bool { connectionsByPeer[peer] != nil || remoteOnline[peer] != nil }

    /// True while `peer` has a joined connection to this relay.
    public func isOnlineHere(_ peer: PeerID) -> Bool { connectionsByPeer[peer] != nil }

    /// Peers with at least one joined connection to this relay.
    public var onlinePeerCount: Int { connectionsByPeer.count }

    /// Peers online at other relays of the cluster (and not here), as far as this relay heard.
    public var remoteOnlinePeerCount: Int { remoteOnline.keys.count { connectionsByPeer[$0] == nil } }

    /// Invitations of other relays this relay forwards answers for (open or recently ended).
    public var proxyCount: Int { proxies.count }

    /// Answers and cancels forwarded to other relays, waiting for their reply.
    public var pendingRemoteRequests: Int { remoteRequests.count }

    /// The size of `newInvitation` for `request` from `inviter` (see `InvitationMessage`):
    /// the relay checks it fits an extension frame before the book opens the invitation.
    static func newInvitationSize(_ request: InvitationRequest, inviter: PeerID) -> Int {
        var size = InvitationMessage.headerSize + 1 + inviter.rawValue.utf8.count
        size += 1 + (request.groupID?.rawValue.utf8.count ?? 0) + 4 + 2 + 2 + request.data.count
        for peer in request.invitees { size += 1 + peer.rawValue.utf8.count }
        return size
    }
}

extension RelayMachine {
    /// Extension 1 from a joined connection: one invitation request. An answer or cancel for an
    /// invitation another relay of the cluster is home to goes there; the rest is decided here.
    mutating func handleInvitationRequest(_ id: RelayConnectionID, from peer: PeerID, body: [UInt8], now: ConduitInstant) {
        let message: InvitationMessage
        do { message = try InvitationMessage.parse(body) } catch {
            invitations.malformedRequests += 1
            refuseFrame(.malformed)
            sendInvitation(.refused(tag: 0, nil, InvitationError(.malformedRequest, "invitation message: \(error)")), to: id)
            return
        }
        if forwardToHome(message, from: peer, connection: id, now: now) { return }
        let reply = invitationReply(to: message, from: peer, now: now)
        // The reply first: a caller learns its invitation's ID before any event about it.
        sendInvitation(reply, to: id)
        deliverInvitationEvents(now: now)
    }

    /// What the book says to `peer`'s request (as its token proved it is `peer`, here or at the
    /// relay that forwarded it); the events it caused wait in the book.
    mutating func invitationReply(to message: InvitationMessage, from peer: PeerID, now: ConduitInstant) -> InvitationMessage {
        invitations.requestsHandled += 1
        switch message {
        case .invite(let tag, let request):
            guard RelayInvitations.newInvitationSize(request, inviter: peer) <= RoomControlFrame.maxExtensionBytes else {
                return .refused(tag: tag, nil, InvitationError(.customDataTooLarge, "the invitation would not fit one frame of \(RoomControlFrame.maxExtensionBytes) bytes"))
            }
            // (The tables, not `invitations`: a copy of the whole would make the book copy itself.)
            let here = invitations.connectionsByPeer
            let elsewhere = invitations.remoteOnline
            do {
                return .invited(tag: tag, try invitations.book.invite(from: peer, request, now: now, isOnline: { here[$0] != nil || elsewhere[$0] != nil }))
            } catch { return .refused(tag: tag, nil, error) }
        case .accept(let tag, let invitation, let data):
            return Self.invitationResult(tag, invitation) { () throws(InvitationError) in try invitations.book.accept(invitation, by: peer, data: data, now: now) }
        case .reject(let tag, let invitation, let data):
            return Self.invitationResult(tag, invitation) { () throws(InvitationError) in try invitations.book.reject(invitation, by: peer, data: data, now: now) }
        case .cancel(let tag, let invitation, let data):
            return Self.invitationResult(tag, invitation) { () throws(InvitationError) in try invitations.book.cancel(invitation, by: peer, data: data, now: now) }
        case .invited(let tag, _), .done(let tag, _), .refused(let tag, _, _):
            invitations.malformedRequests += 1
            return .refused(tag: tag, nil, InvitationError(.malformedRequest, "replies go from the relay to peers"))
        case .event:
            invitations.malformedRequests += 1
            return .refused(tag: 0, nil, InvitationError(.malformedRequest, "events go from the relay to peers"))
        }
    }

    static func invitationResult(_ tag: UInt32, _ id: InvitationID, _ body: () throws(InvitationError) -> Void) -> InvitationMessage {
        do {
            try body()
            return .done(tag: tag, id)
        } catch { return .refused(tag: tag, id, error) }
    }

    /// Sends what the book queued, each event to every joined connection of its recipient here
    /// and, once per relay, to the other relays where it is online; then tells the relays that
    /// got events of an invitation that it ended.
    mutating func deliverInvitationEvents(now: ConduitInstant) {
        var remote: [RelayNodeID: [InvitationDelivery]] = [:]
        for delivery in invitations.book.takeDeliveries() {
            let targets = invitations.connectionsByPeer[delivery.to]
            let nodes = invitations.remoteOnline[delivery.to] ?? []
            guard targets != nil || !nodes.isEmpty else {
                invitations.undeliverableEvents += 1
                continue
            }
            for node in nodes { remote[node, default: []].append(delivery) }
            guard let targets, let frame = Self.invitationFrame(.event(delivery.event)) else { continue }
            for target in targets {
                sendControl(target, frame)
                invitations.eventsDelivered += 1
            }
        }
        if !remote.isEmpty { forwardInvitationEvents(remote, now: now) }
        announceEndedInvitations(now: now)
    }

    mutating func sendInvitation(_ message: InvitationMessage, to id: RelayConnectionID) {
        guard let frame = Self.invitationFrame(message) else { return }
        sendControl(id, frame)
    }

    /// The extension frame carrying `message`; nil only if it cannot be encoded (a bug, not peer
    /// input: requests that could produce one are refused before the book sees them).
    static func invitationFrame(_ message: InvitationMessage) -> [UInt8]? {
        guard let body = try? message.encoded(), body.count <= RoomControlFrame.maxExtensionBytes else { return nil }
        return RoomControlFrame.extension(id: RelayInvitations.extensionID, member: 0, body: body).encoded
    }

    /// A connection of `peer` joined a room: the peer is online (the cluster hears of it with its first).
    mutating func invitationMemberJoined(_ peer: PeerID, _ id: RelayConnectionID, now: ConduitInstant) {
        let first = invitations.connectionsByPeer[peer] == nil
        invitations.connectionsByPeer[peer, default: []].append(id)
        if first { publishOnline(RelayClusterOnline(joined: [peer]), now: now) }
    }

    /// A connection of `peer` left its room; with its last one the peer is offline here, and once
    /// it is online nowhere in the cluster it leaves the book.
    mutating func invitationMemberLeft(_ peer: PeerID, _ id: RelayConnectionID, now: ConduitInstant) {
        guard var list = invitations.connectionsByPeer[peer] else { return }
        list.removeAll { $0 == id }
        if !list.isEmpty {
            invitations.connectionsByPeer[peer] = list
            return
        }
        invitations.connectionsByPeer[peer] = nil
        publishOnline(RelayClusterOnline(left: [peer]), now: now)
        guard !invitations.isOnline(peer) else { return }
        invitations.book.peerLeft(peer, now: now)
        deliverInvitationEvents(now: now)
    }

    /// Deadlines and tombstones whose time came.
    mutating func handleInvitationTimeouts(now: ConduitInstant) {
        guard let due = invitations.book.nextTimeout, due <= now else { return }
        invitations.book.handleTimeouts(now: now)
        deliverInvitationEvents(now: now)
    }
}

public import ConduitCore
public import ConduitRooms

/// One message of a relay's node stream, on the subject `conduit.relay.node`
/// (`docs/wire-format.md`, "Relay cluster"): what is relay-wide rather than about one room, which
/// is who is online there and the invitations its peers take part in.
///
/// Each relay numbers the messages of its node stream 1, 2, 3… (a restarted relay is a new node,
/// so there is no epoch). Every relay reads every relay's stream, the messages meant for one relay
/// (`target`) included, so that a gap is seen by everyone and repaired the same way: the receiver
/// asks the sender to send the missing messages again (`resendRequest`), from a bounded ring; what
/// the ring no longer holds is answered `resendGone`, and counted as lost. `heartbeat`,
/// `resendRequest` and `resendGone` are not numbered: their `sequence` is the sender's last
/// numbered message (so a heartbeat also reveals a lost last message), and they are never resent.
public struct RelayClusterNodeMessage: Hashable, Sendable {
    /// What the message says.
    public enum Body: Hashable, Sendable {
        /// "Still here" (node liveness), with the sequence of the last numbered message sent.
        case heartbeat
        /// A change in the set of peers with a joined connection to the sender, or (``RelayClusterOnline/isFull``) that whole set.
        case online(RelayClusterOnline)
        /// Invitation events for peers online at the target relay, from the invitation's home relay
        /// (the inviter's relay, which holds it in its `InvitationBook`).
        case invitationEvents([InvitationDelivery])
        /// A peer of the sending relay answers or cancels an invitation whose home is the target:
        /// `request` as the peer sent it (its tag is echoed in the reply), `requester` as its token proved.
        case invitationRequest(handle: UInt64, requester: PeerID, request: InvitationMessage)
        /// The home's reply (`done` or `refused`) to the request with that handle.
        case invitationReply(handle: UInt64, reply: InvitationMessage)
        /// Invitations of the sending (home) relay that ended; relays that forwarded their events
        /// remember them as ended (late answers still reach the home's tombstone).
        case invitationsEnded([InvitationID])
        /// The target is asked to send its messages `from…through` again.
        case resendRequest(from: UInt64, through: UInt64)
        /// The sender no longer holds its messages `from…through`: the target counts them lost.
        case resendGone(from: UInt64, through: UInt64)
    }

    /// The sending relay.
    public var node: RelayNodeID
    /// Numbered messages: 1, 2, 3… over the sender's node stream. The others: the last numbered one sent.
    public var sequence: UInt64
    /// The one relay the message is for (its node number), or 0 for every relay.
    public var target: UInt64
    /// What it says.
    public var body: Body

    /// A message.
    public init(node: RelayNodeID, sequence: UInt64, target: UInt64 = 0, body: Body) {
        self.node = node
        self.sequence = sequence
        self.target = target
        self.body = body
    }

    /// The subject of every relay's node stream.
    public static let subject = "conduit.relay.node"

    /// Whether the message takes a place in its sender's numbering (and may be resent).
    public var isNumbered: Bool {
        switch body {
        case .heartbeat, .resendRequest, .resendGone: false
        case .online, .invitationEvents, .invitationRequest, .invitationReply, .invitationsEnded: true
        }
    }

    static let heartbeatKind: UInt8 = 16
    static let onlineKind: UInt8 = 17
    static let invitationEventsKind: UInt8 = 18
    static let invitationRequestKind: UInt8 = 19
    static let invitationReplyKind: UInt8 = 20
    static let invitationsEndedKind: UInt8 = 21
    static let resendRequestKind: UInt8 = 22
    static let resendGoneKind: UInt8 = 23

    /// Whether bytes whose second byte is `kind` are a node message (room messages use 1…8,
    /// token uses 3): how one handler tells the two apart.
    public static func isNodeKind(_ kind: UInt8) -> Bool { (heartbeatKind...resendGoneKind).contains(kind) }

    /// The most peers one `online` message lists (a longer full list is cut into several).
    public static let maxPeersPerOnline = 512
    /// The most events one `invitationEvents` message carries.
    public static let maxEventsPerMessage = 64

    /// The message's bytes. An invitation message that cannot be encoded (the relay checks every
    /// one before it builds a node message) would leave an empty body, which receivers refuse.
    public var encoded: [UInt8] {
        var bytes: [UInt8] = [RelayClusterMessage.version, kind]
        bytes.appendBigEndian(node.rawValue)
        bytes.appendBigEndian(sequence)
        bytes.appendBigEndian(target)
        switch body {
        case .heartbeat:
            break
        case .online(let online):
            bytes.append((online.isFull ? 1 : 0) | (online.wantsFull ? 2 : 0) | (online.hasMore ? 4 : 0))
            for list in [online.joined, online.left] {
                bytes.appendBigEndian(UInt16(list.count))
                for peer in list { bytes.appendIdentifier(peer.rawValue) }
            }
        case .invitationEvents(let deliveries):
            bytes.appendBigEndian(UInt16(deliveries.count))
            for delivery in deliveries {
                bytes.appendIdentifier(delivery.to.rawValue)
                bytes.appendPrefixed(Self.encode(.event(delivery.event)))
            }
        case .invitationRequest(let handle, let requester, let request):
            bytes.appendBigEndian(handle)
            bytes.appendIdentifier(requester.rawValue)
            bytes.appendPrefixed(Self.encode(request))
        case .invitationReply(let handle, let reply):
            bytes.appendBigEndian(handle)
            bytes.appendPrefixed(Self.encode(reply))
        case .invitationsEnded(let ids):
            bytes.appendBigEndian(UInt16(ids.count))
            for id in ids { bytes.appendBigEndian(id.rawValue) }
        case .resendRequest(let from, let through), .resendGone(let from, let through):
            bytes.appendBigEndian(from)
            bytes.appendBigEndian(through)
        }
        return bytes
    }

    var kind: UInt8 {
        switch body {
        case .heartbeat: Self.heartbeatKind
        case .online: Self.onlineKind
        case .invitationEvents: Self.invitationEventsKind
        case .invitationRequest: Self.invitationRequestKind
        case .invitationReply: Self.invitationReplyKind
        case .invitationsEnded: Self.invitationsEndedKind
        case .resendRequest: Self.resendRequestKind
        case .resendGone: Self.resendGoneKind
        }
    }

    /// An invitation message's bytes, or none if it cannot be encoded (see ``encoded``).
    static func encode(_ message: InvitationMessage) -> [UInt8] { (try? message.encoded()) ?? [] }

    /// Whether `message` can travel in a node message (the relay checks before it builds one).
    static func canCarry(_ message: InvitationMessage) -> Bool {
        guard let bytes = try? message.encoded() else { return false }
        return bytes.count <= Int(UInt16.max)
    }

    /// Reads a message; anything malformed is a typed error, never a trap. Lists are read only as
    /// far as the bytes present hold entries.
    public static func parse(_ bytes: [UInt8]) throws(WireError) -> RelayClusterNodeMessage {
        var reader = ClusterReader(bytes: bytes)
        let version = try reader.byte()
        guard version == RelayClusterMessage.version else { throw .unsupportedVersion(version) }
        let kind = try reader.byte()
        let node = RelayNodeID(try reader.uint64())
        let sequence = try reader.uint64()
        let target = try reader.uint64()
        guard node.rawValue != 0 else { throw .malformedControlBody("node 0 is no relay") }
        let body: Body
        switch kind {
        case heartbeatKind:
            body = .heartbeat
        case onlineKind:
            let flags = try reader.byte()
            guard flags & ~7 == 0, flags & 4 == 0 || flags & 1 != 0 else { throw .reservedBitsSet }
            var lists: [[PeerID]] = []
            for _ in 0..<2 {
                var list: [PeerID] = []
                let count = Int(try reader.uint64(width: 2))
                guard count <= maxPeersPerOnline else { throw .malformedControlBody("an online list of \(count) peers (at most \(maxPeersPerOnline))") }
                for _ in 0..<count { list.append(try reader.identifier(PeerID.self)) }
                lists.append(list)
            }
            body = .online(RelayClusterOnline(isFull: flags & 1 != 0, wantsFull: flags & 2 != 0, hasMore: flags & 4 != 0, joined: lists[0], left: lists[1]))
        case invitationEventsKind:
            let count = Int(try reader.uint64(width: 2))
            guard count <= maxEventsPerMessage else { throw .malformedControlBody("\(count) invitation events in one message (at most \(maxEventsPerMessage))") }
            var deliveries: [InvitationDelivery] = []
            for _ in 0..<count {
                let peer = try reader.identifier(PeerID.self)
                guard case .event(let event) = try reader.invitationMessage() else { throw .malformedControlBody("an invitation event that is not an event") }
                deliveries.append(InvitationDelivery(to: peer, event: event))
            }
            body = .invitationEvents(deliveries)
        case invitationRequestKind:
            let handle = try reader.uint64()
            let requester = try reader.identifier(PeerID.self)
            let request = try reader.invitationMessage()
            switch request {
            case .accept, .reject, .cancel: break
            default: throw .malformedControlBody("an invitation request that is not accept, reject or cancel")
            }
            body = .invitationRequest(handle: handle, requester: requester, request: request)
        case invitationReplyKind:
            let handle = try reader.uint64()
            let reply = try reader.invitationMessage()
            switch reply {
            case .done, .refused: break
            default: throw .malformedControlBody("an invitation reply that is not done or refused")
            }
            body = .invitationReply(handle: handle, reply: reply)
        case invitationsEndedKind:
            var ids: [InvitationID] = []
            for _ in 0..<Int(try reader.uint64(width: 2)) {
                guard let id = InvitationID(rawValue: try reader.uint64()) else { throw .malformedControlBody("invitation ID 0") }
                ids.append(id)
            }
            body = .invitationsEnded(ids)
        case resendRequestKind, resendGoneKind:
            let from = try reader.uint64()
            let through = try reader.uint64()
            guard from >= 1, from <= through, target != 0 else { throw .malformedControlBody("a resend range \(from)…\(through) for relay \(target)") }
            body = kind == resendRequestKind ? .resendRequest(from: from, through: through) : .resendGone(from: from, through: through)
        default:
            throw .unknownFrameKind(kind)
        }
        guard reader.isAtEnd else { throw .malformedControlBody("\(reader.remaining) bytes after a node message") }
        let message = RelayClusterNodeMessage(node: node, sequence: sequence, target: target, body: body)
        guard !message.isNumbered || sequence != 0 else { throw .malformedControlBody("a numbered node message with sequence 0") }
        return message
    }
}

/// Who is online at a relay: peers with at least one joined connection there.
public struct RelayClusterOnline: Hashable, Sendable {
    /// `joined` is the whole set, or a part of it (it replaces what the receiver knew of the
    /// sender once the last part arrived).
    public var isFull: Bool
    /// The receiver is asked to send its own whole set.
    public var wantsFull: Bool
    /// With `isFull`: another part of the whole set follows.
    public var hasMore: Bool
    /// Peers that came online there (or, with `isFull`, every peer online there).
    public var joined: [PeerID]
    /// Peers that went offline there.
    public var left: [PeerID]

    /// A change, a whole set, or a request for one.
    public init(isFull: Bool = false, wantsFull: Bool = false, hasMore: Bool = false, joined: [PeerID] = [], left: [PeerID] = []) {
        self.isFull = isFull
        self.wantsFull = wantsFull
        self.hasMore = isFull && hasMore
        self.joined = joined
        self.left = left
    }
}

extension ClusterReader {
    /// A u16-length-prefixed invitation message, parsed by its own codec.
    mutating func invitationMessage() throws(WireError) -> InvitationMessage {
        let length = Int(try uint64(width: 2))
        let body = try bytes(length)
        do { return try InvitationMessage.parse(body) } catch { throw .malformedControlBody("invitation message: \(error)") }
    }
}

extension [UInt8] {
    /// A one-byte length, then the identifier's UTF-8 (identifiers are at most 255 bytes).
    mutating func appendIdentifier(_ text: String) {
        let utf8 = Array(text.utf8)
        append(UInt8(clamping: utf8.count))
        self += utf8.prefix(255)
    }

    /// A two-byte length, then `bytes`.
    mutating func appendPrefixed(_ bytes: [UInt8]) {
        appendBigEndian(UInt16(clamping: bytes.count))
        self += bytes.prefix(Int(UInt16.max))
    }
}

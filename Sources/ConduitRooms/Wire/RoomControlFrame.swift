public import ConduitCore

/// Room control: how a client joins, learns who is there, subscribes to subgroups and leaves.
///
/// ```
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +-------+-------+---------------+-------------------------------+
/// |Ver=1  |Kind=4 |     Type      |          Body Length          |  0
/// +-------+-------+---------------+-------------------------------+
/// |                           Body ...                            |  4
/// +---------------------------------------------------------------+
/// ```
///
/// Bodies (strings are a 1-byte length and UTF-8, `member` a 16-bit member number):
///
/// ```
/// join           (c→r)  room, peer, flags(1: bit 0 data sessions supported), token(2-byte length)
/// joined         (r→c)  member(2)
/// refused        (r→c)  refusal(1), text                          then the relay closes the link
/// peers          (r→c)  version(4), snapshot(1), joined count(2) × [member(2) flags(1) peer],
///                       left count(2) × member(2)
/// snapshotRequest(c→r)  (empty)                      a client saw a version gap
/// subscribe      (c→r)  subgroup, flags(1: bit 0 dataSession attribute)
/// subscribed     (r→c)  subgroup, subgroup ID(2), flags(1: bit 0 dataSession attribute)
/// unsubscribe    (c→r)  subgroup
/// unsubscribed   (r→c)  subgroup
/// subscribeRefused(r→c) subgroup, refusal(1)
/// leave          (c→r)  (empty)
/// disconnect     (r→c)  reason(1), text                            then the relay closes the link
/// extension      (both) extension(1), member(2: to upstream, from downstream), body(rest)
/// ping           (c→r)  (empty)                      keeps an idle member from being timed out
/// publishTrack   (c→r)  name, reliability(5: flags as in a track frame, limit(4))
/// trackPublished (r→c)  track ID(2), publisher member(2), name, reliability(5)   to every member
/// unpublishTrack (c→r)  track ID(2)
/// trackUnpublished(r→c) track ID(2)
/// subscribeTrack (c→r)  track ID(2)          data sent from now on is forwarded to this member
/// trackSubscribed(r→c)  track ID(2)
/// unsubscribeTrack(c→r) track ID(2)
/// declareChannels(c→r)  count(1) × declaration                   right after `joined`
/// channels       (r→c)  count(1) × [channel ID(2), declaration]  the answer, with the IDs
///   declaration: label, direction(1), reliability(5), protocol, flags(1: bit 0 compress,
///                bit 1 sender header)
/// ```
///
/// `extension` is the relay's opening for peer-to-peer signalling it does not interpret: the
/// relay checks only that both ends are members of the room, stamps the sender like a data frame,
/// and forwards. Extension 1 is the exception: invitations, addressed to member 0 (the relay
/// itself) and answered by it, never forwarded (see `RelayMachine+Invitations.swift`).
public enum RoomControlFrame: Hashable, Sendable {
    /// Client → relay: join `room` as `peer` with a token.
    case join(room: RoomID, peer: PeerID, dataSessionsSupported: Bool, token: [UInt8])
    /// Relay → client: joined, with the member number the relay gave this connection.
    case joined(member: UInt16)
    /// Relay → client: the join (or a request) was refused, with why.
    case refused(RelayRefusal, String)
    /// Relay → client: a numbered peer-list update or snapshot.
    case peers(PeerListUpdate)
    /// Client → relay: send a snapshot of the peer list (after a gap in version numbers).
    case snapshotRequest
    /// Client → relay: subscribe to a subgroup, creating it with `dataSession` if new.
    case subscribe(SubgroupName, dataSession: Bool)
    /// Relay → client: subscribed, with the subgroup's number on this link and its attribute.
    case subscribed(SubgroupName, id: UInt16, dataSession: Bool)
    /// Client → relay: leave a subgroup.
    case unsubscribe(SubgroupName)
    /// Relay → client: the subgroup was left.
    case unsubscribed(SubgroupName)
    /// Relay → client: a subscription was refused.
    case subscribeRefused(SubgroupName, RelayRefusal)
    /// Client → relay: leave the room.
    case leave
    /// Relay → client: the relay ends the membership (slow receiver, shutdown), with a reason.
    case disconnect(RelayDisconnectReason, String)
    /// Either way: an opaque message between members (member 0 is the relay itself; invitations use extension 1).
    case `extension`(id: UInt8, member: UInt16, body: [UInt8])
    /// Client → relay: keepalive.
    case ping
    /// Client → relay: publish a data track.
    case publishTrack(ChannelLabel, Reliability)
    /// Relay → client: a track was published (also sent to later joiners).
    case trackPublished(TrackInfo)
    /// Client → relay: unpublish a track by its number.
    case unpublishTrack(UInt16)
    /// Relay → client: a track was unpublished.
    case trackUnpublished(UInt16)
    /// Client → relay: subscribe to a track by its number.
    case subscribeTrack(UInt16)
    /// Relay → client: the track subscription is confirmed.
    case trackSubscribed(UInt16)
    /// Client → relay: unsubscribe from a track.
    case unsubscribeTrack(UInt16)
    /// Client → relay: declare labeled channels (right after joining).
    case declareChannels([ChannelDeclaration])
    /// Relay → client: the labeled channels confirmed, with their numbers.
    case channels([ChannelInfo])

    /// Bytes of a room-control frame's fixed header.
    public static let headerSize = 4
    /// Tokens longer than this are refused as malformed before anything else looks at them.
    public static let maxTokenBytes = 2_048
    /// Extension bodies (invitation data and the like) are small by contract.
    public static let maxExtensionBytes = 8_192
    /// Members one peer-list frame may name; larger rooms send several frames.
    public static let maxPeersPerFrame = 256

    enum FrameType: UInt8 {
        case join = 1, joined, refused, peers, snapshotRequest, subscribe, subscribed, unsubscribe,
             unsubscribed, subscribeRefused, leave, disconnect, `extension`, ping,
             publishTrack, trackPublished, unpublishTrack, trackUnpublished, subscribeTrack, trackSubscribed, unsubscribeTrack,
             declareChannels, channels
    }

    /// Channels one member may declare.
    public static let maxChannels = 32

    /// The frame as sent on the wire (kind 4).
    public var encoded: [UInt8] {
        var body: [UInt8] = []
        let type: FrameType
        switch self {
        case .join(let room, let peer, let supported, let token):
            type = .join
            body.appendString8(room.rawValue)
            body.appendString8(peer.rawValue)
            body.append(supported ? 1 : 0)
            body.appendU16(UInt16(clamping: token.count))
            body.append(contentsOf: token.prefix(Int(UInt16.max)))
        case .joined(let member):
            type = .joined
            body.appendU16(member)
        case .refused(let refusal, let text):
            type = .refused
            body.append(refusal.rawValue)
            body.appendString8(text)
        case .peers(let update):
            type = .peers
            body.appendU32(update.version)
            body.append(update.isSnapshot ? 1 : 0)
            body.appendU16(UInt16(update.joined.count))
            for member in update.joined {
                body.appendU16(member.member)
                body.append(member.dataSessionsSupported ? 1 : 0)
                body.appendString8(member.peer.rawValue)
            }
            body.appendU16(UInt16(update.left.count))
            for member in update.left { body.appendU16(member) }
        case .snapshotRequest:
            type = .snapshotRequest
        case .subscribe(let name, let dataSession):
            type = .subscribe
            body.appendString8(name.rawValue)
            body.append(dataSession ? 1 : 0)
        case .subscribed(let name, let id, let dataSession):
            type = .subscribed
            body.appendString8(name.rawValue)
            body.appendU16(id)
            body.append(dataSession ? 1 : 0)
        case .unsubscribe(let name):
            type = .unsubscribe
            body.appendString8(name.rawValue)
        case .unsubscribed(let name):
            type = .unsubscribed
            body.appendString8(name.rawValue)
        case .subscribeRefused(let name, let refusal):
            type = .subscribeRefused
            body.appendString8(name.rawValue)
            body.append(refusal.rawValue)
        case .leave:
            type = .leave
        case .disconnect(let reason, let text):
            type = .disconnect
            body.append(reason.rawValue)
            body.appendString8(text)
        case .extension(let id, let member, let payload):
            type = .extension
            body.append(id)
            body.appendU16(member)
            body.append(contentsOf: payload)
        case .ping:
            type = .ping
        case .publishTrack(let name, let reliability):
            type = .publishTrack
            body.appendString8(name.rawValue)
            body.appendReliability(reliability)
        case .trackPublished(let info):
            type = .trackPublished
            body.appendU16(info.trackID)
            body.appendU16(info.publisher)
            body.appendString8(info.name.rawValue)
            body.appendReliability(info.reliability)
        case .unpublishTrack(let id):
            type = .unpublishTrack
            body.appendU16(id)
        case .trackUnpublished(let id):
            type = .trackUnpublished
            body.appendU16(id)
        case .subscribeTrack(let id):
            type = .subscribeTrack
            body.appendU16(id)
        case .trackSubscribed(let id):
            type = .trackSubscribed
            body.appendU16(id)
        case .unsubscribeTrack(let id):
            type = .unsubscribeTrack
            body.appendU16(id)
        case .declareChannels(let declarations):
            type = .declareChannels
            body.append(UInt8(declarations.count))
            for declaration in declarations { body.appendDeclaration(declaration) }
        case .channels(let infos):
            type = .channels
            body.append(UInt8(infos.count))
            for info in infos {
                body.appendU16(info.channelID)
                body.appendDeclaration(info.declaration)
            }
        }
        var out: [UInt8] = [WireVersion.current << 4 | RelayFrameKind.room.rawValue, type.rawValue]
        out.reserveCapacity(Self.headerSize + body.count)
        out.appendU16(UInt16(clamping: body.count))
        out.append(contentsOf: body)
        return out
    }

    /// Parses one room control frame. Unknown types, bodies that disagree with their length,
    /// invalid identifiers and oversize tokens are typed errors.
    public static func parse(_ datagram: UnsafeRawBufferPointer) throws(WireError) -> RoomControlFrame {
        guard datagram.count >= headerSize else { throw .truncated(needed: headerSize, got: datagram.count) }
        let first = datagram.readU8(0)
        guard first >> 4 == WireVersion.current else { throw .unsupportedVersion(first >> 4) }
        guard first & 0x0F == RelayFrameKind.room.rawValue else { throw .unknownFrameKind(first & 0x0F) }
        guard let type = FrameType(rawValue: datagram.readU8(1)) else { throw .unknownControlType(datagram.readU8(1)) }
        let length = Int(datagram.readU16(2))
        guard datagram.count == headerSize + length else {
            throw .malformedControlBody("body length \(length) but \(datagram.count - headerSize) bytes follow")
        }
        var body = RoomBodyReader(UnsafeRawBufferPointer(rebasing: datagram[headerSize...]))
        let frame: RoomControlFrame
        switch type {
        case .join:
            let room = try body.identifier(RoomID.self)
            let peer = try body.identifier(PeerID.self)
            let flags = try body.u8("flags")
            guard flags & ~1 == 0 else { throw .reservedBitsSet }
            let tokenLength = Int(try body.u16("token length"))
            guard tokenLength <= maxTokenBytes else {
                throw .malformedControlBody("token of \(tokenLength) bytes exceeds \(maxTokenBytes)")
            }
            frame = .join(room: room, peer: peer, dataSessionsSupported: flags & 1 == 1, token: try body.raw(tokenLength, "token"))
        case .joined:
            frame = .joined(member: try body.u16("member"))
        case .refused:
            let raw = try body.u8("refusal")
            guard let refusal = RelayRefusal(rawValue: raw) else { throw .malformedControlBody("unknown refusal \(raw)") }
            frame = .refused(refusal, try body.string8("text"))
        case .peers:
            let version = try body.u32("version")
            let snapshot = try body.u8("snapshot flag")
            guard snapshot & ~1 == 0 else { throw .reservedBitsSet }
            let joinedCount = Int(try body.u16("joined count"))
            guard joinedCount <= maxPeersPerFrame else { throw .malformedControlBody("\(joinedCount) joined peers in one frame") }
            var joined: [RoomMember] = []
            for _ in 0..<joinedCount {
                let member = try body.u16("member")
                let flags = try body.u8("member flags")
                guard flags & ~1 == 0 else { throw .reservedBitsSet }
                joined.append(RoomMember(member: member, peer: try body.identifier(PeerID.self), dataSessionsSupported: flags & 1 == 1))
            }
            let leftCount = Int(try body.u16("left count"))
            guard leftCount <= maxPeersPerFrame else { throw .malformedControlBody("\(leftCount) left peers in one frame") }
            var left: [UInt16] = []
            for _ in 0..<leftCount { left.append(try body.u16("left member")) }
            frame = .peers(PeerListUpdate(version: version, isSnapshot: snapshot == 1, joined: joined, left: left))
        case .snapshotRequest:
            frame = .snapshotRequest
        case .subscribe:
            let name = try body.identifier(SubgroupName.self)
            let flags = try body.u8("flags")
            guard flags & ~1 == 0 else { throw .reservedBitsSet }
            frame = .subscribe(name, dataSession: flags == 1)
        case .subscribed:
            let name = try body.identifier(SubgroupName.self)
            let id = try body.u16("subgroup ID")
            guard id != 0 else { throw .malformedControlBody("subgroup ID 0 is the main room") }
            let flags = try body.u8("flags")
            guard flags & ~1 == 0 else { throw .reservedBitsSet }
            frame = .subscribed(name, id: id, dataSession: flags == 1)
        case .unsubscribe:
            frame = .unsubscribe(try body.identifier(SubgroupName.self))
        case .unsubscribed:
            frame = .unsubscribed(try body.identifier(SubgroupName.self))
        case .subscribeRefused:
            let name = try body.identifier(SubgroupName.self)
            let raw = try body.u8("refusal")
            guard let refusal = RelayRefusal(rawValue: raw) else { throw .malformedControlBody("unknown refusal \(raw)") }
            frame = .subscribeRefused(name, refusal)
        case .leave:
            frame = .leave
        case .disconnect:
            let raw = try body.u8("reason")
            guard let reason = RelayDisconnectReason(rawValue: raw) else { throw .malformedControlBody("unknown reason \(raw)") }
            frame = .disconnect(reason, try body.string8("text"))
        case .extension:
            let id = try body.u8("extension")
            let member = try body.u16("member")
            let rest = body.bytes.count - body.offset
            guard rest <= maxExtensionBytes else { throw .malformedControlBody("extension body of \(rest) bytes exceeds \(maxExtensionBytes)") }
            frame = .extension(id: id, member: member, body: try body.raw(rest, "extension body"))
        case .ping:
            frame = .ping
        case .publishTrack:
            frame = .publishTrack(try body.identifier(ChannelLabel.self), try body.reliability())
        case .trackPublished:
            let id = try body.u16("track ID")
            let publisher = try body.u16("publisher")
            let name = try body.identifier(ChannelLabel.self)
            frame = .trackPublished(TrackInfo(trackID: id, publisher: publisher, name: name, reliability: try body.reliability()))
        case .unpublishTrack:
            frame = .unpublishTrack(try body.u16("track ID"))
        case .trackUnpublished:
            frame = .trackUnpublished(try body.u16("track ID"))
        case .subscribeTrack:
            frame = .subscribeTrack(try body.u16("track ID"))
        case .trackSubscribed:
            frame = .trackSubscribed(try body.u16("track ID"))
        case .unsubscribeTrack:
            frame = .unsubscribeTrack(try body.u16("track ID"))
        case .declareChannels:
            let count = Int(try body.u8("channel count"))
            guard count <= maxChannels else { throw .malformedControlBody("\(count) channels declared; at most \(maxChannels)") }
            var declarations: [ChannelDeclaration] = []
            for _ in 0..<count { declarations.append(try body.declaration()) }
            frame = .declareChannels(declarations)
        case .channels:
            let count = Int(try body.u8("channel count"))
            guard count <= maxChannels else { throw .malformedControlBody("\(count) channels; at most \(maxChannels)") }
            var infos: [ChannelInfo] = []
            for _ in 0..<count {
                let id = try body.u16("channel ID")
                infos.append(ChannelInfo(channelID: id, declaration: try body.declaration()))
            }
            frame = .channels(infos)
        }
        try body.finish("\(type)")
        return frame
    }

    /// Parses a room-control frame. Throws `WireError` for a truncated, unknown or malformed frame.
    public static func parse(_ bytes: [UInt8]) throws(WireError) -> RoomControlFrame {
        let result: Result<RoomControlFrame, WireError> = bytes.withUnsafeBytes { raw in
            Result { () throws(WireError) in try parse(raw) }
        }
        return try result.get()
    }
}

/// One member of a room as the peer list names it.
public struct RoomMember: Hashable, Sendable {
    /// The relay's number for this member: what envelopes carry (Sora's connection ID).
    public var member: UInt16
    /// The member's peer ID.
    public var peer: PeerID
    /// `isDataSessionSupported` of LINE Planet's `PlanetKitConferencePeer`.
    public var dataSessionsSupported: Bool

    /// Makes a member entry.
    public init(member: UInt16, peer: PeerID, dataSessionsSupported: Bool) {
        self.member = member
        self.peer = peer
        self.dataSessionsSupported = dataSessionsSupported
    }
}

/// A versioned change to the peer list. Updates are numbered 1, 2, 3...; a client that sees a
/// number other than the next one asks for a snapshot (the whole list, at the current version).
public struct PeerListUpdate: Hashable, Sendable {
    /// The update's number; a gap means updates were missed and a snapshot is needed.
    public var version: UInt32
    /// True if `joined` is the whole list rather than a change.
    public var isSnapshot: Bool
    /// Members that joined (or, in a snapshot, every member).
    public var joined: [RoomMember]
    /// Member numbers that left.
    public var left: [UInt16]

    /// Makes an update.
    public init(version: UInt32, isSnapshot: Bool, joined: [RoomMember], left: [UInt16]) {
        self.version = version
        self.isSnapshot = isSnapshot
        self.joined = joined
        self.left = left
    }
}

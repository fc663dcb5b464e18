public import ConduitCore
public import ConduitRooms

/// A relay of a cluster, named by a random number it draws when it starts (a restarted relay is
/// a new node: its sequence numbers start again under a new name).
public struct RelayNodeID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The number (never 0: 0 means "every relay" in a data message's target).
    public let rawValue: UInt64
    /// Wraps a node number.
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    /// A fresh random node number.
    public static func random() -> RelayNodeID { RelayNodeID(.random(in: 1 ... .max)) }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { String(rawValue, radix: 16) }
}

/// One message between relays, on the room's NATS subject (`docs/wire-format.md`, "Relay
/// cluster"). Every message a node sends about one room carries that room stream's epoch and
/// sequence number, so receivers detect what NATS core (at most once) lost.
public struct RelayClusterMessage: Hashable, Sendable {
    /// What the message says.
    public enum Body: Hashable, Sendable {
        /// The sender's complete list of the room's members connected to it, by their member
        /// numbers there (an empty list: none any more). `wantsReply`: every other relay with members in the room answers with its own.
        /// `holdingBack`: a receiver there is full, so the room's senders everywhere are to wait
        /// (the pressure state travels with every presence, so a lost `pressure` is repaired by the next one).
        case presence(members: [RoomMember], wantsReply: Bool, holdingBack: Bool = false)
        /// A routed frame from `origin` (its member number on the sending relay), as relayed
        /// (envelope restamped from `origin`). `targetNode` 0 and `targetMember` 0: every member on
        /// every relay; otherwise the one member `targetMember` of relay `targetNode`.
        case data(origin: UInt16, targetNode: UInt64, targetMember: UInt16, frame: [UInt8])
        /// The sender's complete list of the room's subgroups that its members are subscribed to,
        /// by its own subgroup numbers (which its members' subgroup frames carry), and who is
        /// subscribed (an empty list: nobody any more). Sent after every presence and whenever a
        /// subscription there changes.
        case subgroups([RelayClusterSubgroup])
        /// The sender's complete list of the room's labeled channels its members declared, by its
        /// own channel numbers (which its members' channel frames carry), with each member's
        /// direction (an empty list: none any more). Sent after every presence and whenever a
        /// member there declares channels.
        case channels([RelayClusterChannel])
        /// The data tracks the sender's members published (by its own track and member numbers),
        /// and the other relays' tracks its members subscribe to (by the publishing relay's
        /// numbers): the complete lists, sent after every presence and whenever one changes there.
        case tracks(published: [TrackInfo], subscribed: [RelayClusterTrackKey])
        /// A member's room-control `extension` frame (never extension 1, the relay's own) for one
        /// member `targetMember` of relay `targetNode`, from `origin` (its number on the sending relay).
        case `extension`(origin: UInt16, targetNode: UInt64, targetMember: UInt16, id: UInt8, body: [UInt8])
        /// Whether a receiver of the sending relay holds the room back now (backpressure across
        /// relays): sent when that changes; every relay's senders in the room wait while one says so.
        case pressure(holdingBack: Bool)
    }

    /// The sending relay.
    public var node: RelayNodeID
    /// The room.
    public var room: RoomID
    /// The sender's stream for this room: a new epoch each time the room starts on that relay.
    public var epoch: UInt32
    /// 1, 2, 3… within the epoch, over every message of the stream.
    public var sequence: UInt64
    /// How many data messages the stream has carried so far, this one included: a receiver
    /// that finds more than it took knows routed data was lost, not just an announcement (which
    /// the next one repairs).
    public var dataCount: UInt64
    /// What it says.
    public var body: Body

    /// A message.
    public init(node: RelayNodeID, room: RoomID, epoch: UInt32, sequence: UInt64, dataCount: UInt64 = 0, body: Body) {
        self.node = node
        self.room = room
        self.epoch = epoch
        self.sequence = sequence
        self.dataCount = dataCount
        self.body = body
    }

    /// The version byte every message starts with.
    public static let version: UInt8 = 1
    static let presenceKind: UInt8 = 1
    static let dataKind: UInt8 = 2
    static let subgroupsKind: UInt8 = 4
    static let channelsKind: UInt8 = 5
    static let tracksKind: UInt8 = 6
    static let extensionKind: UInt8 = 7
    static let pressureKind: UInt8 = 8

    /// The NATS subject of a room's messages: `conduit.relay.room.` and the room ID's UTF-8 in hex
    /// (room IDs may hold any character; subjects may not).
    public static func subject(for room: RoomID) -> String {
        subjectPrefix + room.rawValue.utf8.map { byte in
            let digits = Array("0123456789abcdef".utf8)
            return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0xF)]], as: UTF8.self)
        }.joined()
    }

    /// What every room subject starts with (a relay subscribes to `conduit.relay.>`: every room
    /// and the token uses).
    public static let subjectPrefix = "conduit.relay.room."

    /// The message's bytes.
    public var encoded: [UInt8] {
        var bytes: [UInt8] = [Self.version]
        let roomBytes = Array(room.rawValue.utf8)
        switch body {
        case .presence: bytes.append(Self.presenceKind)
        case .data: bytes.append(Self.dataKind)
        case .subgroups: bytes.append(Self.subgroupsKind)
        case .channels: bytes.append(Self.channelsKind)
        case .tracks: bytes.append(Self.tracksKind)
        case .extension: bytes.append(Self.extensionKind)
        case .pressure: bytes.append(Self.pressureKind)
        }
        bytes.appendBigEndian(node.rawValue)
        bytes.appendBigEndian(epoch)
        bytes.appendBigEndian(sequence)
        bytes.appendBigEndian(dataCount)
        bytes.append(UInt8(roomBytes.count))
        bytes += roomBytes
        switch body {
        case .presence(let members, let wantsReply, let holdingBack):
            bytes.append((wantsReply ? 1 : 0) | (holdingBack ? 2 : 0))
            bytes.appendBigEndian(UInt16(members.count))
            for member in members {
                let peer = Array(member.peer.rawValue.utf8)
                bytes.appendBigEndian(member.member)
                bytes.append(member.dataSessionsSupported ? 1 : 0)
                bytes.append(UInt8(peer.count))
                bytes += peer
            }
        case .data(let origin, let targetNode, let targetMember, let frame):
            bytes.appendBigEndian(origin)
            bytes.appendBigEndian(targetNode)
            bytes.appendBigEndian(targetMember)
            bytes += frame
        case .subgroups(let subgroups):
            bytes.appendBigEndian(UInt16(subgroups.count))
            for subgroup in subgroups {
                let name = Array(subgroup.name.rawValue.utf8)
                bytes.appendBigEndian(subgroup.id)
                bytes.append(subgroup.dataSession ? 1 : 0)
                bytes.append(UInt8(name.count))
                bytes += name
                bytes.appendBigEndian(UInt16(subgroup.subscribers.count))
                for member in subgroup.subscribers { bytes.appendBigEndian(member) }
            }
        case .channels(let channels):
            bytes.appendBigEndian(UInt16(channels.count))
            for channel in channels {
                // The declaration as a room-control declareChannels frame (its codec, its checks).
                let declaration = RoomControlFrame.declareChannels([channel.declaration]).encoded
                bytes.appendBigEndian(channel.id)
                bytes.appendBigEndian(UInt16(declaration.count))
                bytes += declaration
                bytes.appendBigEndian(UInt16(channel.directions.count))
                for (member, direction) in channel.directions.sorted(by: { $0.key < $1.key }) {
                    bytes.appendBigEndian(member)
                    bytes.append(direction.rawValue)
                }
            }
        case .tracks(let published, let subscribed):
            bytes.appendBigEndian(UInt16(published.count))
            for info in published {
                // The track as a room-control trackPublished frame (its codec, its checks).
                let announcement = RoomControlFrame.trackPublished(info).encoded
                bytes.appendBigEndian(UInt16(announcement.count))
                bytes += announcement
            }
            bytes.appendBigEndian(UInt16(subscribed.count))
            for key in subscribed {
                bytes.appendBigEndian(key.node.rawValue)
                bytes.appendBigEndian(key.track)
            }
        case .extension(let origin, let targetNode, let targetMember, let id, let body):
            bytes.appendBigEndian(origin)
            bytes.appendBigEndian(targetNode)
            bytes.appendBigEndian(targetMember)
            bytes.append(id)
            bytes += body
        case .pressure(let holdingBack):
            bytes.append(holdingBack ? 1 : 0)
        }
        return bytes
    }

    /// Reads a message; anything malformed is a typed error, never a trap.
    public static func parse(_ bytes: [UInt8]) throws(WireError) -> RelayClusterMessage {
        var reader = ClusterReader(bytes: bytes)
        let version = try reader.byte()
        guard version == Self.version else { throw .unsupportedVersion(version) }
        let kind = try reader.byte()
        let node = RelayNodeID(try reader.uint64())
        let epoch = UInt32(truncatingIfNeeded: try reader.uint64(width: 4))
        let sequence = try reader.uint64()
        let dataCount = try reader.uint64()
        let room = try reader.identifier(RoomID.self)
        let body: Body
        switch kind {
        case presenceKind:
            let flags = try reader.byte()
            guard flags & ~3 == 0 else { throw .reservedBitsSet }
            let count = Int(try reader.uint64(width: 2))
            var members: [RoomMember] = []
            for _ in 0..<count {
                let member = UInt16(try reader.uint64(width: 2))
                let supported = try reader.byte()
                guard supported <= 1 else { throw .reservedBitsSet }
                members.append(RoomMember(member: member, peer: try reader.identifier(PeerID.self), dataSessionsSupported: supported == 1))
            }
            body = .presence(members: members, wantsReply: flags & 1 != 0, holdingBack: flags & 2 != 0)
        case dataKind:
            let origin = UInt16(try reader.uint64(width: 2))
            let targetNode = try reader.uint64()
            let targetMember = UInt16(try reader.uint64(width: 2))
            body = .data(origin: origin, targetNode: targetNode, targetMember: targetMember, frame: reader.rest())
        case subgroupsKind:
            var subgroups: [RelayClusterSubgroup] = []
            for _ in 0..<Int(try reader.uint64(width: 2)) {
                let id = UInt16(try reader.uint64(width: 2))
                let dataSession = try reader.byte()
                guard id != 0, dataSession <= 1 else { throw .reservedBitsSet }
                let name = try reader.identifier(SubgroupName.self)
                var subscribers: [UInt16] = []
                for _ in 0..<Int(try reader.uint64(width: 2)) { subscribers.append(UInt16(try reader.uint64(width: 2))) }
                subgroups.append(RelayClusterSubgroup(id: id, name: name, dataSession: dataSession == 1, subscribers: subscribers))
            }
            body = .subgroups(subgroups)
        case channelsKind:
            var channels: [RelayClusterChannel] = []
            for _ in 0..<Int(try reader.uint64(width: 2)) {
                let id = UInt16(try reader.uint64(width: 2))
                guard id != 0 else { throw .reservedBitsSet }
                let length = Int(try reader.uint64(width: 2))
                guard case .declareChannels(let declared) = try RoomControlFrame.parse(try reader.bytes(length)), declared.count == 1 else {
                    throw .malformedControlBody("a cluster channel's declaration is not one declareChannels declaration")
                }
                var directions: [UInt16: ChannelDeclaration.Direction] = [:]
                for _ in 0..<Int(try reader.uint64(width: 2)) {
                    let member = UInt16(try reader.uint64(width: 2))
                    let raw = try reader.byte()
                    guard let direction = ChannelDeclaration.Direction(rawValue: raw), directions[member] == nil else {
                        throw .malformedControlBody("a cluster channel member's direction \(raw) is unknown or repeated")
                    }
                    directions[member] = direction
                }
                channels.append(RelayClusterChannel(id: id, declaration: declared[0], directions: directions))
            }
            body = .channels(channels)
        case tracksKind:
            var published: [TrackInfo] = []
            for _ in 0..<Int(try reader.uint64(width: 2)) {
                let length = Int(try reader.uint64(width: 2))
                guard case .trackPublished(let info) = try RoomControlFrame.parse(try reader.bytes(length)) else {
                    throw .malformedControlBody("a cluster track is not a trackPublished frame")
                }
                published.append(info)
            }
            var subscribed: [RelayClusterTrackKey] = []
            for _ in 0..<Int(try reader.uint64(width: 2)) {
                let node = RelayNodeID(try reader.uint64())
                subscribed.append(RelayClusterTrackKey(node: node, track: UInt16(try reader.uint64(width: 2))))
            }
            body = .tracks(published: published, subscribed: subscribed)
        case extensionKind:
            let origin = UInt16(try reader.uint64(width: 2))
            let targetNode = try reader.uint64()
            let targetMember = UInt16(try reader.uint64(width: 2))
            let id = try reader.byte()
            let content = reader.rest()
            // Extension 1 is the relay's own (invitations): never a member's; and a member's
            // extension goes to one member, which a room-control frame can carry.
            guard id != InvitationExtension.id, targetNode != 0, targetMember != 0, content.count <= RoomControlFrame.maxExtensionBytes else {
                throw .malformedControlBody("a cluster extension is for one member, not extension \(InvitationExtension.id), at most \(RoomControlFrame.maxExtensionBytes) bytes")
            }
            body = .extension(origin: origin, targetNode: targetNode, targetMember: targetMember, id: id, body: content)
        case pressureKind:
            let flags = try reader.byte()
            guard flags & ~1 == 0 else { throw .reservedBitsSet }
            body = .pressure(holdingBack: flags == 1)
        default:
            throw .unknownFrameKind(kind)
        }
        guard reader.isAtEnd else { throw .malformedControlBody("\(reader.remaining) bytes after a cluster message") }
        return RelayClusterMessage(node: node, room: room, epoch: epoch, sequence: sequence, dataCount: dataCount, body: body)
    }
}

/// A subgroup of a room as one relay of the cluster numbers it, and which of that relay's
/// members are subscribed to it.
public struct RelayClusterSubgroup: Hashable, Sendable {
    /// The sending relay's number for it (never 0, the main room).
    public var id: UInt16
    /// Its name: the same subgroup on every relay.
    public var name: SubgroupName
    /// Its `dataSession` attribute, as its first subscriber set it.
    public var dataSession: Bool
    /// The sending relay's members subscribed to it, by their member numbers there.
    public var subscribers: [UInt16]

    /// A subgroup as a relay announces it.
    public init(id: UInt16, name: SubgroupName, dataSession: Bool, subscribers: [UInt16]) {
        self.id = id
        self.name = name
        self.dataSession = dataSession
        self.subscribers = subscribers
    }
}

/// A labeled channel of a room as one relay of the cluster numbers it, and the directions that
/// relay's members declared it with.
public struct RelayClusterChannel: Hashable, Sendable {
    /// The sending relay's number for it (never 0).
    public var id: UInt16
    /// Its options as its first declarer set them (the same channel on every relay by its label;
    /// the direction here means nothing).
    public var declaration: ChannelDeclaration
    /// The sending relay's members that declared it, by their member numbers there.
    public var directions: [UInt16: ChannelDeclaration.Direction]

    /// A channel as a relay announces it.
    public init(id: UInt16, declaration: ChannelDeclaration, directions: [UInt16: ChannelDeclaration.Direction]) {
        self.id = id
        self.declaration = declaration
        self.directions = directions
    }
}

/// A data track of another relay: that relay, and its number for the track.
public struct RelayClusterTrackKey: Hashable, Sendable {
    /// The relay whose member published the track.
    public var node: RelayNodeID
    /// That relay's number for it.
    public var track: UInt16

    /// A track of relay `node`.
    public init(node: RelayNodeID, track: UInt16) {
        self.node = node
        self.track = track
    }
}

/// Reads the big-endian fields of cluster messages; every shortfall is a typed error.
struct ClusterReader {
    let bytes: [UInt8]
    var offset = 0

    var isAtEnd: Bool { offset == bytes.count }
    var remaining: Int { bytes.count - offset }

    mutating func byte() throws(WireError) -> UInt8 {
        guard offset < bytes.count else { throw .truncated(needed: offset + 1, got: bytes.count) }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func uint64(width: Int = 8) throws(WireError) -> UInt64 {
        guard remaining >= width else { throw .truncated(needed: offset + width, got: bytes.count) }
        var value: UInt64 = 0
        for _ in 0..<width { value = value << 8 | UInt64(bytes[offset]); offset += 1 }
        return value
    }

    /// A length-prefixed (one byte) identifier, validated as its type requires.
    mutating func identifier<Identifier: ValidatedIdentifier>(_ type: Identifier.Type) throws(WireError) -> Identifier {
        let count = Int(try byte())
        guard remaining >= count else { throw .truncated(needed: offset + count, got: bytes.count) }
        // Strict: bytes that are not UTF-8 are refused, never mapped to U+FFFD (two different
        // byte strings would name the same peer or room).
        guard let text = String(validating: bytes[offset..<offset + count], as: UTF8.self) else {
            throw .malformedControlBody("\(Identifier.kind) is not UTF-8")
        }
        offset += count
        do { return try Identifier(text) } catch { throw .malformedControlBody("invalid \(Identifier.kind): \(error)") }
    }

    mutating func bytes(_ count: Int) throws(WireError) -> [UInt8] {
        guard remaining >= count else { throw .truncated(needed: offset + count, got: bytes.count) }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    mutating func rest() -> [UInt8] {
        defer { offset = bytes.count }
        return Array(bytes[offset...])
    }
}

extension [UInt8] {
    mutating func appendBigEndian<Value: FixedWidthInteger>(_ value: Value) {
        Swift.withUnsafeBytes(of: value.bigEndian) { append(contentsOf: $0) }
    }
}

public import ConduitCore
import ConduitRooms

/// One record of the cluster's roster (`docs/wire-format.md`, "Relay roster"): who joined or left
/// which room at which relay, or that a relay is gone. Relays append records to one JetStream
/// stream and every relay reads them back in the stream's order (``RelayRosterLog``).
///
/// ```
///  0        1        2                   10                  18
/// +--------+--------+-------------------+-------------------+-------+------------+-----------+
/// | version|  kind  |   node (UInt64)   |  ticket (UInt64)  | flags | room (len8)| peer (len8)|
/// +--------+--------+-------------------+-------------------+-------+------------+-----------+
///  joined (kind 1): everything; left (kind 2): up to the ticket, then the room;
///  nodeGone (kind 3): up to the node. Big-endian; flags bit 0: data sessions supported.
/// ```
public enum RelayRosterRecord: Hashable, Sendable {
    /// `peer` joined `room` at relay `node`, which numbered the join `ticket`.
    case joined(room: RoomID, node: RelayNodeID, ticket: UInt64, peer: PeerID, dataSessionsSupported: Bool)
    /// The member `node` admitted under `ticket` left `room`.
    case left(room: RoomID, node: RelayNodeID, ticket: UInt64)
    /// Relay `node` is gone: every member it held left every room.
    case nodeGone(RelayNodeID)

    /// The roster's subjects: one per room (so that an emptied room's records can be removed,
    /// ``RelayRosterPurge``) and one for `nodeGone`, all in one stream, so in one order.
    public static let subjects = "conduit.roster.>"
    /// The subject of `nodeGone` records.
    public static let nodeSubject = "conduit.roster.node"

    /// The subject of `room`'s records: its name in hexadecimal (any name, as one subject token;
    /// at most 256 characters).
    public static func subject(ofRoom room: RoomID) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var token: [UInt8] = []
        token.reserveCapacity(room.rawValue.utf8.count * 2)
        for byte in room.rawValue.utf8 { token += [digits[Int(byte >> 4)], digits[Int(byte & 0xF)]] }
        return "conduit.roster.room." + String(decoding: token, as: UTF8.self)
    }

    /// The subject it is appended on.
    public var subject: String {
        room.map(Self.subject(ofRoom:)) ?? Self.nodeSubject
    }
    /// The JetStream stream that keeps it.
    public static let streamName = "CONDUIT_ROSTER"
    static let version: UInt8 = 1
    static let joinedKind: UInt8 = 1
    static let leftKind: UInt8 = 2
    static let nodeGoneKind: UInt8 = 3

    /// The relay it is about: the one that admitted the member (its own records complete its
    /// own joins), or the one gone.
    public var node: RelayNodeID {
        switch self {
        case .joined(_, let node, _, _, _), .left(_, let node, _), .nodeGone(let node): node
        }
    }

    /// The room it is about, or nil for a `nodeGone` (about every room).
    public var room: RoomID? {
        switch self {
        case .joined(let room, _, _, _, _), .left(let room, _, _): room
        case .nodeGone: nil
        }
    }

    /// What it says about its room (every room, for `nodeGone`).
    public var event: RelayRosterLog.Event {
        switch self {
        case .joined(_, let node, let ticket, let peer, let supported): .joined(node: node, ticket: ticket, peer: peer, dataSessionsSupported: supported)
        case .left(_, let node, let ticket): .left(node: node, ticket: ticket)
        case .nodeGone(let node): .nodeGone(node)
        }
    }

    /// The record's bytes.
    public var encoded: [UInt8] {
        var bytes: [UInt8] = [Self.version]
        func identifier(_ text: String) {
            let utf8 = Array(text.utf8)
            bytes.append(UInt8(utf8.count))
            bytes += utf8
        }
        switch self {
        case .joined(let room, let node, let ticket, let peer, let supported):
            bytes.append(Self.joinedKind)
            bytes.appendBigEndian(node.rawValue)
            bytes.appendBigEndian(ticket)
            bytes.append(supported ? 1 : 0)
            identifier(room.rawValue)
            identifier(peer.rawValue)
        case .left(let room, let node, let ticket):
            bytes.append(Self.leftKind)
            bytes.appendBigEndian(node.rawValue)
            bytes.appendBigEndian(ticket)
            identifier(room.rawValue)
        case .nodeGone(let node):
            bytes.append(Self.nodeGoneKind)
            bytes.appendBigEndian(node.rawValue)
        }
        return bytes
    }

    /// Reads a record; anything malformed (short, unknown kind, bad name, bytes left over) is a
    /// typed error, never a trap.
    public static func parse(_ bytes: [UInt8]) throws(WireError) -> RelayRosterRecord {
        var reader = ClusterReader(bytes: bytes)
        let version = try reader.byte()
        guard version == Self.version else { throw .unsupportedVersion(version) }
        let kind = try reader.byte()
        let node = RelayNodeID(try reader.uint64())
        guard node.rawValue != 0 else { throw .malformedControlBody("roster record from node 0") }
        let record: RelayRosterRecord
        switch kind {
        case joinedKind:
            let ticket = try reader.uint64()
            let flags = try reader.byte()
            guard flags <= 1 else { throw .malformedControlBody("roster flags \(flags)") }
            let room = try reader.identifier(RoomID.self)
            let peer = try reader.identifier(PeerID.self)
            record = .joined(room: room, node: node, ticket: ticket, peer: peer, dataSessionsSupported: flags == 1)
        case leftKind:
            let ticket = try reader.uint64()
            record = .left(room: try reader.identifier(RoomID.self), node: node, ticket: ticket)
        case nodeGoneKind:
            record = .nodeGone(node)
        default:
            throw .unknownFrameKind(kind)
        }
        guard reader.isAtEnd else { throw .malformedControlBody("\(reader.remaining) bytes after a roster record") }
        return record
    }
}

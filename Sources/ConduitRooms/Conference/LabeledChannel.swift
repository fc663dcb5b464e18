public import ConduitCore

/// A Sora-style labeled channel, declared when joining (`Configuration.dataChannels`): every member
/// that declares the same label shares the channel; what one sends, the others that receive on
/// it get, each message with an optional header naming its sender.
public struct ChannelDeclaration: Hashable, Sendable {
    /// Which way a member uses a labeled channel (Sora `direction`).
    public enum Direction: UInt8, Sendable, Hashable, CustomStringConvertible {
        /// Sends and receives.
        case sendrecv = 0
        /// Sends only; receives nothing on the channel.
        case sendonly = 1
        /// Receives only; sending is refused (`receiveOnly`).
        case recvonly = 2

        /// Parses `sendrecv`, `sendonly` or `recvonly`; throws `invalidConfiguration` otherwise.
        public init(parsing text: String) throws(ConduitError) {
            switch text {
            case "sendrecv": self = .sendrecv
            case "sendonly": self = .sendonly
            case "recvonly": self = .recvonly
            default: throw ConduitError(.invalidConfiguration, "direction '\(text)' is not sendrecv, sendonly or recvonly")
            }
        }

        /// Whether a member with this direction may send.
        public var sends: Bool { self != .recvonly }
        /// Whether a member with this direction receives what others send.
        public var receives: Bool { self != .sendonly }
        public var description: String {
            switch self {
            case .sendrecv: "sendrecv"
            case .sendonly: "sendonly"
            case .recvonly: "recvonly"
            }
        }
    }

    /// The channel's label; must start with `#`.
    public var label: ChannelLabel
    /// Whether this member sends, receives, or both.
    public var direction: Direction
    /// `ordered`, and `max_retransmits` or `max_packet_life_time` (not both).
    public var reliability: Reliability
    /// The subprotocol (Sora `protocol`), at most 255 bytes; empty if none.
    public var protocolName: String
    /// Messages are zlib-compressed on the wire (Sora `compress`).
    public var compress: Bool
    /// Receivers get each message prefixed with the sender's connection ID, a fixed-length header
    /// (Sora `header: [{type: sender_connection_id}]`; its length is announced when joining).
    public var senderHeader: Bool

    /// Refuses labels that do not start with `#` (Sora's rule for application channels) and
    /// protocols longer than 255 bytes.
    public init(label: ChannelLabel, direction: Direction = .sendrecv, reliability: Reliability = .reliableOrdered,
                protocolName: String = "", compress: Bool = false, senderHeader: Bool = false) throws(ConduitError) {
        guard label.isApplicationLabel else {
            throw ConduitError(.invalidIdentifier, "labeled channel '\(label)' must start with '#'")
        }
        guard protocolName.utf8.count <= 255 else { throw ConduitError(.invalidIdentifier, "protocol is longer than 255 bytes") }
        self.init(unchecked: label, direction: direction, reliability: reliability, protocolName: protocolName, compress: compress, senderHeader: senderHeader)
    }

    init(unchecked label: ChannelLabel, direction: Direction, reliability: Reliability, protocolName: String, compress: Bool, senderHeader: Bool) {
        self.label = label
        self.direction = direction
        self.reliability = reliability
        self.protocolName = protocolName
        self.compress = compress
        self.senderHeader = senderHeader
    }

    /// Everything but the direction must agree among the members that declare a label.
    public func agrees(with other: ChannelDeclaration) -> Bool {
        label == other.label && reliability == other.reliability && protocolName == other.protocolName
            && compress == other.compress && senderHeader == other.senderHeader
    }
}

/// The relay's answer to a member's declarations: the channel's wire ID and the header length.
public struct ChannelInfo: Hashable, Sendable {
    /// The number the relay gave the channel in the room; frames carry it.
    public var channelID: UInt16
    /// The options the channel was confirmed with (the first declaration of its label).
    public var declaration: ChannelDeclaration
    /// Bytes of sender header in front of each received message (0 without one).
    public var headerLength: Int { declaration.senderHeader ? ChannelFrameHeader.senderHeaderLength : 0 }

    /// Makes the info of a confirmed channel.
    public init(channelID: UInt16, declaration: ChannelDeclaration) {
        self.channelID = channelID
        self.declaration = declaration
    }
}

/// A labeled-channel frame: one fragment of one message.
///
/// ```
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +-------+-------+-+-+-+-+-------+-------------------------------+
/// |Ver=1  |Kind=6 |O| L |Z| Rsv   |          Channel ID           |  0
/// +-------+-------+-+-+-+-+-------+-------------------------------+
/// |          Limit: max retransmits, or remaining lifetime (ms)   |  4
/// +-------------------------------+-------------------------------+
/// |  Sender (0 upstream; the relay|         Reserved (= 0)        |  8
/// |  writes the sender's member)  |                               |
/// +-------------------------------+-------------------------------+
/// |        v1 data frame: one fragment (stream 100, subgroup =    | 12
/// |        channel ID, message IDs per sender) ...                |
/// +---------------------------------------------------------------+
///   O: ordered   L: 0 reliable, 1 maxRetransmits, 2 maxPacketLifeTime   Z: payload is zlib
/// ```
///
/// The relay does not reassemble, so it cannot put a header in front of a message; it stamps the
/// sender into every fragment instead, and the receiving client puts the fixed-length header
/// (the sender's member number, big-endian, ``senderHeaderLength`` bytes) in front of the message
/// it hands the app: the app sees what Sora's receivers see.
public struct ChannelFrameHeader: Hashable, Sendable {
    /// Bytes of the header before every labeled-channel fragment.
    public static let size = 12
    /// Bytes of the sender header receivers get with `senderHeader`: the sender's member number, big-endian.
    public static let senderHeaderLength = 2
    /// The largest message a labeled channel takes, in bytes.
    public static let maxMessageBytes = 64 * 1024

    /// The channel's number in the room.
    public var channelID: UInt16
    /// The channel's reliability, applied on every leg.
    public var reliability: Reliability
    /// Whether the payload is zlib-compressed.
    public var compressed: Bool
    /// The sender's member number, filled in by the relay (zero from clients).
    public var sender: UInt16

    /// Makes a header.
    public init(channelID: UInt16, reliability: Reliability, compressed: Bool, sender: UInt16) {
        self.channelID = channelID
        self.reliability = reliability
        self.compressed = compressed
        self.sender = sender
    }

    /// The header as sent on the wire.
    public var bytes: [UInt8] {
        var out = TrackFrameHeader(trackID: channelID, reliability: reliability).bytes
        out[0] = WireVersion.current << 4 | RelayFrameKind.channel.rawValue
        if compressed { out[1] |= 0x10 }
        out.appendU16(sender)
        out.appendU16(0)
        return out
    }

    /// Parses the header at the start of a datagram. Throws `WireError` if it is truncated or malformed.
    public static func parse(_ datagram: UnsafeRawBufferPointer) throws(WireError) -> ChannelFrameHeader {
        guard datagram.count > size else { throw .truncated(needed: size + 1, got: datagram.count) }
        let first = datagram.readU8(0)
        guard first >> 4 == WireVersion.current else { throw .unsupportedVersion(first >> 4) }
        guard first & 0x0F == RelayFrameKind.channel.rawValue else { throw .unknownFrameKind(first & 0x0F) }
        let flags = datagram.readU8(1)
        guard flags & 0x0F == 0, datagram.readU16(10) == 0 else { throw .reservedBitsSet }
        // The reliability fields are laid out as in a track frame.
        var asTrack = Array(datagram[0..<TrackFrameHeader.size])
        asTrack[0] = WireVersion.current << 4 | RelayFrameKind.track.rawValue
        asTrack[1] = flags & ~0x10
        asTrack.append(0)
        let parsed: Result<TrackFrameHeader, WireError> = asTrack.withUnsafeBytes { raw in
            Result { () throws(WireError) in try TrackFrameHeader.parse(raw) }
        }
        let track = try parsed.get()
        return ChannelFrameHeader(channelID: track.trackID, reliability: track.reliability, compressed: flags & 0x10 != 0, sender: datagram.readU16(8))
    }

    /// Writes the sender into an upstream frame (the relay's stamp).
    @inlinable
    public static func stampSender(_ frame: inout [UInt8], _ sender: UInt16) {
        frame[8] = UInt8(sender >> 8)
        frame[9] = UInt8(sender & 0xFF)
    }
}

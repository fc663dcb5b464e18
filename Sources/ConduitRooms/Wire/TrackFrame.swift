public import ConduitCore

/// A data-track frame (Twilio `DataTrack`): one fragment of one message on a published track.
///
/// ```
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +-------+-------+-+-+-+---------+-------------------------------+
/// |Ver=1  |Kind=5 |O| L | Rsv (0) |           Track ID            |  0
/// +-------+-------+-+-+-+---------+-------------------------------+
/// |          Limit: max retransmits, or remaining lifetime (ms)   |  4
/// +---------------------------------------------------------------+
/// |        v1 data frame: one fragment (stream 100, subgroup =    |  8
/// |        track ID, message IDs per track) ...                   |
/// +---------------------------------------------------------------+
///   O: ordered    L: 0 = reliable, 1 = maxRetransmits, 2 = maxPacketLifeTime
/// ```
///
/// The same frame goes client → relay → client; the relay knows each track's publisher, so no
/// sender field is needed (and a member sending on a track it did not publish is refused). With
/// `maxPacketLifeTime` the limit is the lifetime *left*: the sender subtracts the time the message
/// waited in its queue, the relay the time it held the frame, and each link gives up on the frame
/// when what is left runs out, so an app states the end-to-end lifetime once (Twilio asks for half
/// per leg). The inner v1 data frame carries the fragmentation, so a track message may be larger
/// than a datagram (up to ``maxMessageBytes``).
public struct TrackFrameHeader: Hashable, Sendable {
    /// Bytes of the header before every track fragment.
    public static let size = 8
    /// Twilio recommends at most 16 KiB; the wire takes up to 64 KiB.
    public static let maxMessageBytes = 64 * 1024

    /// The track's number in the room.
    public var trackID: UInt16
    /// The reliability, with the *remaining* lifetime for `maxPacketLifeTime`.
    public var reliability: Reliability

    /// Makes a header.
    public init(trackID: UInt16, reliability: Reliability) {
        self.trackID = trackID
        self.reliability = reliability
    }

    /// The header as sent on the wire.
    public var bytes: [UInt8] {
        var out: [UInt8] = [WireVersion.current << 4 | RelayFrameKind.track.rawValue, 0]
        let limitKind: UInt8
        let value: UInt32
        switch reliability.limit {
        case .none: (limitKind, value) = (0, 0)
        case .maxRetransmits(let count): (limitKind, value) = (1, UInt32(count))
        case .maxPacketLifeTime(let ms): (limitKind, value) = (2, ms)
        }
        out[1] = (reliability.ordered ? 0x80 : 0) | limitKind << 5
        out.appendU16(trackID)
        out.appendU32(value)
        return out
    }

    /// Parses the header at the start of a datagram. Throws `WireError` if truncated or malformed.
    public static func parse(_ datagram: UnsafeRawBufferPointer) throws(WireError) -> TrackFrameHeader {
        guard datagram.count > size else { throw .truncated(needed: size + 1, got: datagram.count) }
        let first = datagram.readU8(0)
        guard first >> 4 == WireVersion.current else { throw .unsupportedVersion(first >> 4) }
        guard first & 0x0F == RelayFrameKind.track.rawValue else { throw .unknownFrameKind(first & 0x0F) }
        let flags = datagram.readU8(1)
        guard flags & 0x1F == 0 else { throw .reservedBitsSet }
        let value = datagram.readU32(4)
        let limit: Reliability.Limit
        switch flags >> 5 & 3 {
        case 0:
            guard value == 0 else { throw .reservedBitsSet }
            limit = .none
        case 1:
            guard value <= UInt32(UInt16.max) else { throw .malformedControlBody("maxRetransmits \(value) exceeds 65535") }
            limit = .maxRetransmits(UInt16(value))
        case 2:
            limit = .maxPacketLifeTime(milliseconds: value)
        default:
            throw .reservedBitsSet
        }
        return TrackFrameHeader(trackID: datagram.readU16(2), reliability: Reliability(ordered: flags & 0x80 != 0, limit: limit))
    }

    /// The remaining lifetime of a track or labeled-channel frame (same layout), if it has one.
    @inlinable
    public static func remainingLifetime(_ frame: [UInt8]) -> UInt32? {
        guard frame.count > size, frame[0] & 0x0F == RelayFrameKind.track.rawValue || frame[0] & 0x0F == RelayFrameKind.channel.rawValue,
            frame[1] >> 5 & 3 == 2
        else { return nil }
        return UInt32(frame[4]) << 24 | UInt32(frame[5]) << 16 | UInt32(frame[6]) << 8 | UInt32(frame[7])
    }

    /// Rewrites the remaining lifetime in an encoded frame, in place (the relay subtracts its holding time).
    @inlinable
    public static func setRemainingLifetime(_ frame: inout [UInt8], milliseconds: UInt32) {
        frame[4] = UInt8(truncatingIfNeeded: milliseconds >> 24)
        frame[5] = UInt8(truncatingIfNeeded: milliseconds >> 16)
        frame[6] = UInt8(truncatingIfNeeded: milliseconds >> 8)
        frame[7] = UInt8(truncatingIfNeeded: milliseconds)
    }
}

/// A track as the relay announces it.
public struct TrackInfo: Hashable, Sendable {
    /// The track's number in the room.
    public var trackID: UInt16
    /// The publisher's member number.
    public var publisher: UInt16
    /// The track's name, unique per publisher.
    public var name: ChannelLabel
    /// The track's reliability.
    public var reliability: Reliability

    /// Makes a track announcement.
    public init(trackID: UInt16, publisher: UInt16, name: ChannelLabel, reliability: Reliability) {
        self.trackID = trackID
        self.publisher = publisher
        self.name = name
        self.reliability = reliability
    }
}

public import ConduitCore

/// The relay's frame kinds, on top of wire v1 (`FrameKind` 0 = data, 1 = control).
///
/// A 1:1 call never sees these (its parser refuses kinds above 1); they appear only on a link
/// between a conference client and a relay. Kinds 7...15 stay free.
public enum RelayFrameKind: UInt8, Sendable, Hashable {
    /// Client → relay: a v1 data or control frame and where it should go.
    case routed = 2
    /// Relay → client: a v1 data or control frame and who sent it (stamped by the relay).
    case relayed = 3
    /// Either way: room control (join, peer list, subgroups, tracks, leave, extensions).
    case room = 4
    /// Either way: a fragment of a data-track message (``TrackFrameHeader``).
    case track = 5
    /// Either way: a fragment of a labeled-channel message (``ChannelFrameHeader``).
    case channel = 6

    /// The relay kind of a datagram, or nil if it is a plain v1 frame (or not one of ours).
    @inlinable
    public static func peek(_ bytes: UnsafeRawBufferPointer) -> RelayFrameKind? {
        guard let first = bytes.first, first >> 4 == WireVersion.current else { return nil }
        return RelayFrameKind(rawValue: first & 0x0F)
    }
}

/// The 4-byte envelope in front of every frame that crosses the relay.
///
/// ```
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +-------+-------+---------------+-------------------------------+
/// |Ver=1  |Kind=2 |  Flags (= 0)  |      To (member, 0 = all)     |  0   client → relay
/// +-------+-------+---------------+-------------------------------+
/// |Ver=1  |Kind=3 |  Flags (= 0)  |     From (sender's member)    |  0   relay → client
/// +-------+-------+---------------+-------------------------------+
/// |          Inner v1 frame (data frame or session control) ...   |  4
/// +---------------------------------------------------------------+
/// ```
///
/// Upstream frames name only a destination: there is no field in which a client could claim to be
/// someone else. The relay writes `From` itself from the link the frame came in on; a client that
/// sends a kind-3 frame is forging and is refused (`RelayRefusal.forgedSender`). `To = 0` means
/// everyone in scope: the whole room for a main-room session, the subgroup's members for a
/// subgroup session (LINE Planet `changeDestination(nil)`). Both directions have the same size,
/// so a fragment that fits upstream fits downstream.
public struct RelayEnvelope: Hashable, Sendable {
    /// Bytes of the envelope before the inner frame.
    public static let size = 4

    /// Routed (client → relay) or relayed (relay → client).
    public var kind: RelayFrameKind
    /// Destination (routed) or sender (relayed) member number.
    public var member: UInt16

    /// Makes an envelope.
    public init(kind: RelayFrameKind, member: UInt16) {
        precondition(kind != .room, "room control frames have no envelope")
        self.kind = kind
        self.member = member
    }

    /// Writes the envelope's 4 bytes at the start of `buffer`, which must hold them.
    @inlinable
    public func encode(into buffer: UnsafeMutableRawBufferPointer) {
        buffer.writeU8(WireVersion.current << 4 | kind.rawValue, at: 0)
        buffer.writeU8(0, at: 1)
        buffer.writeU16(member, at: 2)
    }

    /// The envelope as sent on the wire.
    public var bytes: [UInt8] {
        [WireVersion.current << 4 | kind.rawValue, 0, UInt8(member >> 8), UInt8(member & 0xFF)]
    }

    /// Parses the envelope; the inner frame is the rest of the datagram (`size...`), which the
    /// caller parses with the v1 parsers.
    public static func parse(_ datagram: UnsafeRawBufferPointer) throws(WireError) -> RelayEnvelope {
        guard datagram.count >= size + 1 else { throw .truncated(needed: size + 1, got: datagram.count) }
        let first = datagram.readU8(0)
        guard first >> 4 == WireVersion.current else { throw .unsupportedVersion(first >> 4) }
        guard let kind = RelayFrameKind(rawValue: first & 0x0F), kind == .routed || kind == .relayed else {
            throw .unknownFrameKind(first & 0x0F)
        }
        guard datagram.readU8(1) == 0 else { throw .reservedBitsSet }
        return RelayEnvelope(kind: kind, member: datagram.readU16(2))
    }

    /// A whole enveloped frame: the envelope, then `inner`.
    public static func wrap(_ kind: RelayFrameKind, member: UInt16, _ inner: [UInt8]) -> [UInt8] {
        var out = RelayEnvelope(kind: kind, member: member).bytes
        out.append(contentsOf: inner)
        return out
    }

    /// Rewrites an upstream (routed) frame in place into the downstream (relayed) frame the
    /// receivers get: only the kind and member change, so the relay forwards with one copy.
    @inlinable
    public static func restamp(_ frame: inout [UInt8], from sender: UInt16) {
        frame[0] = WireVersion.current << 4 | RelayFrameKind.relayed.rawValue
        frame[2] = UInt8(sender >> 8)
        frame[3] = UInt8(sender & 0xFF)
    }
}

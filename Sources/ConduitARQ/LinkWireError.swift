import ConduitCore

/// Why a reliable-link packet was refused (see `docs/wire-format.md`, "Reliable link packets").
///
/// A separate type from `WireError` (ConduitCore) because it describes a different layer: the packets that
/// carry Conduit frames over transports without native reliability. Every case is a counted drop
/// in ``ARQEngine/Statistics``, never a crash, and a refused packet changes no link state.
public enum LinkWireError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Fewer bytes than the fixed header (and checksum trailer) need.
    case truncated(needed: Int, got: Int)
    /// High nibble of byte 0 is not 1.
    case unsupportedVersion(UInt8)
    /// Low nibble of byte 0 is not 2 (a plain Conduit data or control frame, say).
    case notALinkPacket(kind: UInt8)
    /// A flag or reserved field that version 1 does not define is set.
    case reservedBitsSet
    /// The checksum flag disagrees with the link's configuration. Refusing both ways keeps a flipped
    /// flag bit from turning a checked packet into an unchecked one.
    case checksumPresenceMismatch(expected: Bool)
    /// The CRC32C trailer does not match the packet.
    case checksumMismatch(stored: UInt32, computed: UInt32)
    /// A packet number at or above 2^62 (the same bound as QUIC, RFC 9000 section 12.3).
    case packetNumberTooLarge(UInt64)
    /// A packet with no frames.
    case emptyPacket
    /// A frame type byte that version 1 does not define.
    case unknownFrameType(UInt8)
    /// A frame claims more bytes (fixed part, ranges or payload) than the packet has left. Checked
    /// before anything is read or allocated for the claim.
    case frameOverrun(frameType: UInt8, claimed: Int, available: Int)
    /// An ACK range runs below packet number 0.
    case invalidAckRange
    /// More than one ACK frame in one packet.
    case duplicateAckFrame
    /// An ACK acknowledges a packet number this side never sent.
    case ackOfUnsentPacket(UInt64)
    /// A DATA frame's part is empty, runs past the frame's length, or belongs to a frame longer
    /// than any frame may be (65,535 bytes).
    case invalidPart(offset: UInt32, length: Int, frameLength: UInt32)

    public var description: String {
        switch self {
        case .truncated(let needed, let got): "truncated link packet: needed \(needed) bytes, got \(got)"
        case .unsupportedVersion(let v): "unsupported wire version \(v)"
        case .notALinkPacket(let kind): "frame kind \(kind) is not a reliable-link packet (2)"
        case .reservedBitsSet: "reserved bits set"
        case .checksumPresenceMismatch(let expected): expected ? "checksum trailer missing" : "unexpected checksum trailer"
        case .checksumMismatch(let stored, let computed): "CRC32C mismatch: stored \(stored), computed \(computed)"
        case .packetNumberTooLarge(let pn): "packet number \(pn) is not below 2^62"
        case .emptyPacket: "packet has no frames"
        case .unknownFrameType(let t): "unknown link frame type \(t)"
        case .frameOverrun(let type, let claimed, let available):
            "frame type \(type) claims \(claimed) bytes but \(available) remain"
        case .invalidAckRange: "ACK range below packet number 0"
        case .duplicateAckFrame: "more than one ACK frame in a packet"
        case .ackOfUnsentPacket(let pn): "ACK of packet \(pn), which was never sent"
        case .invalidPart(let offset, let length, let frameLength):
            "DATA part of \(length) bytes at offset \(offset) does not fit a frame of \(frameLength) bytes"
        }
    }
}

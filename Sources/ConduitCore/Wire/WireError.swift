/// Why a datagram was refused by the frame parser. Every case is a counted drop, never a crash.
public enum WireError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Fewer bytes than the fixed header needs (includes the empty datagram).
    case truncated(needed: Int, got: Int)
    /// The frame's version is not one this build reads.
    case unsupportedVersion(UInt8)
    /// The frame kind is not one version 1 defines.
    case unknownFrameKind(UInt8)
    /// The control frame type is not one version 1 defines.
    case unknownControlType(UInt8)
    /// Flag bits that version 1 does not define were set.
    case reservedBitsSet
    /// The stream ID is outside 100…999.
    case invalidStreamID(UInt16)
    /// The session type byte is not one of the four types.
    case invalidSessionType(UInt8)
    /// The frame claims a message larger than its session type allows.
    case messageTooLarge(claimed: UInt32, limit: Int)
    /// The fragment size is zero, or cuts the claimed message into too many fragments.
    case invalidFragmentSize(fragmentSize: UInt16, totalLength: UInt32)
    /// The offset is not on a fragment boundary, or past the end of the message.
    case invalidOffset(offset: UInt32, fragmentSize: UInt16, totalLength: UInt32)
    /// The payload does not have the length its offset and the message's size imply.
    case payloadLengthMismatch(expected: Int, got: Int)
    /// A control frame's body is shorter or longer than its fields say.
    case malformedControlBody(String)

    public var description: String {
        switch self {
        case .truncated(let needed, let got): "truncated frame: needed \(needed) bytes, got \(got)"
        case .unsupportedVersion(let v): "unsupported wire version \(v)"
        case .unknownFrameKind(let k): "unknown frame kind \(k)"
        case .unknownControlType(let t): "unknown control type \(t)"
        case .reservedBitsSet: "reserved bits set"
        case .invalidStreamID(let id): "stream ID \(id) is outside 100...999"
        case .invalidSessionType(let t): "unknown session type \(t)"
        case .messageTooLarge(let claimed, let limit): "frame claims a \(claimed)-byte message; the limit is \(limit)"
        case .invalidFragmentSize(let size, let total): "fragment size \(size) is invalid for a \(total)-byte message"
        case .invalidOffset(let offset, let size, let total):
            "offset \(offset) is not a fragment boundary (fragment size \(size), message \(total) bytes)"
        case .payloadLengthMismatch(let expected, let got): "payload is \(got) bytes; \(expected) expected"
        case .malformedControlBody(let why): "malformed control frame: \(why)"
        }
    }
}

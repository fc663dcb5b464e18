import ConduitCore

/// Why bytes were refused by the invitation message parser (or could not be encoded). Always a
/// typed error, never a crash; memory is only ever allocated for bytes actually present.
public enum InvitationWireError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The message ends before a field it needs (includes the empty message).
    case truncated(needed: Int, got: Int)
    /// The message's version is not one this build reads.
    case unsupportedVersion(UInt8)
    /// The message type is not one this version defines.
    case unknownMessageType(UInt8)
    /// A flag or reserved bit this version does not define was set.
    case reservedBitsSet
    /// The invitation ID is 0 where one is needed, or set where none belongs.
    case invalidInvitationID
    /// A peer ID or room ID breaks the identifier rules (empty, too long, control characters).
    case invalidIdentifier(String)
    /// A list claims more entries than its limit or than the bytes left could hold.
    case countTooLarge(claimed: Int, limit: Int)
    /// Bytes remain after the last field.
    case trailingBytes(Int)
    /// Encoding: a field is longer than its length prefix can say.
    case fieldTooLong(String)

    public var description: String {
        switch self {
        case .truncated(let needed, let got): "truncated invitation message: needed \(needed) bytes, got \(got)"
        case .unsupportedVersion(let v): "unsupported invitation message version \(v)"
        case .unknownMessageType(let t): "unknown invitation message type \(t)"
        case .reservedBitsSet: "reserved bits set"
        case .invalidInvitationID: "invitation ID missing or misplaced"
        case .invalidIdentifier(let why): "invalid identifier: \(why)"
        case .countTooLarge(let claimed, let limit): "list claims \(claimed) entries; at most \(limit) fit"
        case .trailingBytes(let n): "\(n) bytes after the last field"
        case .fieldTooLong(let what): "\(what) is too long to encode"
        }
    }
}

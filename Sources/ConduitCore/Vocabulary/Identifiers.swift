/// A textual identifier checked when it is made: non-empty, at most ``maxBytes`` of UTF-8, no
/// control characters. Peer IDs, room IDs, subgroup names and labels share these rules.
public protocol ValidatedIdentifier: Hashable, Sendable, Comparable, CustomStringConvertible, ExpressibleByStringLiteral
where StringLiteralType == String {
    /// What the identifier is called in error messages ("peer ID").
    static var kind: String { get }
    /// The most UTF-8 bytes the identifier may have.
    static var maxBytes: Int { get }
    /// The identifier's text.
    var rawValue: String { get }
    /// Wraps an already validated value.
    init(unchecked value: String)
}

extension ValidatedIdentifier {
    /// The identifier, or a typed error naming what is wrong with `value`.
    public init(_ value: String) throws(ConduitError) {
        let count = value.utf8.count
        guard count > 0 else { throw ConduitError(.invalidIdentifier, "\(Self.kind) must not be empty") }
        guard count <= Self.maxBytes else {
            throw ConduitError(.invalidIdentifier, "\(Self.kind) is \(count) bytes; at most \(Self.maxBytes) are allowed")
        }
        guard value.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else {
            throw ConduitError(.invalidIdentifier, "\(Self.kind) contains control characters")
        }
        self.init(unchecked: value)
    }

    /// For literals in code; an invalid literal is a programming error.
    public init(stringLiteral value: String) {
        do { try self.init(value) } catch { preconditionFailure("invalid \(Self.kind) literal: \(error)") }
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { rawValue }
}

/// Identifies a participant: a user ID in a call or a room.
public struct PeerID: ValidatedIdentifier {
    public static let kind = "peer ID"
    /// A peer ID has at most 128 bytes of UTF-8.
    public static let maxBytes = 128
    /// The peer ID's text.
    public let rawValue: String
    public init(unchecked value: String) { rawValue = value }
}

/// Identifies a group-call room; shared out of band before joining.
public struct RoomID: ValidatedIdentifier {
    public static let kind = "room ID"
    /// A room ID has at most 128 bytes of UTF-8.
    public static let maxBytes = 128
    /// The room ID's text.
    public let rawValue: String
    public init(unchecked value: String) { rawValue = value }
}

/// A named subset of a room. `nil` where a `SubgroupName?` is expected means the main room.
public struct SubgroupName: ValidatedIdentifier {
    public static let kind = "subgroup name"
    /// A subgroup name has at most 64 bytes of UTF-8.
    public static let maxBytes = 64
    /// The subgroup name's text.
    public let rawValue: String
    public init(unchecked value: String) { rawValue = value }
}

/// A channel label. Sora-style labeled channels must start with `#` (checked where they are
/// declared); labels of plain data channels are free-form.
public struct ChannelLabel: ValidatedIdentifier {
    public static let kind = "label"
    /// A label has at most 255 bytes of UTF-8.
    public static let maxBytes = 255
    /// The label's text.
    public let rawValue: String
    public init(unchecked value: String) { rawValue = value }

    /// Sora's rule for application channels: the label starts with `#`.
    public var isApplicationLabel: Bool { rawValue.hasPrefix("#") }
}

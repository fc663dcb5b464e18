/// Validation shared by the textual identifiers: non-empty, bounded, printable UTF-8.
@usableFromInline
func validateIdentifier(_ value: String, kind: String, maxBytes: Int) throws(ConduitError) {
    let count = value.utf8.count
    guard count > 0 else { throw ConduitError(.invalidIdentifier, "\(kind) must not be empty") }
    guard count <= maxBytes else {
        throw ConduitError(.invalidIdentifier, "\(kind) is \(count) bytes; at most \(maxBytes) are allowed")
    }
    guard value.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else {
        throw ConduitError(.invalidIdentifier, "\(kind) contains control characters")
    }
}

/// Identifies a participant: a user ID in a call or a room.
public struct PeerID: Hashable, Sendable, Comparable, CustomStringConvertible, ExpressibleByStringLiteral {
    public static let maxBytes = 128
    public let rawValue: String

    public init(_ value: String) throws(ConduitError) {
        try validateIdentifier(value, kind: "peer ID", maxBytes: Self.maxBytes)
        rawValue = value
    }

    /// For literals in code; an invalid literal is a programming error.
    public init(stringLiteral value: String) {
        do { try self.init(value) } catch { preconditionFailure("invalid peer ID literal: \(error)") }
    }

    public static func < (lhs: PeerID, rhs: PeerID) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { rawValue }
}

/// Identifies a group-call room; shared out of band before joining.
public struct RoomID: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    public static let maxBytes = 128
    public let rawValue: String

    public init(_ value: String) throws(ConduitError) {
        try validateIdentifier(value, kind: "room ID", maxBytes: Self.maxBytes)
        rawValue = value
    }

    public init(stringLiteral value: String) {
        do { try self.init(value) } catch { preconditionFailure("invalid room ID literal: \(error)") }
    }

    public var description: String { rawValue }
}

/// A named subset of a room. `nil` where a `SubgroupName?` is expected means the main room.
public struct SubgroupName: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    public static let maxBytes = 64
    public let rawValue: String

    public init(_ value: String) throws(ConduitError) {
        try validateIdentifier(value, kind: "subgroup name", maxBytes: Self.maxBytes)
        rawValue = value
    }

    public init(stringLiteral value: String) {
        do { try self.init(value) } catch { preconditionFailure("invalid subgroup name literal: \(error)") }
    }

    public var description: String { rawValue }
}

/// A channel label. Sora-style labeled channels must start with `#` (checked where they are declared);
/// labels of plain data channels are free-form.
public struct ChannelLabel: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    public static let maxBytes = 255
    public let rawValue: String

    public init(_ value: String) throws(ConduitError) {
        try validateIdentifier(value, kind: "label", maxBytes: Self.maxBytes)
        rawValue = value
    }

    public init(stringLiteral value: String) {
        do { try self.init(value) } catch { preconditionFailure("invalid label literal: \(error)") }
    }

    /// Sora's rule for application channels: the label starts with `#`.
    public var isApplicationLabel: Bool { rawValue.hasPrefix("#") }
    public var description: String { rawValue }
}

/// The four data-session types of the contract.
///
/// *Message* types reassemble and deliver one message per `send` (at most 128 KiB).
/// *Bytes* types deliver fragments unaggregated, with enough metadata to aggregate (at most 4 MiB).
public enum SessionType: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Whole messages up to 128 KiB, each delivered once, in order.
    case reliableMessage = 0
    /// Whole messages up to 128 KiB; a message that does not fully arrive is not delivered.
    case unreliableMessage = 1
    /// Raw bytes up to 4 MiB per send, delivered as fragments, all of them, in order.
    case reliableBytes = 2
    /// Raw bytes up to 4 MiB per send, delivered as fragments; some may be missing.
    case unreliableBytes = 3

    /// Whether every send is delivered (`reliableMessage`, `reliableBytes`).
    public var isReliable: Bool { self == .reliableMessage || self == .reliableBytes }
    /// Whether sends are delivered as whole messages rather than fragments.
    public var isMessage: Bool { self == .reliableMessage || self == .unreliableMessage }

    /// The largest payload one `send` may carry for this type.
    public var maxSendSize: Int { isMessage ? Limits.maxMessageSize : Limits.maxBytesSize }

    /// The spelling used on the command line and in configuration files.
    public var name: String {
        switch self {
        case .reliableMessage: "reliable-message"
        case .unreliableMessage: "unreliable-message"
        case .reliableBytes: "reliable-bytes"
        case .unreliableBytes: "unreliable-bytes"
        }
    }

    /// Parses `reliable-message` etc. (and the camel-case spelling), or throws `invalidType`.
    public init(name: String) throws(ConduitError) {
        for type in SessionType.allCases where type.name == name || "\(type.camelName)" == name {
            self = type
            return
        }
        throw ConduitError(
            .invalidSessionType,
            "unknown session type '\(name)' (expected reliable-message, unreliable-message, reliable-bytes or unreliable-bytes)"
        )
    }

    var camelName: String {
        switch self {
        case .reliableMessage: "reliableMessage"
        case .unreliableMessage: "unreliableMessage"
        case .reliableBytes: "reliableBytes"
        case .unreliableBytes: "unreliableBytes"
        }
    }

    public var description: String { name }
}

/// Protocol-wide size limits.
public enum Limits {
    /// Largest message for the message types (128 KiB).
    public static let maxMessageSize = 128 * 1024
    /// Largest send for the bytes types (4 MiB).
    public static let maxBytesSize = 4 * 1024 * 1024
    /// Most fragments one message may be cut into. Bounds the reassembly bitmap, and lets a frame
    /// claiming absurd fragmentation be refused before anything is allocated.
    public static let maxFragmentsPerMessage = 8192
}

#if SCTP
/// A message of the Data Channel Establishment Protocol (RFC 8832 section 5), read from an SCTP
/// message with PPID 50.
public enum DCEPMessage: Sendable, Hashable {
    /// DATA_CHANNEL_OPEN: the peer opens a channel on the stream this arrived on.
    case open(DataChannelOpen)
    /// DATA_CHANNEL_ACK: the peer accepted a channel this end opened.
    case ack

    /// Parses one PPID-50 message. RFC 8832 section 5: other message types are reserved; a
    /// receiver discards them (we report them as an error for the caller to count).
    public init(parsing bytes: some Collection<UInt8>) throws(DCEPError) {
        guard let first = bytes.first else { throw DCEPError(.truncated, "empty DCEP message") }
        switch first {
        case DataChannelOpen.messageType: self = .open(try DataChannelOpen(parsing: bytes))
        case DataChannelAck.messageType:
            // RFC 8832 section 5.2: the ACK is one byte. pion pads it with zeros to 4 bytes, which
            // we take (only zeros: anything else is not an ACK we understand).
            guard bytes.dropFirst().allSatisfy({ $0 == 0 }) else {
                throw DCEPError(.lengthMismatch, "DATA_CHANNEL_ACK of \(bytes.count) bytes, expected 1 (or zero padding)")
            }
            self = .ack
        default:
            throw DCEPError(.unknownMessageType, "unknown DCEP message type 0x\(String(first, radix: 16))")
        }
    }

    /// The message as sent on the wire (PPID 50).
    public var bytes: [UInt8] {
        switch self {
        case .open(let open): open.bytes
        case .ack: DataChannelAck().bytes
        }
    }
}

/// Why a DCEP message was refused. A struct with an extensible code, as in swift-nio-http2.
public struct DCEPError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was wrong with a DCEP message.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        let name: String
        /// Shorter than its fixed part, or than the lengths it states.
        public static let truncated = Code(name: "truncated")
        /// An ACK with more than its type byte and zero padding, or an OPEN whose lengths do not add up.
        public static let lengthMismatch = Code(name: "lengthMismatch")
        /// A message type other than OPEN (0x03) and ACK (0x02).
        public static let unknownMessageType = Code(name: "unknownMessageType")
        /// A channel type RFC 8832 does not define.
        public static let unknownChannelType = Code(name: "unknownChannelType")
        /// A label or protocol that is not valid UTF-8.
        public static let invalidUTF8 = Code(name: "invalidUTF8")
        public var description: String { name }
    }

    /// What kind of problem it is.
    public let code: Code
    /// A description for logs.
    public let message: String
    /// Makes an error with its code and a description.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
    public var description: String { "\(code): \(message)" }
}
#endif

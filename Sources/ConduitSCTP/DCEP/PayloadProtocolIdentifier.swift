#if SCTP
/// The SCTP payload protocol identifiers of WebRTC data channels (RFC 8831 section 8; the
/// deprecated partial-string/binary values 52 and 54 are neither sent nor accepted).
///
/// An SCTP message cannot be empty, so an empty string or binary message goes as one zero byte
/// with its own PPID (56 or 57), which the receiver reads as empty (RFC 8831 section 6.6).
public enum PayloadProtocolIdentifier: UInt32, Sendable, Hashable {
    /// DATA_CHANNEL_OPEN and DATA_CHANNEL_ACK (RFC 8832 section 8.1).
    case dcep = 50
    /// WebRTC String: a non-empty UTF-8 message.
    case string = 51
    /// WebRTC Binary: a non-empty binary message.
    case binary = 53
    /// WebRTC String Empty: an empty text message (sent as one zero byte).
    case emptyString = 56
    /// WebRTC Binary Empty: an empty binary message (sent as one zero byte).
    case emptyBinary = 57
}

/// What a data-channel message holds: text (UTF-8) or bytes. The distinction travels as the PPID.
public enum DataChannelMessageKind: String, Sendable, Hashable, Codable {
    /// Text, UTF-8 (PPID 51, or 56 when empty).
    case string
    /// Bytes (PPID 53, or 57 when empty).
    case binary

    /// The PPID that carries a message of this kind and `count` bytes.
    public func ppid(count: Int) -> PayloadProtocolIdentifier {
        switch self {
        case .string: count == 0 ? .emptyString : .string
        case .binary: count == 0 ? .emptyBinary : .binary
        }
    }

    /// The kind a received user-message PPID denotes, and whether the payload is the empty marker.
    public static func received(_ ppid: PayloadProtocolIdentifier) -> (kind: DataChannelMessageKind, isEmpty: Bool)? {
        switch ppid {
        case .string: (.string, false)
        case .binary: (.binary, false)
        case .emptyString: (.string, true)
        case .emptyBinary: (.binary, true)
        case .dcep: nil
        }
    }
}
#endif

#if SCTP
/// DATA_CHANNEL_ACK (RFC 8832 section 5.2): one byte, 0x02, sent with PPID 50 on the stream the
/// OPEN arrived on, in answer to it.
///
/// ```
///  0 1 2 3 4 5 6 7
/// +-+-+-+-+-+-+-+-+
/// |  Message Type |
/// +-+-+-+-+-+-+-+-+
/// ```
public struct DataChannelAck: Sendable, Hashable {
    /// The DCEP message type of an ACK (RFC 8832 section 8.2.1).
    public static let messageType: UInt8 = 0x02
    /// Makes the ACK; it has no fields.
    public init() {}
    /// The ACK as sent: its message type, one byte.
    public var bytes: [UInt8] { [Self.messageType] }
}
#endif

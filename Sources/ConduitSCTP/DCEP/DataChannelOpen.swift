#if SCTP
public import ConduitCore

/// DATA_CHANNEL_OPEN (RFC 8832 section 5.1), sent with PPID 50 on the stream the channel will use.
///
/// ```
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |  Message Type |  Channel Type |            Priority           |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |                    Reliability Parameter                      |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |         Label Length          |       Protocol Length         |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// \                             Label                             /
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// \                            Protocol                           /
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// ```
/// Message type 0x03. Label and protocol are UTF-8, without padding or terminator.
public struct DataChannelOpen: Sendable, Hashable {
    /// The DCEP message type of an OPEN (RFC 8832 section 8.2.1).
    public static let messageType: UInt8 = 0x03
    static let fixedSize = 12

    /// Ordering and reliability, with the reliability parameter.
    public var channelType: DataChannelType
    /// Relative priority (RFC 8832 section 5.1 suggests 128, 256, 512, 1024); we send 256 ("normal").
    public var priority: UInt16
    /// The channel's label, UTF-8.
    public var label: String
    /// The channel's subprotocol, UTF-8; empty if none.
    public var `protocol`: String

    /// Makes an OPEN for a channel with `reliability`, `priority`, `label` and `protocol`.
    public init(reliability: Reliability, priority: UInt16 = 256, label: String, protocol: String) {
        self.channelType = DataChannelType(reliability)
        self.priority = priority
        self.label = label
        self.protocol = `protocol`
    }

    /// The OPEN as sent on the wire (PPID 50).
    public var bytes: [UInt8] {
        let label = Array(label.utf8), proto = Array(self.protocol.utf8)
        let (type, parameter) = channelType.wire
        var out: [UInt8] = [Self.messageType, type, UInt8(priority >> 8), UInt8(priority & 0xFF)]
        out += [UInt8(parameter >> 24), UInt8(parameter >> 16 & 0xFF), UInt8(parameter >> 8 & 0xFF), UInt8(parameter & 0xFF)]
        out += [UInt8(label.count >> 8), UInt8(label.count & 0xFF), UInt8(proto.count >> 8), UInt8(proto.count & 0xFF)]
        return out + label + proto
    }

    /// Parses a message whose first byte is 0x03. Lengths must match the message exactly: a
    /// truncated or padded OPEN is refused rather than guessed at.
    public init(parsing bytes: some Collection<UInt8>) throws(DCEPError) {
        let b = Array(bytes)
        guard b.count >= Self.fixedSize, b[0] == Self.messageType else {
            throw DCEPError(.truncated, "DATA_CHANNEL_OPEN of \(b.count) bytes is shorter than its 12-byte header")
        }
        let parameter = UInt32(b[4]) << 24 | UInt32(b[5]) << 16 | UInt32(b[6]) << 8 | UInt32(b[7])
        guard let type = DataChannelType(type: b[1], parameter: parameter) else {
            throw DCEPError(.unknownChannelType, "DATA_CHANNEL_OPEN has unknown channel type 0x\(String(b[1], radix: 16))")
        }
        let labelLength = Int(b[8]) << 8 | Int(b[9])
        let protocolLength = Int(b[10]) << 8 | Int(b[11])
        guard b.count == Self.fixedSize + labelLength + protocolLength else {
            throw DCEPError(.lengthMismatch, "DATA_CHANNEL_OPEN is \(b.count) bytes but its label and protocol lengths say \(Self.fixedSize + labelLength + protocolLength)")
        }
        guard let label = String(validating: b[12..<(12 + labelLength)], as: UTF8.self),
              let proto = String(validating: b[(12 + labelLength)...], as: UTF8.self)
        else { throw DCEPError(.invalidUTF8, "DATA_CHANNEL_OPEN label or protocol is not UTF-8") }
        self.channelType = type
        self.priority = UInt16(b[2]) << 8 | UInt16(b[3])
        self.label = label
        self.protocol = proto
    }
}
#endif

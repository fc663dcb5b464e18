#if SCTP
public import ConduitCore

/// The channel type of DATA_CHANNEL_OPEN (RFC 8832 section 5.1) and what it says about delivery.
///
/// ```
///  0x00 DATA_CHANNEL_RELIABLE                          0x80 ..._RELIABLE_UNORDERED
///  0x01 DATA_CHANNEL_PARTIAL_RELIABLE_REXMIT           0x81 ..._REXMIT_UNORDERED
///  0x02 DATA_CHANNEL_PARTIAL_RELIABLE_TIMED            0x82 ..._TIMED_UNORDERED
/// ```
/// The high bit is "unordered"; the low bits choose how the reliability parameter is read
/// (nothing, a retransmission count, or a lifetime in milliseconds).
public struct DataChannelType: Sendable, Hashable {
    /// The ordering and the partial-reliability limit this channel type stands for.
    public var reliability: Reliability

    /// The channel type for `reliability`.
    public init(_ reliability: Reliability) { self.reliability = reliability }

    static let unorderedBit: UInt8 = 0x80

    /// The type byte and the 32-bit reliability parameter.
    public var wire: (type: UInt8, parameter: UInt32) {
        let order = reliability.ordered ? 0 : Self.unorderedBit
        switch reliability.limit {
        case .none: return (order | 0x00, 0)
        case .maxRetransmits(let count): return (order | 0x01, UInt32(count))
        case .maxPacketLifeTime(let milliseconds): return (order | 0x02, milliseconds)
        }
    }

    /// Reads a type byte and its parameter; nil for a type RFC 8832 does not define.
    public init?(type: UInt8, parameter: UInt32) {
        let ordered = type & Self.unorderedBit == 0
        switch type & ~Self.unorderedBit {
        case 0x00: reliability = Reliability(ordered: ordered, limit: .none)
        // The parameter is 32 bits on the wire; counts beyond 65535 mean "retransmit a lot".
        case 0x01: reliability = Reliability(ordered: ordered, limit: .maxRetransmits(UInt16(clamping: parameter)))
        case 0x02: reliability = Reliability(ordered: ordered, limit: .maxPacketLifeTime(milliseconds: parameter))
        default: return nil
        }
    }
}
#endif

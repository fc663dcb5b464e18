/// How a channel retransmits and orders, WebRTC style.
///
/// `maxRetransmits` and `maxPacketLifeTime` are mutually exclusive (RFC 8831 section 6.1, and the
/// Twilio DataTrack contract); ``Reliability/init(ordered:maxRetransmits:maxPacketLifeTime:)`` refuses both.
public struct Reliability: Hashable, Sendable, CustomStringConvertible {
    /// When a sender gives up on a message.
    public enum Limit: Hashable, Sendable {
        /// Retransmit until acknowledged.
        case none
        /// Give up after this many retransmissions.
        case maxRetransmits(UInt16)
        /// Give up once the message is this many milliseconds old.
        case maxPacketLifeTime(milliseconds: UInt32)
    }

    /// Whether messages are delivered in the order sent.
    public var ordered: Bool
    /// When a message is given up on; `.none` retransmits until acknowledged.
    public var limit: Limit

    /// Makes a reliability from ordering and a limit.
    public init(ordered: Bool = true, limit: Limit = .none) {
        self.ordered = ordered
        self.limit = limit
    }

    /// Builds options from the optional fields as apps and configuration files spell them.
    public init(ordered: Bool = true, maxRetransmits: Int? = nil, maxPacketLifeTime: Int? = nil) throws(ConduitError) {
        switch (maxRetransmits, maxPacketLifeTime) {
        case (.some, .some):
            throw ConduitError(.invalidReliability, "maxRetransmits and maxPacketLifeTime cannot both be set")
        case (.some(let count), nil):
            guard (0...Int(UInt16.max)).contains(count) else {
                throw ConduitError(.invalidReliability, "maxRetransmits \(count) is outside 0...65535")
            }
            self.init(ordered: ordered, limit: .maxRetransmits(UInt16(count)))
        case (nil, .some(let ms)):
            guard (0...Int(UInt32.max)).contains(ms) else {
                throw ConduitError(.invalidReliability, "maxPacketLifeTime \(ms) ms is outside 0...\(UInt32.max)")
            }
            self.init(ordered: ordered, limit: .maxPacketLifeTime(milliseconds: UInt32(ms)))
        case (nil, nil):
            self.init(ordered: ordered, limit: .none)
        }
    }

    /// Fully reliable and ordered: what `reliable*` session types use.
    public static let reliableOrdered = Reliability()

    /// The reliability a data-session type implies.
    public static func `for`(_ type: SessionType) -> Reliability {
        type.isReliable ? .reliableOrdered : Reliability(ordered: false, limit: .maxRetransmits(0))
    }

    /// Whether messages are retransmitted until acknowledged.
    public var isFullyReliable: Bool { limit == .none }

    public var description: String {
        switch limit {
        case .none: "\(ordered ? "ordered" : "unordered"), reliable"
        case .maxRetransmits(let n): "\(ordered ? "ordered" : "unordered"), maxRetransmits=\(n)"
        case .maxPacketLifeTime(let ms): "\(ordered ? "ordered" : "unordered"), maxPacketLifeTime=\(ms)ms"
        }
    }
}

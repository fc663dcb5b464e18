/// How an outbound data session shares its call's link with the others: its priority and its own
/// rate cap (`makeOutboundDataSession(streamID:type:options:)`).
public struct OutboundSessionOptions: Sendable, Hashable {
    /// The session's share of the link while several sessions have data queued: the scheduler
    /// gives each backlogged session fragments in proportion to its priority's weight, so a bulk
    /// transfer never holds a chat message behind it for more than a few fragments. The weights
    /// follow WebRTC's `RTCPriorityType` (RFC 8831 section 6.4): very-low 1, low 2, medium 4,
    /// high 8.
    public enum Priority: Int, Sendable, Hashable, CaseIterable, Comparable {
        /// Weight 1: background transfers.
        case veryLow
        /// Weight 2, the default (WebRTC's too).
        case low
        /// Weight 4.
        case medium
        /// Weight 8: what must overtake bulk data (control, chat, cursor updates).
        case high

        /// Fragments per scheduling round while backlogged.
        public var weight: Int { 1 << rawValue }

        public static func < (lhs: Priority, rhs: Priority) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// The session's share of the link (default `low`, WebRTC's default).
    public var priority: Priority
    /// The session's pacing cap, or nil for the call's (`rateLimit` of the configuration).
    public var rateLimit: RateLimit?

    /// Options; by default low priority and the call's rate cap.
    public init(priority: Priority = .low, rateLimit: RateLimit? = nil) {
        self.priority = priority
        self.rateLimit = rateLimit
    }
}

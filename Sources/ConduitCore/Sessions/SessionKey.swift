/// Names one data session in one direction: its stream ID and subgroup (`nil` = main room, and
/// the only value in 1:1 calls). The same stream ID in two subgroups is two sessions.
public struct SessionKey: Hashable, Sendable, CustomStringConvertible {
    /// The session's stream ID.
    public var streamID: StreamID
    /// The subgroup, or nil for the main room and 1:1 calls.
    public var subgroup: SubgroupName?

    /// Makes a key.
    public init(streamID: StreamID, subgroup: SubgroupName? = nil) {
        self.streamID = streamID
        self.subgroup = subgroup
    }

    public var description: String {
        subgroup.map { "stream \(streamID) in subgroup \($0)" } ?? "stream \(streamID)"
    }
}

/// What an inbound session hands the app.
public enum InboundDelivery: Sendable, Hashable {
    /// A whole message (message types): exactly one per `send` on a reliable session.
    case message(bytes: [UInt8], timestamp: UInt64)
    /// One fragment of a send (bytes types), unaggregated.
    case fragment(ReceivedFragment)

    /// The sender's user-defined timestamp.
    public var timestamp: UInt64 {
        switch self {
        case .message(_, let timestamp): timestamp
        case .fragment(let fragment): fragment.timestamp
        }
    }

    /// The message's bytes, or the fragment's.
    public var bytes: [UInt8] {
        switch self {
        case .message(let bytes, _): bytes
        case .fragment(let fragment): fragment.bytes
        }
    }
}

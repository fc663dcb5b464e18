/// Names one data session in one direction: its stream ID and subgroup (`nil` = main room, and
/// the only value in 1:1 calls). The same stream ID in two subgroups is two sessions.
public struct SessionKey: Hashable, Sendable, CustomStringConvertible {
    public var streamID: StreamID
    public var subgroup: SubgroupName?

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

    public var timestamp: UInt64 {
        switch self {
        case .message(_, let timestamp): timestamp
        case .fragment(let fragment): fragment.timestamp
        }
    }

    public var bytes: [UInt8] {
        switch self {
        case .message(let bytes, _): bytes
        case .fragment(let fragment): fragment.bytes
        }
    }
}

public import ConduitCore

/// The receiving half of a data session (LINE Planet `PlanetKitInboundDataSession`).
///
/// Iterate ``events``: messages (message types) or fragments (bytes types) in arrival order,
/// then `.closed(reason)` last. The sequence is a ``DataStream``, backpressured: while the app
/// does not read, received data buffers up to `inboundBufferBytes`, then the transport stops
/// reading and the sender's queue fills (it sees `tooLongQueuedData`). One consumer at a time.
public final class InboundDataSession: Sendable {
    /// A whole message of a message-type session.
    public struct Message: Sendable, Hashable {
        /// The message as sent, whole.
        public var bytes: [UInt8]
        /// The sender's user-defined timestamp.
        public var timestamp: UInt64
        /// Who sent it, in a conference (stamped by the relay); nil in a 1:1 call.
        public var sender: PeerID?

        /// Makes a message (for tests and aggregators).
        public init(bytes: [UInt8], timestamp: UInt64, sender: PeerID? = nil) {
            self.bytes = bytes
            self.timestamp = timestamp
            self.sender = sender
        }
    }

    /// What an inbound session delivers, in arrival order, `.closed` last.
    public enum Event: Sendable, Hashable {
        /// A whole message of a message-type session (`reliableMessage`, `unreliableMessage`).
        case message(Message)
        /// One fragment of a bytes-type send; see `FragmentAggregator` to rebuild sends.
        case fragment(ReceivedFragment)
        /// The session closed (`sessionEnd` when the sender closed or the call ended). Always last.
        case closed(DataSessionCloseReason)
    }

    /// The stream ID the sender chose, 100…999.
    public let streamID: StreamID
    /// The subgroup the session belongs to, or nil for a 1:1 call or the main room.
    public let subgroup: SubgroupName?
    /// The session type, as the sender announced it.
    public let type: SessionType
    /// What ``events`` yields: a ``DataStream``, backpressured down to the transport.
    public typealias Events = DataStream<Event>

    /// Messages or fragments, then `.closed`. Backpressured: buffers up to `inboundBufferBytes`,
    /// then the link stops being read; never dropped. One consumer at a time.
    public let events: Events
    /// The engine's side of ``events``.
    let channel: AsyncBoundedChannel<Event>
    private let engine: any InboundSessionEngine

    /// The session's counters: messages and bytes received (held ones included), bytes held
    /// before the app made it, and drops by reason. Still answers after the session or call ended.
    public var statistics: InboundDataSessionStatistics {
        get async { await engine.inboundStatistics(SessionKey(streamID: streamID, subgroup: subgroup)) }
    }

    init(key: SessionKey, type: SessionType, bufferBytes: Int, engine: any InboundSessionEngine) {
        self.streamID = key.streamID
        self.subgroup = key.subgroup
        self.type = type
        self.engine = engine
        let channel = AsyncBoundedChannel<Event>.received(capacity: bufferBytes) { event in
            switch event {
            case .message(let message): message.bytes.count
            case .fragment(let fragment): fragment.bytes.count
            case .closed: 1
            }
        }
        self.channel = channel
        self.events = DataStream(channel)
    }
}

/// What an inbound session needs from the engine that runs it (a call's or a conference's).
protocol InboundSessionEngine: Actor {
    func inboundStatistics(_ key: SessionKey) -> InboundDataSessionStatistics
}

public import ConduitCore

/// The receiving half of a data session (LINE Planet `PlanetKitInboundDataSession`).
///
/// Iterate ``events``: messages (message types) or fragments (bytes types) in arrival order,
/// then `.closed(reason)` last. The sequence is backpressured: while the app does not read,
/// received data buffers up to `inboundBufferBytes`, then the transport stops reading and the
/// sender's queue fills (it sees `tooLongQueuedData`). One consumer at a time.
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
    /// Messages or fragments, then `.closed`. Backpressured: buffers up to `inboundBufferBytes`; one consumer at a time.
    public let events: AsyncBoundedChannel<Event>

    init(key: SessionKey, type: SessionType, bufferBytes: Int) {
        self.streamID = key.streamID
        self.subgroup = key.subgroup
        self.type = type
        self.events = AsyncBoundedChannel(capacity: bufferBytes) { event in
            switch event {
            case .message(let message): max(1, message.bytes.count)
            case .fragment(let fragment): max(1, fragment.bytes.count)
            case .closed: 1
            }
        }
    }
}

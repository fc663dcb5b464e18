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
        public var bytes: [UInt8]
        /// The sender's user-defined timestamp.
        public var timestamp: UInt64
        /// Who sent it, in a conference (stamped by the relay); nil in a 1:1 call.
        public var sender: PeerID?

        public init(bytes: [UInt8], timestamp: UInt64, sender: PeerID? = nil) {
            self.bytes = bytes
            self.timestamp = timestamp
            self.sender = sender
        }
    }

    public enum Event: Sendable, Hashable {
        case message(Message)
        /// One fragment of a bytes-type send; see ``FragmentAggregator`` to rebuild sends.
        case fragment(ReceivedFragment)
        /// The session closed (`sessionEnd` when the sender closed or the call ended). Always last.
        case closed(DataSessionCloseReason)
    }

    public let streamID: StreamID
    public let subgroup: SubgroupName?
    public let type: SessionType
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

/// What a link knows, at one moment, of the peer's acknowledgement of the frames written on one
/// channel: the answer to ``TransportLink/waitForAcknowledgement(channel:timeout:)``.
///
/// Reliable data is only done when the peer has it: a session's `flush` and graceful close wait
/// for this, and say how much was not acknowledged when the wait ends without it.
public struct LinkAcknowledgement: Sendable, Hashable {
    /// Frames written on the channel (on every channel, for a wait on all of them) that the peer
    /// has not acknowledged: 0 when everything written was acknowledged.
    public var unacknowledgedFrames: Int
    /// The first bytes (at most ``headLength``) of each unacknowledged frame, oldest first, when
    /// the link still holds the frames; nil when it cannot tell which they are. The layer that
    /// wrote them reads its own headers there to say which messages were not acknowledged.
    public var unacknowledgedHeads: [[UInt8]]?

    /// Makes an answer.
    public init(unacknowledgedFrames: Int, unacknowledgedHeads: [[UInt8]]? = nil) {
        self.unacknowledgedFrames = unacknowledgedFrames
        self.unacknowledgedHeads = unacknowledgedHeads
    }

    /// Everything written was acknowledged.
    public static let complete = LinkAcknowledgement(unacknowledgedFrames: 0)

    /// True when every frame written was acknowledged.
    public var isComplete: Bool { unacknowledgedFrames == 0 }

    /// How many leading bytes of each unacknowledged frame ``unacknowledgedHeads`` keeps: enough
    /// for a relay envelope and a data frame header.
    public static let headLength = 64
}

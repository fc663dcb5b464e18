/// How the link below should carry one frame, said by the layer that wrote it.
///
/// The call, the conference and the relay know each frame's session, channel and reliability
/// when they write it; the tag passes that down with the frame in its ``DatagramBatch``, so the
/// reliability engine and the multi-stream transports never parse the frames of the layers above.
///
/// ```
///  channel = subgroupID << 16 | streamID        a data session (its data and control frames)
///            0                                  the call or conference itself (hello, goodbye, room control)
///            0xFFFF_0000 | trackID              a data track
///            0xFFFE_0000 | channelID            a labeled channel
///  reliable session types   → ordered, retransmitted until acknowledged
///  unreliable session types → unordered, never retransmitted (maxRetransmits 0), as in WebRTC
/// ```
public struct FrameTag: Sendable, Hashable {
    /// The link channel. Frames on different channels never wait for each other, so a stalled or
    /// lossy session holds up no other (no head-of-line blocking across sessions).
    public var channel: UInt32
    /// How the link delivers the frame: ordered or not, and when it gives up.
    public var delivery: Reliability
    /// The frame must not overtake any frame written before it, on any channel (a goodbye, a
    /// leave): a link with independent channels holds it until those are acknowledged.
    public var isBarrier: Bool
    /// The priority of the frame's session, for links that schedule their channels themselves
    /// (`sctp+udp://` sets its stream's SCTP scheduling priority from it): the session layer has
    /// already shared the link by priority, this orders what waits below it.
    public var priority: OutboundSessionOptions.Priority

    /// Makes a tag; the defaults are those of an untagged frame. `priority` nil: `high` on the
    /// control channel (its frames go before data, as the session layer sends them), `low`
    /// (WebRTC's default) elsewhere.
    public init(
        channel: UInt32 = FrameTag.controlChannel, delivery: Reliability = .reliableOrdered, isBarrier: Bool = false,
        priority: OutboundSessionOptions.Priority? = nil
    ) {
        self.channel = channel
        self.delivery = delivery
        self.isBarrier = isBarrier
        self.priority = priority ?? (channel == FrameTag.controlChannel ? .high : .low)
    }

    /// The channel of a call's or conference's own frames (hello, goodbye, room control).
    public static let controlChannel: UInt32 = 0

    /// The tag of an untagged frame: the control channel, reliable and ordered, no barrier.
    public static let neutral = FrameTag()

    /// The last frame of a call or room membership (goodbye, leave): reliable, ordered, a barrier.
    public static let farewell = FrameTag(isBarrier: true)

    /// The channel of a data session: its subgroup's wire number in the high 16 bits, its stream
    /// ID in the low (stream IDs start at 100, so no session shares the control channel).
    @inlinable public static func sessionChannel(stream: UInt16, subgroupID: UInt16) -> UInt32 {
        UInt32(subgroupID) << 16 | UInt32(stream)
    }

    /// The channel of a data track.
    @inlinable public static func trackChannel(_ trackID: UInt16) -> UInt32 { 0xFFFF_0000 | UInt32(trackID) }

    /// The channel of a labeled channel.
    @inlinable public static func labeledChannel(_ channelID: UInt16) -> UInt32 { 0xFFFE_0000 | UInt32(channelID) }

    /// A data session's frame: data with the session type's delivery, control reliable and ordered.
    public static func session(stream: StreamID, subgroupID: UInt16, type: SessionType?, priority: OutboundSessionOptions.Priority = .low) -> FrameTag {
        FrameTag(
            channel: sessionChannel(stream: UInt16(truncatingIfNeeded: stream.rawValue), subgroupID: subgroupID),
            delivery: type.map(Reliability.for) ?? .reliableOrdered, priority: priority
        )
    }

    /// This tag with a `maxPacketLifeTime` limit replaced by what is left of it, so every leg
    /// gives up when the message's time is over.
    public func withRemainingLifetime(milliseconds: UInt32) -> FrameTag {
        guard case .maxPacketLifeTime = delivery.limit else { return self }
        var tag = self
        tag.delivery.limit = .maxPacketLifeTime(milliseconds: milliseconds)
        return tag
    }
}

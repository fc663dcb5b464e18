public import ConduitCore

/// Which reliable-link channel, and which delivery, carries each frame of a call.
///
/// One channel per data session (its stream ID and subgroup ID), so a stalled or lossy session
/// never holds up another (no head-of-line blocking across sessions). A session's control frames
/// (open, unsupported, close) ride its own channel, reliable and ordered, so a close can never
/// overtake the data sent before it. Hello and goodbye ride channel 0 (stream IDs start at 100).
///
/// ```
///  channel = subgroupID << 16 | streamID        (0 = the call itself)
///  reliable types    → ordered, retransmitted until acknowledged
///  unreliable types  → unordered, never retransmitted (maxRetransmits 0), as in WebRTC
/// ```
public enum LinkChannelMap {
    /// The channel of the call's own frames (hello, goodbye, session control).
    public static let callChannel: UInt32 = 0

    /// Classifies one frame written by ``CallMachine``. Bytes that are not a well-formed Conduit
    /// frame go on the call channel, reliably and in order: the peer's parser counts and drops them.
    public static func classify(_ frame: UnsafeRawBufferPointer) -> (channel: UInt32, delivery: Reliability) {
        guard frame.count >= ControlFrame.headerSize else { return (callChannel, .reliableOrdered) }
        switch frame[0] & 0x0F {
        case FrameKind.data.rawValue:
            guard let (header, _) = try? DataFrameHeader.parse(frame) else { return (callChannel, .reliableOrdered) }
            return (channel(stream: UInt16(truncatingIfNeeded: header.streamID.rawValue), subgroupID: header.subgroupID), .for(header.sessionType))
        case FrameKind.control.rawValue:
            switch try? ControlFrame.parse(frame) {
            case .sessionOpen(let stream, let subgroupID, _, _)?, .sessionUnsupported(let stream, let subgroupID)?,
                 .sessionClose(let stream, let subgroupID, _)?:
                return (channel(stream: UInt16(truncatingIfNeeded: stream.rawValue), subgroupID: subgroupID), .reliableOrdered)
            case .hello?, .goodbye?, nil:
                return (callChannel, .reliableOrdered)
            }
        case RelayFrameKind.routed.rawValue, RelayFrameKind.relayed.rawValue:
            // A frame crossing a relay: classified by the v1 frame inside its envelope, so a
            // conference's sessions keep their own channels and reliability on lossy links.
            guard frame.count > RelayEnvelope.size else { return (callChannel, .reliableOrdered) }
            return classify(UnsafeRawBufferPointer(rebasing: frame[RelayEnvelope.size...]))
        case RelayFrameKind.track.rawValue:
            // A data track: its own channel, with the track's reliability. A lifetime is the one
            // the frame has left, so every leg gives up when the message's time is over.
            guard let header = try? TrackFrameHeader.parse(frame) else { return (callChannel, .reliableOrdered) }
            return (0xFFFF_0000 | UInt32(header.trackID), header.reliability)
        case RelayFrameKind.channel.rawValue:
            guard let header = try? ChannelFrameHeader.parse(frame) else { return (callChannel, .reliableOrdered) }
            return (0xFFFE_0000 | UInt32(header.channelID), header.reliability)
        default:
            return (callChannel, .reliableOrdered)
        }
    }

    /// Whether `frame` is the call's goodbye (which must not overtake earlier frames).
    public static func isGoodbye(_ frame: UnsafeRawBufferPointer) -> Bool {
        frame.count >= ControlFrame.headerSize && frame[0] & 0x0F == FrameKind.control.rawValue
            && (try? ControlFrame.parse(frame)) == .goodbye
    }

    /// The channel of a data session: its subgroup's number in the high 16 bits, its stream ID in the low.
    @inlinable public static func channel(stream: UInt16, subgroupID: UInt16) -> UInt32 {
        UInt32(subgroupID) << 16 | UInt32(stream)
    }
}

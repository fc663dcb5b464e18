public import ConduitCore

extension ARQEngine {
    /// Whether packets carry a CRC32C trailer.
    public enum Checksum: Sendable, Hashable {
        /// No trailer: only for paths that already check integrity (SRTP authentication, say).
        case none
        /// A CRC32C of the whole packet as its last 4 bytes; a mismatch is a counted drop.
        case crc32c
    }

    /// The link's knobs. Both ends of a link must agree on `checksum`, and should on `maxAckDelay`
    /// (each side uses its own value as the peer's, RFC 9002's `max_ack_delay`) and on
    /// `receiveWindow` (the initial assumption about the peer's window, corrected by its first ACK).
    public struct Configuration: Sendable, Hashable {
        /// Largest packet, checksum included: the transport's MTU less its own headers. The default
        /// is Conduit's 1232-byte datagram less a 12-byte RTP header. With ``pathMTUDiscovery``
        /// on, the most the search goes up to (RFC 8899 `MAX_PLPMTU`); off, the size of every
        /// full packet.
        public var maxDatagramSize = 1_220
        /// Path MTU discovery (DPLPMTUD, RFC 8899): packets start at its base size and grow to
        /// what the path carries, up to ``maxDatagramSize``, falling back on a black hole. Nil: off,
        /// packets are ``maxDatagramSize``. On by default (with the default sizes, base and
        /// maximum are equal, so there is nothing to search).
        public var pathMTUDiscovery: LinkPathMTUSearch.Settings? = LinkPathMTUSearch.Settings()
        /// The congestion controller: BBR by default (it holds the rate through random loss,
        /// where NewReno halves its window at every loss), or NewReno.
        public var congestionControl = CongestionControlAlgorithm.bbr
        /// Whether packets carry a CRC32C trailer; both ends must agree.
        public var checksum = Checksum.crc32c
        /// Bytes this side buffers for the upper layer (delivered but not yet polled, plus ordered
        /// frames waiting for a gap), each frame counted as its payload plus
        /// ``ARQEngine/frameOverhead``. Advertised to the peer in every ACK.
        public var receiveWindow = 4 * 1024 * 1024
        /// Bytes `send` may hold that have not been transmitted yet (payload plus overhead per frame).
        public var maxSendQueueBytes = 8 * 1024 * 1024
        /// Channels per direction. A channel's state lives as long as the link, because its
        /// sequence numbers must never be reused.
        public var maxChannels = 1_024
        /// Frames a channel may have between its cumulative point and its newest frame (a power of
        /// two, 64...65536): the receiver's reorder and duplicate window per channel.
        public var channelWindow = 4_096
        /// RFC 9000's `max_ack_delay`: how long an acknowledgement may be held back.
        public var maxAckDelay = Duration.milliseconds(25)
        /// Acknowledge at once after this many ack-eliciting packets (RFC 9000 section 13.2.2 says 2).
        public var ackElicitingThreshold = 2
        /// ACK ranges remembered and reported (older ones are forgotten).
        public var maxAckRanges = 32
        /// Unacknowledged packets tracked; at the cap no new ack-eliciting packet is sent.
        public var maxUnackedPackets = 16_384
        /// RFC 9002's `kInitialRtt`.
        public var initialRtt = Duration.milliseconds(333)
        /// TCP's DupThresh as RACK uses it (RFC 8985 section 6.2 step 4): until any reordering
        /// is seen, a packet with this many later packets acknowledged is lost without waiting
        /// for a reordering window (RFC 9002's `kPacketThreshold`).
        public var packetThreshold: UInt64 = 3
        /// Send a PING after this long without sending anything ack-eliciting, nil for never.
        public var keepaliveInterval: Duration? = .seconds(5)
        /// ``ARQEngine/isIdleTimedOut(now:)`` turns true after this long without a valid packet
        /// from the peer, nil for never.
        public var idleTimeout: Duration? = .seconds(30)

        /// The defaults: 1,220-byte packets with CRC32C, a 4 MiB receive window, RFC 9002's timers.
        public init() {}

        /// The packet size every path is assumed to carry: the search's base size (within
        /// ``maxDatagramSize``) with ``pathMTUDiscovery`` on, else ``maxDatagramSize``. Frames are
        /// cut to fit it, so any frame can be sent again after a fall back to it.
        public var basePacketSize: Int {
            pathMTUDiscovery.map { min($0.basePacketSize, maxDatagramSize) } ?? maxDatagramSize
        }

        /// The largest upper-layer frame `send` accepts: what is left of a base-size packet after
        /// the packet header, checksum trailer and a DATA frame header with its lifetime field.
        /// 1190 bytes with the defaults; the upper layer cuts its fragments to this (less its own
        /// 32-byte data-frame header).
        public var maxFramePayload: Int {
            basePacketSize - LinkPacket.overhead(checksum: checksum == .crc32c)
                - LinkPacket.dataFrameHeaderSize - LinkPacket.lifetimeFieldSize
        }

        /// The largest upper-layer frame `send` accepts: one that does not fit a packet of the size
        /// in use goes in parts (DATA's part flag), so frames may be cut to the size the path
        /// search found, and a relay may forward a frame that came from a link of larger packets.
        /// At most 65,535 bytes (DATA's length field), half the receive window (so flow control
        /// always lets a frame go) and the send queue (so it can be queued), each less the frame
        /// overhead. ``maxFramePayload`` when a base packet has no room for a part's fields.
        public var maxFrameBytes: Int {
            guard maxFramePayload > LinkPacket.partFieldsSize else { return maxFramePayload }
            let bound = min(LinkPacket.maxFrameLength, receiveWindow / 2 - ARQEngine.frameOverhead, maxSendQueueBytes - ARQEngine.frameOverhead)
            return max(maxFramePayload, bound)
        }

        /// The payload of each part of a frame sent in parts: a base packet's frame room less the
        /// part's fields, so a part fits whatever size the path falls back to.
        var partSize: Int { maxFramePayload - LinkPacket.partFieldsSize }

        /// The most bytes of ack-eliciting packets sent at one instant: 64 datagrams (one batched
        /// write), and only when 2 ms of the pacing rate is that much; the congestion window still
        /// bounds what is in flight (RFC 9002 section 7.7).
        public var maxPacingBurst: Int { Self.pacingBurstPackets * basePacketSize }

        /// The pacer's bucket in packets of the size in use (``maxPacingBurst`` at the base size).
        static let pacingBurstPackets = 64

        /// Traps on a configuration the link cannot honour (a programming error, like an invalid
        /// fragment size in `CallMachine`).
        func check() {
            precondition((64...65_535).contains(maxDatagramSize), "maxDatagramSize must be 64...65535")
            precondition(maxFramePayload >= 1, "maxDatagramSize leaves no room for a frame")
            precondition(receiveWindow >= 2 * (maxFramePayload + ARQEngine.frameOverhead) && receiveWindow <= Int(UInt32.max),
                         "receiveWindow must hold two full frames and fit in 32 bits")
            precondition(maxSendQueueBytes >= maxFramePayload + ARQEngine.frameOverhead, "maxSendQueueBytes must hold a full frame")
            precondition(maxChannels >= 1, "maxChannels must be positive")
            precondition((64...65_536).contains(channelWindow) && channelWindow & (channelWindow - 1) == 0,
                         "channelWindow must be a power of two in 64...65536")
            precondition(ackElicitingThreshold >= 1, "ackElicitingThreshold must be positive")
            precondition(maxAckRanges >= 1
                         && LinkPacket.ackFrameFixedSize + (maxAckRanges - 1) * LinkPacket.ackRangeSize
                            <= basePacketSize - LinkPacket.overhead(checksum: checksum == .crc32c),
                         "maxAckRanges must be positive and an ACK frame with that many ranges must fit a datagram")
            precondition(maxUnackedPackets >= 16, "maxUnackedPackets must be at least 16")
            precondition(packetThreshold >= 1, "packetThreshold must be positive")
            pathMTUDiscovery?.check()
        }
    }

    /// Reliability and ordering per frame: the vocabulary type the sessions already use.
    /// `.none` retransmits until acknowledged, `.maxRetransmits(0)` is unreliable.
    public typealias Delivery = Reliability

    /// What ``ARQEngine/send(_:channel:delivery:now:)-([UInt8],_,_,_)`` did with a frame.
    public enum SendResult: Sendable, Hashable {
        /// Queued with this sequence number on its channel.
        case queued(sequence: UInt32)
        /// The send queue is at ``Configuration/maxSendQueueBytes``; try again after
        /// ``pollTransmit(now:into:maxDatagrams:)`` has drained some of it.
        case queueFull
        /// Larger than ``Configuration/maxFrameBytes``.
        case frameTooLarge(limit: Int)
        /// A new channel would exceed ``Configuration/maxChannels``.
        case tooManyChannels
    }

    /// A frame for the upper layer.
    public struct ReceivedFrame: Sendable, Hashable {
        /// The channel the frame came on.
        public var channel: UInt32
        /// The frame's number on its channel.
        public var sequence: UInt32
        /// The frame's payload.
        public var bytes: [UInt8]
    }

    /// Counters since the link was made, and the current congestion and RTT state.
    public struct Statistics: Sendable, Hashable {
        // Packets.
        /// Packets sent, retransmissions and acknowledgements included.
        public var packetsSent = 0
        /// Packets that carried only an ACK.
        public var ackOnlyPacketsSent = 0
        /// Packets carrying at least one retransmitted frame.
        public var packetsRetransmitted = 0
        /// Packets received that parsed.
        public var packetsReceived = 0
        /// Packets declared lost (RFC 9002 section 6.1).
        public var packetsLost = 0
        /// Received again (a duplicated datagram): dropped unread.
        public var duplicatePacketsSuppressed = 0
        /// Refused by the parser (malformed, or its checksum did not match); nothing was applied.
        public var malformedPacketsDropped = 0
        /// The part of `malformedPacketsDropped` that failed the CRC32C check.
        public var checksumFailures = 0
        /// Why the last refused packet was refused.
        public var lastParseError: LinkWireError?
        /// Accepted packets left unacknowledged because one of their frames could not be taken
        /// (receive window, channel window or channel cap); the peer will send those frames again.
        public var packetsRefused = 0
        // Frames, sender side.
        /// DATA frames sent the first time.
        public var framesSent = 0
        /// DATA frames sent again after a loss.
        public var framesRetransmitted = 0
        /// Given up on: retransmission limit reached or lifetime over.
        public var framesAbandoned = 0
        /// The part of `framesAbandoned` whose lifetime ran out.
        public var framesExpired = 0
        /// Frames sent in parts (too large for a packet of the size in use).
        public var framesSentInParts = 0
        /// Parts of frames sent, retransmissions included.
        public var framePartsSent = 0
        /// FORWARD frames sent (a gap the receiver stops waiting for).
        public var forwardFramesSent = 0
        /// PING frames sent (keepalives and probes).
        public var pingsSent = 0
        /// Probe timeouts that fired (RFC 9002 section 6.2).
        public var probeTimeouts = 0
        /// Packets declared lost that the peer acknowledged after all (reordering, not loss): their
        /// frames' retransmissions were spurious (RFC 8985 section 6.2 step 4).
        public var spuriousRetransmissions = 0
        // Frames, receiver side.
        /// Frames handed to the upper layer.
        public var framesDelivered = 0
        /// Payload bytes handed to the upper layer.
        public var bytesDelivered = 0
        /// Frames received again (retransmissions of frames that had arrived): never delivered twice.
        public var duplicateFramesSuppressed = 0
        /// Frames whose lifetime was over when they arrived or before the upper layer polled them.
        public var framesExpiredAtReceiver = 0
        /// Gaps an ordered channel stopped waiting for because of a FORWARD frame.
        public var framesSkipped = 0
        /// Parts of frames received (``framesDelivered`` counts the frame once, when complete).
        public var framePartsReceived = 0
        /// Parts refused: another frame length than the frame's first part said, or parts too
        /// scattered to keep track of (the peer sends those again).
        public var framePartsRefused = 0
        /// Frames refused because the receive window was full (the peer resends them).
        public var framesDroppedOverWindow = 0
        /// Frames refused because they were too far ahead on their channel.
        public var framesDroppedOutsideChannelWindow = 0
        /// Frames refused because a new channel would exceed the channel cap.
        public var framesDroppedTooManyChannels = 0
        /// ACK frames sent.
        public var acksSent = 0
        /// ACK ranges forgotten to stay within `maxAckRanges`.
        public var ackRangesForgotten = 0
        // Current state.
        /// The smoothed round-trip time (RFC 9002 `smoothed_rtt`).
        public var smoothedRtt = Duration.zero
        /// The round-trip time's variation (RFC 9002 `rttvar`).
        public var rttVariation = Duration.zero
        /// The smallest round-trip time seen, once there is a sample.
        public var minRtt: Duration?
        /// The most recent round-trip time sample.
        public var latestRtt = Duration.zero
        /// The congestion window, in bytes.
        public var congestionWindow = 0
        /// The slow-start threshold, in bytes (`Int.max` until the first congestion event).
        public var slowStartThreshold = Int.max
        /// Bytes sent and neither acknowledged nor declared lost.
        public var bytesInFlight = 0
        /// Congestion events: losses that shrank the window.
        public var congestionEvents = 0
        /// Congestion events whose every loss proved spurious, so the window reduction was undone.
        public var congestionEventsUndone = 0
        /// Persistent congestion events: the window collapsed to its minimum.
        public var persistentCongestionEvents = 0
        // Path MTU discovery (RFC 8899).
        /// The largest packet the link sends now (the PLPMTU).
        public var pathMTU = 0
        /// Path MTU probes sent (padded PINGs, not counted in ``packetsLost`` when lost).
        public var pathProbesSent = 0
        /// Path MTU probes that went unacknowledged: too large for the path, or lost.
        public var pathProbesLost = 0
        /// Black holes detected: the packet size fell back to the base size.
        public var pathBlackHoles = 0
        /// All counters at zero.
        public init() {}
    }
}

extension ARQEngine.Configuration {
    /// The transport URL options of the reliability engine (`keepalive-ms`, `idle-timeout-ms`,
    /// `receive-window`, `max-ack-delay-ms`, `ack-every`, `pmtud`, `pmtud-base`, `cc`), read by `ConduitReliableTransport` and taken out
    /// of the URL before the transport sees it. Here in the core so that transports whose links
    /// run under the engine (`udp://`, impaired `loopback://`) list them as accepted options.
    public static let urlOptionKeys: Set<String> = [
        "keepalive-ms", "idle-timeout-ms", "receive-window", "max-ack-delay-ms", "ack-every",
        // Path MTU discovery (RFC 8899).
        "pmtud", "pmtud-base",
        // Congestion control: bbr or newreno.
        "cc",
    ]
}

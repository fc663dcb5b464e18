import DequeModule
@_spi(Benchmarks) public import ConduitCore

/// The datagram reliability engine: a sans-IO ARQ connection to one peer, both directions, for
/// transports without native reliability (raw UDP).
///
/// Modelled on quinn-proto and RFC 9000/9002 (QUIC). The driver feeds it datagrams
/// (``handle(batch:now:)``), upper-layer frames (``send(_:channel:delivery:now:)-([UInt8],_,_,_)``) and the
/// passing of time (``handleTimeout(now:)``), and drains packets to transmit
/// (``pollTransmit(now:into:maxDatagrams:)``), frames for the upper layer
/// (``pollDelivery(now:)``) and when to call again (``nextDeadline(now:)``). No clock, socket,
/// randomness or Foundation: the same inputs give the same outputs, so it is tested on virtual time.
///
/// What it does:
/// - **Packets** carry a never-reused 62-bit packet number; a lost frame is sent again in a new
///   packet (`LinkPacket`). ACK frames carry ranges, the ack delay and the receive window.
/// - **Loss detection**: RACK-TLP (RFC 8985): a packet is lost once a packet sent after it is
///   acknowledged and its RTT plus a reordering window has passed; the window adapts to the
///   reordering seen, and a loss the peer later acknowledges is counted as spurious and its
///   congestion window reduction undone. A tail loss probe, then RFC 9002's probe timeout with
///   exponential backoff. Only the frames of lost packets are sent again.
/// - **Channels** (a `UInt32` key; the upper layer packs stream and subgroup into it) number
///   their frames. Each frame is ordered or not and reliable, limited by retransmissions, or
///   limited by lifetime (``Delivery``). The receiver delivers every frame at most once, ordered
///   frames in sequence order, and a FORWARD frame (RFC 3758 style) tells it to stop waiting for
///   frames the sender gave up on.
/// - **Flow control**: the receiver advertises the bytes it can still buffer; the sender keeps its
///   transmitted-and-unresolved bytes within that.
/// - **Congestion control**: BBR (``BBRCongestionControl``, BBRv3) or NewReno (RFC 9002
///   section 7), as ``Configuration/congestionControl`` says, with pacing at the controller's rate.
/// - **Bounded**: send queue, unacknowledged packets, channels, reorder windows, ACK ranges,
///   receive buffer. Peer input never traps; refusals are counted in ``statistics``.
public struct ARQEngine: Sendable {
    /// Bytes each frame counts for in the send queue and the receive window on top of its payload,
    /// so that a flood of empty frames is bounded too.
    public static let frameOverhead = 32

    /// A frame the sender has not finished with: queued, in flight, or waiting to be sent again.
    struct OutstandingFrame: Sendable {
        let channel: UInt32
        let sequence: UInt32
        let ordered: Bool
        /// The upper layer's bytes, shared with the batch they were written in (not copied).
        let payload: ArraySlice<UInt8>
        /// Lifetime deadline, from the `send` call.
        let deadline: ConduitInstant?
        /// nil: retransmit until acknowledged.
        let retransmitLimit: Int?
        var retransmissions = 0
        /// Sent at least once: counts towards the peer's window rather than the send queue.
        var transmitted = false
        /// The packet holding the newest copy, while that copy is in flight.
        var latestPacket: UInt64?
        var awaitingRetransmit = false
        /// The frame's parts, once it goes in parts (nil: it goes whole).
        var parts: LinkFrameParts?

        var cost: Int { payload.count + ARQEngine.frameOverhead }
        var mayBeRetransmitted: Bool { retransmitLimit.map { retransmissions < $0 } ?? true }

        /// Its scalars, read in place: a copy of the frame retains and releases its payload.
        var summary: FrameSummary {
            FrameSummary(
                channel: channel, sequence: sequence, ordered: ordered, payloadCount: payload.count, deadline: deadline,
                transmitted: transmitted, awaitingRetransmit: awaitingRetransmit, mayBeRetransmitted: mayBeRetransmitted,
                isInParts: parts != nil
            )
        }
    }

    struct FrameSummary {
        let channel: UInt32
        let sequence: UInt32
        let ordered: Bool
        let payloadCount: Int
        let deadline: ConduitInstant?
        let transmitted: Bool
        let awaitingRetransmit: Bool
        let mayBeRetransmitted: Bool
        let isInParts: Bool

        var cost: Int { payloadCount + ARQEngine.frameOverhead }
    }

    /// The link's knobs: packet size, checksum, windows, timers, caps.
    public let configuration: Configuration
    var counters = Statistics()

    // MARK: Sender state

    var nextPacketNumber: UInt64 = 0
    var frames = LinkSlotMap<UInt64, OutstandingFrame, LinkHandleIndex>()
    var nextFrameHandle: UInt64 = 0
    var sendChannels = LinkSlotMap<UInt32, LinkSendChannel, LinkHashedIndex<UInt32>>()
    /// Channels with queued frames, served round-robin one frame at a time.
    var activeChannels = Deque<UInt32>()
    var channelsInRing: Set<UInt32> = []
    /// Frames (or parts) whose newest copy was lost, oldest loss first.
    var retransmitQueue = Deque<LinkRetransmission>()
    /// Channels owing the peer a FORWARD frame.
    var forwardQueue = Deque<UInt32>()
    /// Cost of frames not yet transmitted.
    public internal(set) var queuedBytes = 0
    /// Cost of frames transmitted and neither acknowledged nor abandoned: what flow control limits.
    public internal(set) var outstandingBytes = 0
    var lifetimes = LinkDeadlineHeap()
    var liveLifetimeFrames = 0
    var pingPending = false
    var probesOwed = 0
    var ledger = LinkSentPacketLedger()
    var rtt: LinkRTTEstimator
    /// The congestion controller ``Configuration/congestionControl`` chose, behind its seam.
    var congestion: any CongestionController
    /// Delivery rate samples for the controller (BBR's bandwidth model).
    var deliveryRate = LinkDeliveryRateEstimator()
    var pacer: LinkPacer
    var largestAcked: UInt64?
    /// RACK-TLP's state (RFC 8985): time-based loss detection and spurious-loss memory.
    var rack = LinkRACK()
    /// RACK's reordering timer: when the next outstanding packet's reordering window runs out.
    var lossTime: ConduitInstant?
    var ptoCount = 0
    var firstRttSampleTime: ConduitInstant?
    /// The free space the peer advertised in its newest ACK.
    public internal(set) var peerReceiveWindow: Int
    var peerWindowLargest: UInt64?
    var persistCount = 0
    var lastAckElicitingSent: ConduitInstant
    var scratchPackets: [LinkSentPacket] = []
    /// Path MTU discovery (RFC 8899), nil when ``Configuration/pathMTUDiscovery`` is off.
    var pathSearch: LinkPathMTUSearch?

    // MARK: Receiver state

    var received: LinkReceivedPackets
    var largestReceivedTime = ConduitInstant.zero
    var ackElicitingSinceAck = 0
    var ackImmediately = false
    var ackDeadline: ConduitInstant?
    /// The largest ack-eliciting packet received, and the largest acknowledgement the peer is
    /// known to have received (it acknowledged a packet of ours carrying it). While the first is
    /// ahead, every ack-eliciting packet repeats the ACK, so a lost ACK-only packet costs one
    /// round trip of ours rather than a backed-off probe timeout of the peer's.
    var largestAckElicitingReceived: UInt64?
    var ackConfirmed: UInt64?
    var windowUpdatePending = false
    var lastAdvertisedWindow: Int
    var receiveChannels = LinkSlotMap<UInt32, LinkReceiveChannel, LinkHashedIndex<UInt32>>()
    /// Frames arriving in parts, by channel (high 32 bits) and sequence.
    var partialFrames: [UInt64: LinkPartialFrame] = [:]
    var deliveries = LinkDeliveryQueue()
    /// Cost of frames received and not yet polled (reorder buffers included).
    public internal(set) var receiveBufferedBytes = 0
    var lastReceived: ConduitInstant
    var writer = LinkPacketWriter()
    /// How the checksum trailer is computed (see ``CRC32CFunction``).
    let crc32c: CRC32CFunction

    /// `crc32c` computes the checksum trailer when `configuration.checksum` asks for one.
    public init(configuration: Configuration = .init(), now: ConduitInstant, crc32c: CRC32CFunction = .portable) {
        configuration.check()
        self.configuration = configuration
        self.crc32c = crc32c
        rtt = LinkRTTEstimator(initialRtt: configuration.initialRtt)
        congestion = configuration.congestionControl.makeController(maxDatagramSize: configuration.basePacketSize)
        pacer = LinkPacer(maxDatagramSize: configuration.basePacketSize, maxBurst: configuration.maxPacingBurst, now: now)
        pathSearch = configuration.pathMTUDiscovery.map { LinkPathMTUSearch(settings: $0, maxPacketSize: configuration.maxDatagramSize) }
        peerReceiveWindow = configuration.receiveWindow
        lastAdvertisedWindow = configuration.receiveWindow
        received = LinkReceivedPackets(capacity: configuration.maxAckRanges)
        lastAckElicitingSent = now
        lastReceived = now
    }

    // MARK: Upper layer, sending

    /// Queues one upper-layer frame on `channel`. Checks size and caps here, so a refusal is a
    /// result at the call, never a silent drop later.
    public mutating func send(_ frame: [UInt8], channel: UInt32, delivery: Delivery = .reliableOrdered, now: ConduitInstant) -> SendResult {
        send(frame[...], channel: channel, delivery: delivery, now: now)
    }

    /// Queues datagram `index` of `batch` on `channel`, as ``send(_:channel:delivery:now:)-([UInt8],_,_,_)``
    /// does, without copying it: the engine keeps a slice of the batch's storage until the frame
    /// is acknowledged or given up on. A batch mostly empty space (a few frames in a buffer
    /// reserved for many) would keep that space alive with its frames, so its frames are copied.
    public mutating func send(datagram index: Int, of batch: DatagramBatch, channel: UInt32, delivery: Delivery = .reliableOrdered, now: ConduitInstant) -> SendResult {
        let frame = batch.storage[batch.range(of: index)]
        // Refusals first: a frame the queue cannot take now is not copied only to be dropped (a
        // writer retries it once the queue has room).
        guard frame.count <= configuration.maxFrameBytes else { return .frameTooLarge(limit: configuration.maxFrameBytes) }
        guard queuedBytes + frame.count + Self.frameOverhead <= configuration.maxSendQueueBytes else { return .queueFull }
        if batch.byteCount * 2 >= batch.storage.capacity {
            return send(frame, channel: channel, delivery: delivery, now: now)
        }
        PayloadCopies.countSend(frame.count)
        return send(ArraySlice(Array(frame)), channel: channel, delivery: delivery, now: now)
    }

    /// Queues `frame` (a slice, kept as it is) on `channel`.
    public mutating func send(_ frame: ArraySlice<UInt8>, channel: UInt32, delivery: Delivery = .reliableOrdered, now: ConduitInstant) -> SendResult {
        guard frame.count <= configuration.maxFrameBytes else { return .frameTooLarge(limit: configuration.maxFrameBytes) }
        let cost = frame.count + Self.frameOverhead
        guard queuedBytes + cost <= configuration.maxSendQueueBytes else { return .queueFull }
        if sendChannels[channel] == nil {
            guard sendChannels.count < configuration.maxChannels else { return .tooManyChannels }
            sendChannels.insert(LinkSendChannel(), for: channel)
        }
        var deadline: ConduitInstant?
        var limit: Int?
        switch delivery.limit {
        case .none: break
        case .maxRetransmits(let count): limit = Int(count)
        case .maxPacketLifeTime(let milliseconds): deadline = LinkTime.add(now, Int64(milliseconds) * LinkTime.millisecond)
        }
        let sequence = sendChannels.update(channel) { $0.assignSequence() } ?? 0
        let handle = nextFrameHandle
        nextFrameHandle += 1
        frames.insert(
            OutstandingFrame(
                channel: channel, sequence: sequence, ordered: delivery.ordered, payload: frame,
                deadline: deadline, retransmitLimit: limit
            ),
            for: handle
        )
        sendChannels.update(channel) { $0.queue.append(handle) }
        if channelsInRing.insert(channel).inserted { activeChannels.append(channel) }
        if let deadline {
            lifetimes.push(deadline, handle)
            liveLifetimeFrames += 1
        }
        queuedBytes += cost
        return .queued(sequence: sequence)
    }

    /// Gives up on or completes a frame: it leaves the send queue or the flight, its channel
    /// records how it ended, and a FORWARD frame is queued if the channel's cumulative point moved
    /// past an abandoned frame.
    mutating func resolveFrame(_ handle: UInt64, abandoned: Bool, expired: Bool = false) {
        guard let frame = frames.removeValue(forKey: handle) else { return }
        if frame.transmitted {
            outstandingBytes -= frame.cost
            // A frame in parts stays at its channel's head until every part went once.
            if let parts = frame.parts, !parts.allSent { popResolvedHeads(of: frame.channel) }
        } else {
            queuedBytes -= frame.cost
            popResolvedHeads(of: frame.channel)
        }
        if frame.deadline != nil { liveLifetimeFrames -= 1 }
        if abandoned {
            counters.framesAbandoned += 1
            if expired { counters.framesExpired += 1 }
        }
        if sendChannels.update(frame.channel, { $0.resolve(frame.sequence, abandoned: abandoned) }) == true {
            requestForward(frame.channel)
        }
    }

    /// Keeps the invariant that a channel's queue starts with a live frame.
    mutating func popResolvedHeads(of channel: UInt32) {
        while let head = sendChannels[channel]?.queue.first, frames[head] == nil {
            sendChannels.update(channel) { _ = $0.queue.removeFirst() }
        }
    }

    mutating func requestForward(_ channel: UInt32) {
        guard sendChannels[channel]?.forwardQueued == false else { return }
        sendChannels.update(channel) { $0.forwardQueued = true }
        forwardQueue.append(channel)
    }

    // MARK: Upper layer, receiving

    /// The next frame for the upper layer: ordered channels in sequence order, unordered ones as
    /// they arrived, each frame once. A frame whose lifetime is over by `now` is dropped instead.
    public mutating func pollDelivery(now: ConduitInstant) -> ReceivedFrame? {
        while let (next, bytes) = deliveries.popFirst() {
            receiveBufferedBytes -= bytes.count + Self.frameOverhead
            noteReceiveSpaceFreed()
            if let expiry = next.expiresAt, expiry <= now {
                counters.framesExpiredAtReceiver += 1
                continue
            }
            counters.framesDelivered += 1
            counters.bytesDelivered += bytes.count
            return ReceivedFrame(channel: next.channel, sequence: next.sequence, bytes: bytes)
        }
        return nil
    }

    /// Appends up to `maxFrames` frames for the upper layer to `batch`, as ``pollDelivery(now:)``
    /// would hand them out one by one; returns how many. With nothing to drop for its lifetime and
    /// an empty `batch`, the frames are handed over as one batch, without copying them again.
    public mutating func pollDeliveries(now: ConduitInstant, into batch: inout DatagramBatch, maxFrames: Int) -> Int {
        if let moved = deliveries.takeAll(into: &batch, maxFrames: maxFrames) {
            receiveBufferedBytes -= moved.bytes + moved.frames * Self.frameOverhead
            counters.framesDelivered += moved.frames
            counters.bytesDelivered += moved.bytes
            noteReceiveSpaceFreed()
            return moved.frames
        }
        var taken = 0
        while taken < maxFrames, let frame = pollDelivery(now: now) {
            batch.append(frame.bytes)
            taken += 1
        }
        return taken
    }

    /// Whether frames wait for ``pollDelivery(now:)``.
    public var hasPendingDeliveries: Bool { !deliveries.isEmpty }

    /// Once the upper layer has freed a quarter of the window beyond what was last advertised, tell
    /// the peer without waiting for its next packet (a window update, like QUIC's MAX_DATA).
    mutating func noteReceiveSpaceFreed() {
        let free = configuration.receiveWindow - receiveBufferedBytes
        if free - lastAdvertisedWindow >= configuration.receiveWindow / 4, !received.isEmpty {
            windowUpdatePending = true
        }
    }

    // MARK: State

    /// Counters since the link was made, with the current congestion and RTT state.
    public var statistics: Statistics {
        var result = counters
        result.smoothedRtt = rtt.smoothed
        result.rttVariation = rtt.variation
        result.minRtt = rtt.minimum
        result.latestRtt = rtt.latest
        result.congestionWindow = congestion.window
        result.slowStartThreshold = congestion.slowStartThreshold
        result.bytesInFlight = congestion.bytesInFlight
        result.congestionEvents = congestion.congestionEvents
        result.congestionEventsUndone = congestion.congestionEventsUndone
        result.persistentCongestionEvents = congestion.persistentCongestionEvents
        result.ackRangesForgotten = received.forgottenRanges
        result.pathMTU = currentMaxDatagramSize
        if let counts = pathSearch?.counters {
            result.pathProbesSent = counts.probesSent
            result.pathProbesLost = counts.probesLost
            result.pathBlackHoles = counts.blackHoles
        }
        return result
    }

    /// The congestion window, in bytes.
    public var congestionWindow: Int { congestion.window }
    /// Bytes sent and neither acknowledged nor declared lost.
    public var bytesInFlight: Int { congestion.bytesInFlight }
    /// The smoothed round-trip time.
    public var smoothedRtt: Duration { rtt.smoothed }
    /// Bytes per second the pacer releases at: BBR's pacing rate, or for NewReno 1.25 congestion
    /// windows per smoothed RTT.
    public var pacingRateBytesPerSecond: Int { Int(pacingRate * 1e9) }
    /// The number the next packet will carry.
    public var nextPacketNumberToSend: UInt64 { nextPacketNumber }
    /// Unacknowledged ack-eliciting packets tracked.
    public var unackedPacketCount: Int { ledger.outstandingCount }

    /// Frames written and not yet acknowledged or given up on: what a graceful close waits for,
    /// and, as it falls, the sign that the peer is still taking them.
    public var framesOutstanding: Int { frames.count }

    /// An ack-eliciting packet of the peer's waits for its acknowledgement (delayed up to
    /// max_ack_delay, RFC 9000 section 13.2.1).
    public var hasDelayedAcknowledgement: Bool { ackElicitingSinceAck > 0 && !received.isEmpty }

    /// Makes a delayed acknowledgement due now. A link about to close sends it: left to its
    /// timer it would never go, and the peer would count its last frames as unacknowledged.
    public mutating func acknowledgeNow() {
        if hasDelayedAcknowledgement { ackImmediately = true }
    }

    /// Nothing queued, nothing unresolved, nothing owed to the peer.
    public var isQuiescent: Bool {
        frames.isEmpty && forwardQueue.isEmpty && ledger.isEmpty && retransmitQueue.isEmpty
    }

    /// When the idle timeout runs out if nothing arrives first.
    public var idleDeadline: ConduitInstant? {
        configuration.idleTimeout.map { LinkTime.add(lastReceived, LinkTime.nanoseconds($0)) }
    }

    /// True once ``Configuration/idleTimeout`` has passed without a valid packet from the peer; the
    /// owner then closes the link. ``nextDeadline(now:)`` wakes the driver for it.
    public func isIdleTimedOut(now: ConduitInstant) -> Bool {
        guard let idleDeadline else { return false }
        return now >= idleDeadline
    }
}

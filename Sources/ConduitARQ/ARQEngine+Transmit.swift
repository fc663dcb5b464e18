public import ConduitCore

extension ARQEngine {
    /// Whether ack-eliciting packets may go out now, ignoring what there is to send.
    enum SendAllowance: Equatable {
        case open
        /// The pacer releases the next packet at this instant.
        case paced(until: ConduitInstant)
        /// The congestion window or the unacknowledged-packet cap: wait for acknowledgements.
        case blocked
    }

    var pacingRate: Double { congestion.pacingRate(smoothedRttNanoseconds: rtt.smoothedNanoseconds) }

    func sendAllowance(now: ConduitInstant) -> SendAllowance {
        // At the cap only probes go (two over it), so a PTO can still find out what happened.
        guard ledger.entryCount < configuration.maxUnackedPackets
            || (probesOwed > 0 && ledger.entryCount < configuration.maxUnackedPackets + 2)
        else { return .blocked }
        // Probes are not limited by the congestion window (RFC 9002 section 6.2.4); they are paced.
        if probesOwed == 0, !congestion.allows(bytes: currentMaxDatagramSize) { return .blocked }
        let rate = pacingRate
        guard pacer.mayRelease(now: now, rate: rate) else { return .paced(until: pacer.nextRelease(now: now, rate: rate)) }
        return .open
    }

    var ackIsDue: Bool { !received.isEmpty && (ackImmediately || windowUpdatePending) }

    /// Some ack-eliciting packet of the peer's is acknowledged in no ACK the peer has confirmed.
    var hasUnconfirmedAck: Bool {
        guard let largestAckElicitingReceived else { return false }
        return ackConfirmed.map { largestAckElicitingReceived > $0 } ?? true
    }

    func ackIsDue(now: ConduitInstant) -> Bool {
        ackIsDue || (!received.isEmpty && ackDeadline.map { $0 <= now } == true)
    }

    /// A new frame that flow control and its channel window allow now, if any.
    func hasSendableNewFrame() -> Bool {
        for channel in activeChannels {
            guard let cost = sendableHeadCost(of: channel) else { continue }
            if outstandingBytes + cost <= peerReceiveWindow { return true }
        }
        return false
    }

    /// New frames wait only for the peer's window (not for congestion or channel windows).
    var isFlowBlocked: Bool {
        var waiting = false
        for channel in activeChannels {
            guard let cost = sendableHeadCost(of: channel) else { continue }
            if outstandingBytes + cost <= peerReceiveWindow { return false }
            waiting = true
        }
        return waiting
    }

    /// The cost of `channel`'s first queued frame if its channel window lets it go; read in place.
    func sendableHeadCost(of channel: UInt32) -> Int? {
        guard let (head, resolvedBelow) = sendChannels.read(channel, { state -> (UInt64, UInt32)? in
            state.queue.first.map { ($0, state.resolvedBelow) }
        }) ?? nil else { return nil }
        // A frame in parts part-way through its first sending is in flight already: its cost counts there.
        guard let (sequence, cost) = frames.read(head, { ($0.sequence, $0.transmitted ? 0 : $0.cost) }) else { return nil }
        return Int(sequence &- resolvedBelow) < configuration.channelWindow ? cost : nil
    }

    func hasAckElicitingContent() -> Bool {
        pingPending || probesOwed > 0 || !forwardQueue.isEmpty || !retransmitQueue.isEmpty || hasSendableNewFrame()
            || pathProbeWanted != nil
    }

    /// Whether ``pollTransmit(now:into:maxDatagrams:)`` would send something now.
    func isTransmitReady(now: ConduitInstant) -> Bool {
        if ackIsDue(now: now) { return true }
        return sendAllowance(now: now) == .open && hasAckElicitingContent()
    }

    /// Appends the packets that may go out now to `batch` (caller-owned, reusable): ACKs when due,
    /// then, within the congestion window, the pacer and the peer's receive window: FORWARD frames,
    /// retransmissions, new frames round-robin over channels, probes and PINGs. Returns how many
    /// datagrams were appended (at most `maxDatagrams`).
    @discardableResult
    public mutating func pollTransmit(now: ConduitInstant, into batch: inout DatagramBatch, maxDatagrams: Int = 64) -> Int {
        expireLifetimes(now: now)
        var sent = 0
        var attempts = 0
        while sent < maxDatagrams, attempts < maxDatagrams * 4 {
            attempts += 1
            switch buildPacket(now: now, into: &batch) {
            case .sent: sent += 1
            case .cleanedUp: continue
            case .nothing: return sent
            }
        }
        return sent
    }

    enum BuildOutcome { case sent, cleanedUp, nothing }

    /// Builds one packet straight into the end of `batch`'s storage: the frames' payloads are
    /// copied once, from the send queue into the packet.
    mutating func buildPacket(now: ConduitInstant, into batch: inout DatagramBatch) -> BuildOutcome {
        var outcome = BuildOutcome.nothing
        batch.appendInPlace { storage in
            swap(&storage, &writer.bytes)
            outcome = buildPacket(now: now)
            swap(&storage, &writer.bytes)
            return outcome == .sent
        }
        return outcome
    }

    /// Builds one packet at the end of `writer.bytes`.
    private mutating func buildPacket(now: ConduitInstant) -> BuildOutcome {
        let mayElicit = sendAllowance(now: now) == .open && hasAckElicitingContent()
        let ackDue = ackIsDue(now: now)
        let mustAck = !received.isEmpty && ackDue
        // Piggyback an acknowledgement on an ack-eliciting packet when something waits to be
        // acknowledged, or the peer has not confirmed our acknowledgement of its last ack-eliciting packet.
        let mayPiggyback = !received.isEmpty && !mustAck && mayElicit && (ackElicitingSinceAck > 0 || hasUnconfirmedAck)
        guard mustAck || mayElicit, nextPacketNumber <= LinkPacket.maxPacketNumber else { return .nothing }
        if mayElicit, let probeSize = pathProbeWanted {
            writePathProbe(size: probeSize, now: now)
            return .sent
        }

        let checksum = configuration.checksum == .crc32c
        let number = nextPacketNumber
        let limit = currentMaxDatagramSize - (checksum ? LinkPacket.checksumSize : 0)
        writer.begin(packetNumber: number, checksum: checksum, capacity: currentMaxDatagramSize)
        var ackLargest: UInt64?
        // A due ACK goes first. A piggybacked one goes after the data, only where it fits: written
        // first, it would take the room a full-size frame needs, and every packet would then be an
        // ACK-only packet that congestion control does not limit (an endless burst).
        if mustAck {
            ackLargest = received.largest
            writeAck(now: now, limit: limit)
        }
        var items = LinkSentItems()
        var retransmitted = false
        if mayElicit { fill(&items, number: number, limit: limit, now: now, retransmitted: &retransmitted) }
        if mayPiggyback, !items.isEmpty, writer.count + LinkPacket.ackFrameFixedSize <= limit {
            ackLargest = received.largest
            writeAck(now: now, limit: limit)
        }
        // Only stale entries were found: nothing to send after all, and the number stays unused.
        if items.isEmpty, ackLargest == nil { return .cleanedUp }

        if checksum { writer.appendChecksum(using: crc32c) }
        nextPacketNumber += 1
        counters.packetsSent += 1
        let size = writer.count
        guard !items.isEmpty else {
            counters.ackOnlyPacketsSent += 1
            return .sent
        }
        // RFC 9002 section 7.8: a packet sent with nothing more waiting while the window has room
        // does not grow the window when acknowledged.
        let appLimited = !hasAckElicitingContent() && congestion.bytesInFlight + size < congestion.window
        let delivery = deliveryRate.onPacketSent(size: size, inFlightBefore: congestion.bytesInFlight, isAppLimited: appLimited, now: now)
        ledger.append(LinkSentPacket(
            number: number, timeSent: now, size: size, isAppLimited: appLimited, delivery: delivery, items: items, ackLargest: ackLargest
        ))
        congestion.onPacketSent(bytes: size)
        pacer.consume(size, now: now, rate: pacingRate)
        lastAckElicitingSent = now
        if probesOwed > 0 { probesOwed -= 1 }
        if retransmitted { counters.packetsRetransmitted += 1 }
        return .sent
    }

    /// Writes an ACK frame: ranges largest first, as many as `maxAckRanges` and the packet allow
    /// (RFC 9000 section 13.2.4), the delay since the largest arrived, and the free receive window.
    mutating func writeAck(now: ConduitInstant, limit: Int) {
        let ranges = received.ranges
        guard let top = ranges.last else { return }
        let delay = UInt32(clamping: LinkTime.elapsed(from: largestReceivedTime, to: now) / 1_000)
        let free = max(0, configuration.receiveWindow - receiveBufferedBytes)
        let first = UInt32(clamping: top.upperBound - top.lowerBound)
        let countOffset = writer.appendAckHeader(
            largest: top.upperBound, ackDelayMicroseconds: delay, window: UInt32(clamping: free), firstRange: first
        )
        var smallest = top.upperBound - UInt64(first)
        var count = 0
        var index = ranges.count - 2
        while index >= 0, count + 1 < configuration.maxAckRanges, writer.count + LinkPacket.ackRangeSize <= limit {
            let range = ranges[index]
            // Ranges are disjoint and not adjacent, so the gap is at least 0.
            let gap = smallest - range.upperBound - 2
            guard gap <= UInt64(UInt32.max) else { break }
            let length = UInt32(clamping: range.upperBound - range.lowerBound)
            writer.appendAckRange(gap: UInt32(gap), length: length)
            smallest = range.upperBound - UInt64(length)
            count += 1
            index -= 1
        }
        writer.set16(UInt16(count), at: countOffset)
        ackElicitingSinceAck = 0
        ackImmediately = false
        ackDeadline = nil
        windowUpdatePending = false
        lastAdvertisedWindow = free
        counters.acksSent += 1
    }

    /// The remaining-lifetime field of a frame sent now, or `expired` if nothing useful is left.
    ///
    /// The lifetime runs from `send`. The sender takes off its estimate of the one-way delay
    /// (half the smoothed RTT plus the RTT variation, once there is a sample), so the receiver's
    /// deadline, its arrival time plus the field, falls on the sender's deadline as long as the
    /// path is no more asymmetric than that margin.
    func lifetimeField(of frame: FrameSummary, now: ConduitInstant) -> (expired: Bool, milliseconds: UInt32?) {
        guard let deadline = frame.deadline else { return (false, nil) }
        let oneWay = rtt.hasSample ? rtt.smoothedNanoseconds / 2 + rtt.variationNanoseconds : 0
        let remaining = LinkTime.elapsed(from: now, to: deadline) - oneWay
        guard deadline > now, remaining >= LinkTime.millisecond else { return (true, nil) }
        return (false, UInt32(clamping: remaining / LinkTime.millisecond))
    }

    func dataFrameSize(_ frame: FrameSummary, lifetime: UInt32?) -> Int {
        LinkPacket.dataFrameHeaderSize + (lifetime != nil ? LinkPacket.lifetimeFieldSize : 0) + frame.payloadCount
    }

    /// Writes `handle`'s DATA frame, its payload read in place from the frame table.
    mutating func writeData(_ handle: UInt64, _ frame: FrameSummary, lifetime: UInt32?) {
        var packet = LinkPacketWriter()
        swap(&packet, &writer)
        frames.read(handle) { stored in
            packet.appendData(channel: frame.channel, sequence: frame.sequence, ordered: frame.ordered, lifetimeMilliseconds: lifetime, payload: stored.payload)
        }
        swap(&packet, &writer)
    }

    /// Fills the packet with ack-eliciting frames, most urgent first.
    mutating func fill(_ items: inout LinkSentItems, number: UInt64, limit: Int, now: ConduitInstant, retransmitted: inout Bool) {
        // 1. FORWARD frames, so receivers stop waiting as early as possible.
        while let channel = forwardQueue.first, writer.count + LinkPacket.forwardFrameSize <= limit {
            forwardQueue.removeFirst()
            // Values, not a copy of the channel: a copy alive across writeForward's mutation
            // would make the channel's deques copy themselves.
            guard sendChannels[channel]?.forwardQueued == true, let value = sendChannels[channel]?.resolvedBelow else { continue }
            writeForward(channel: channel, value: value, into: &items)
        }
        // 2. Frames (and parts) whose newest copy was lost.
        while let entry = retransmitQueue.first {
            if let part = entry.part {
                let outcome = writePartCopy(entry.handle, index: part, now: now, number: number, limit: limit, into: &items)
                if outcome == .noRoom { break }
                retransmitQueue.removeFirst()
                if outcome == .written { retransmitted = true }
                continue
            }
            let handle = entry.handle
            guard let frame = frames.read(handle, { $0.summary }), frame.awaitingRetransmit else {
                retransmitQueue.removeFirst()
                continue
            }
            let lifetime = lifetimeField(of: frame, now: now)
            if lifetime.expired {
                retransmitQueue.removeFirst()
                resolveFrame(handle, abandoned: true, expired: true)
                continue
            }
            if !fitsAPacket(frame, lifetime: lifetime.milliseconds, limit: limit) {
                // The path fell back to packets this frame no longer fits: it goes again in parts.
                retransmitQueue.removeFirst()
                splitForRetransmission(handle)
                continue
            }
            guard writer.count + dataFrameSize(frame, lifetime: lifetime.milliseconds) <= limit else { break }
            retransmitQueue.removeFirst()
            writeCopy(handle, frame, lifetime: lifetime.milliseconds, number: number, into: &items)
            frames.update(handle) { $0.awaitingRetransmit = false }
            retransmitted = true
        }
        // 3. New frames, one per channel in turn.
        var turns = activeChannels.count
        while turns > 0, let channel = activeChannels.first {
            turns -= 1
            // No copy of the channel state may live across the mutations below (a copy would make
            // its deque of queued handles copy itself on removeFirst: once per frame sent).
            guard let handle = sendChannels.read(channel, { $0.queue.first }) ?? nil, let frame = frames.read(handle, { $0.summary }),
                let windowOffset = sendChannels.read(channel, { $0.offset(of: frame.sequence) })
            else {
                activeChannels.removeFirst()
                channelsInRing.remove(channel)
                continue
            }
            let lifetime = lifetimeField(of: frame, now: now)
            if lifetime.expired {
                resolveFrame(handle, abandoned: true, expired: true)  // pops it from the queue
                turns += 1
                continue
            }
            guard windowOffset < configuration.channelWindow else {
                activeChannels.append(activeChannels.removeFirst())
                continue
            }
            if frame.isInParts || !fitsAPacket(frame, lifetime: lifetime.milliseconds, limit: limit) {
                // Too large for a packet of the size in use: in parts, as many as this packet
                // holds; the frame keeps its channel's head until every part went once.
                if !frame.transmitted {
                    guard outstandingBytes + frame.cost <= peerReceiveWindow else {
                        activeChannels.append(activeChannels.removeFirst())
                        continue
                    }
                    startParts(handle, frame)
                }
                guard writeNewParts(handle, frame, lifetime: lifetime.milliseconds, number: number, limit: limit, into: &items) else {
                    activeChannels.append(activeChannels.removeFirst())
                    break
                }
                finishHead(of: channel)
                continue
            }
            // The peer's window is one for the whole link. A frame that does not fit waits its
            // turn; a smaller one on another channel may still go (as hasSendableNewFrame says).
            guard outstandingBytes + frame.cost <= peerReceiveWindow else {
                activeChannels.append(activeChannels.removeFirst())
                continue
            }
            guard writer.count + dataFrameSize(frame, lifetime: lifetime.milliseconds) <= limit else { break }
            writeData(handle, frame, lifetime: lifetime.milliseconds)
            items.append(.data(handle))
            frames.update(handle) {
                $0.transmitted = true
                $0.latestPacket = number
            }
            queuedBytes -= frame.cost
            outstandingBytes += frame.cost
            counters.framesSent += 1
            // Path MTU discovery found room beyond the base size that frames are cut to: go
            // round the channels again while frames fit, so the room carries more of them.
            if packsMoreFramesPerChannel { turns += 1 }
            finishHead(of: channel)
        }
        // 4. A probe with nothing else to carry repeats what the oldest packet in flight carried.
        if probesOwed > 0, items.isEmpty, let oldest = ledger.oldestOutstanding {
            for item in oldest.items {
                switch item {
                case .data(let handle):
                    guard let frame = frames.read(handle, { $0.summary }), frame.transmitted, frame.mayBeRetransmitted else { continue }
                    let lifetime = lifetimeField(of: frame, now: now)
                    guard !lifetime.expired, writer.count + dataFrameSize(frame, lifetime: lifetime.milliseconds) <= limit else { continue }
                    writeCopy(handle, frame, lifetime: lifetime.milliseconds, number: number, into: &items)
                    frames.update(handle) { $0.awaitingRetransmit = false }
                    retransmitted = true
                case .dataPart(let handle, let part):
                    if writePartCopy(handle, index: Int(part), now: now, number: number, limit: limit, into: &items) == .written { retransmitted = true }
                case .forward(let channel, _):
                    guard let value = sendChannels[channel]?.resolvedBelow, writer.count + LinkPacket.forwardFrameSize <= limit else { continue }
                    writeForward(channel: channel, value: value, into: &items)
                case .ping:
                    break
                }
            }
        }
        // 5. A PING when a probe, keepalive or window probe found nothing else to carry.
        if (pingPending || probesOwed > 0), items.isEmpty {
            writer.appendPing()
            items.append(.ping)
            counters.pingsSent += 1
        }
        pingPending = false
    }

    /// The channel's head frame went (whole, or its last part): the next frame takes its place,
    /// and the channel goes to the back of the ring, or leaves it with nothing more queued.
    mutating func finishHead(of channel: UInt32) {
        sendChannels.update(channel) { _ = $0.queue.removeFirst() }
        popResolvedHeads(of: channel)
        activeChannels.removeFirst()
        if sendChannels.read(channel, { !$0.queue.isEmpty }) == true {
            activeChannels.append(channel)
        } else {
            channelsInRing.remove(channel)
        }
    }

    mutating func writeForward(channel: UInt32, value: UInt32, into items: inout LinkSentItems) {
        writer.appendForward(channel: channel, cumulativeSequence: value)
        items.append(.forward(channel: channel, cumulativeSequence: value))
        sendChannels.update(channel) {
            $0.forwardQueued = false
            $0.lastForwardSent = value
        }
        counters.forwardFramesSent += 1
    }

    /// Sends a frame again, in this new packet.
    mutating func writeCopy(_ handle: UInt64, _ frame: FrameSummary, lifetime: UInt32?, number: UInt64, into items: inout LinkSentItems) {
        writeData(handle, frame, lifetime: lifetime)
        items.append(.data(handle))
        frames.update(handle) {
            $0.retransmissions += 1
            $0.latestPacket = number
        }
        counters.framesRetransmitted += 1
    }
}

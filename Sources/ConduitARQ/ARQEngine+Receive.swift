@_spi(Benchmarks) public import ConduitCore

extension ARQEngine {
    /// Takes one datagram from the peer. Never traps on peer input: a packet that breaks any rule is
    /// counted (``Statistics/malformedPacketsDropped``) and changes nothing else. A valid packet is
    /// checked completely before any of its frames is applied.
    public mutating func handle(datagram: UnsafeRawBufferPointer, now: ConduitInstant) {
        let packetNumber: UInt64
        let frameRange: Range<Int>
        let isAckEliciting: Bool
        do {
            (packetNumber, frameRange) = try LinkPacket.open(datagram, expectChecksum: configuration.checksum == .crc32c, crc32c: crc32c)
            isAckEliciting = try validateFrames(datagram, frameRange)
        } catch {
            counters.malformedPacketsDropped += 1
            if case .checksumMismatch = error { counters.checksumFailures += 1 }
            counters.lastParseError = error
            return
        }
        if received.contains(packetNumber) {
            counters.duplicatePacketsSuppressed += 1
            return
        }
        counters.packetsReceived += 1
        lastReceived = max(lastReceived, now)

        var refused = false
        var reader = LinkFrameReader(packet: datagram, frames: frameRange)
        while true {
            // Validated above, so the reader cannot fail here; stop quietly if it ever did.
            guard let frame = try? reader.next() else { break }
            switch frame {
            case .ping, .padding:
                break
            case .ack(let ack):
                onAckFrame(ack, in: datagram, now: now)
            case .data(let data):
                if !receiveData(data, in: datagram, now: now) { refused = true }
            case .forward(let channel, let cumulative):
                if !receiveForward(channel: channel, cumulative: cumulative, now: now) { refused = true }
            }
        }
        guard !refused else {
            // Not recorded, so not acknowledged: the peer sends the frames again, and those that were
            // taken are then recognised as duplicates.
            counters.packetsRefused += 1
            return
        }
        recordReceived(packetNumber, isAckEliciting: isAckEliciting, now: now)
    }

    /// Takes one datagram from the peer, as the `UnsafeRawBufferPointer` variant does.
    public mutating func handle(datagram: [UInt8], now: ConduitInstant) {
        datagram.withUnsafeBytes { handle(datagram: $0, now: now) }
    }

    /// Every datagram of a batch, in order.
    public mutating func handle(batch: DatagramBatch, now: ConduitInstant) {
        batch.forEachDatagram { handle(datagram: $0, now: now) }
    }

    /// Reads every frame once without applying any; returns whether the packet is ack-eliciting.
    func validateFrames(_ datagram: UnsafeRawBufferPointer, _ range: Range<Int>) throws(LinkWireError) -> Bool {
        var reader = LinkFrameReader(packet: datagram, frames: range)
        var sawAck = false
        var isAckEliciting = false
        while let frame = try reader.next() {
            switch frame {
            case .ack(let ack):
                guard !sawAck else { throw .duplicateAckFrame }
                sawAck = true
                guard ack.largestAcknowledged < nextPacketNumber else { throw .ackOfUnsentPacket(ack.largestAcknowledged) }
            case .ping, .data, .forward:
                isAckEliciting = true
            case .padding:
                break
            }
        }
        return isAckEliciting
    }

    /// RFC 9000 section 13.2.1: acknowledge at once when an ack-eliciting packet arrives out of
    /// order (below the largest, or above it with a gap) or is the second since the last ACK;
    /// otherwise within max_ack_delay.
    mutating func recordReceived(_ packetNumber: UInt64, isAckEliciting: Bool, now: ConduitInstant) {
        let previousLargest = received.largest
        received.insert(packetNumber)
        if previousLargest.map({ packetNumber > $0 }) ?? true { largestReceivedTime = now }
        guard isAckEliciting else { return }
        if largestAckElicitingReceived.map({ packetNumber > $0 }) ?? true { largestAckElicitingReceived = packetNumber }
        ackElicitingSinceAck += 1
        if let previousLargest, packetNumber != previousLargest + 1 { ackImmediately = true }
        if ackElicitingSinceAck >= configuration.ackElicitingThreshold { ackImmediately = true }
        if ackDeadline == nil { ackDeadline = LinkTime.add(now, LinkTime.nanoseconds(configuration.maxAckDelay)) }
    }

    // MARK: DATA and FORWARD

    /// Creates the channel's receive state on first use, within the channel cap.
    mutating func ensureReceiveChannel(_ channel: UInt32) -> Bool {
        if receiveChannels.contains(channel) { return true }
        guard receiveChannels.count < configuration.maxChannels else {
            counters.framesDroppedTooManyChannels += 1
            return false
        }
        receiveChannels.insert(LinkReceiveChannel(window: configuration.channelWindow), for: channel)
        return true
    }

    /// Takes one DATA frame; false if it could not be taken now (the packet is then not acknowledged).
    mutating func receiveData(_ data: LinkDataFrame, in datagram: UnsafeRawBufferPointer, now: ConduitInstant) -> Bool {
        guard ensureReceiveChannel(data.channel) else { return false }
        // One in-place look at the channel: reading it through the subscript copies its tables.
        let window = configuration.channelWindow
        guard let (offset, isMarked) = receiveChannels.update(data.channel, { channel -> (UInt32, Bool) in
            let offset = data.sequence &- channel.cumulative
            return (offset, offset < 1 << 31 && Int(offset) < window && channel.isMarked(data.sequence))
        }) else { return false }
        if offset >= 1 << 31 {
            // Below the cumulative point: delivered, expired or skipped already.
            counters.duplicateFramesSuppressed += 1
            return true
        }
        guard Int(offset) < configuration.channelWindow else {
            counters.framesDroppedOutsideChannelWindow += 1
            return false
        }
        if isMarked {
            counters.duplicateFramesSuppressed += 1
            return true
        }
        if data.remainingLifetimeMilliseconds == 0 {
            // Its lifetime ran out on the way: resolved, never delivered.
            counters.framesExpiredAtReceiver += 1
            forgetPartial(data.channel, data.sequence)
            receiveChannels.update(data.channel) { $0.mark(data.sequence) }
            if offset == 0 { advance(data.channel, now: now) }
            return true
        }
        if let part = data.part { return receivePart(data, part, in: datagram, offset: offset, now: now) }
        return take(
            channel: data.channel, sequence: data.sequence, isOrdered: data.isOrdered, lifetime: data.remainingLifetimeMilliseconds,
            payload: UnsafeRawBufferPointer(rebasing: datagram[data.payload]), offset: offset, now: now
        )
    }

    /// Takes a whole frame (come whole, or completed from its parts) that the duplicate and
    /// window checks let through; false if the receive window has no room for it now.
    mutating func take(
        channel: UInt32, sequence: UInt32, isOrdered: Bool, lifetime: UInt32?, payload: UnsafeRawBufferPointer, offset: UInt32, now: ConduitInstant
    ) -> Bool {
        // A whole copy that overtook the parts: they are not needed any more.
        forgetPartial(channel, sequence)
        let cost = payload.count + Self.frameOverhead
        guard receiveBufferedBytes + cost <= configuration.receiveWindow else {
            counters.framesDroppedOverWindow += 1
            return false
        }
        // The one copy of the payload, made only once the frame is known to be wanted: into the
        // delivery queue when it can go now, else into an array while it waits.
        let expiresAt = lifetime.map { LinkTime.add(now, Int64($0) * LinkTime.millisecond) }
        receiveBufferedBytes += cost
        if offset == 0 {
            // In order, the common case: delivered, and the cumulative point moves past it
            // without marking it; frames already received above it follow.
            deliveries.append(channel: channel, sequence: sequence, payload: payload, expiresAt: expiresAt)
            let more = receiveChannels.update(channel) { state -> Bool in
                state.cumulative &+= 1
                return state.isMarked(state.cumulative)
            }
            if more == true { advance(channel, now: now) }
        } else if !isOrdered {
            receiveChannels.update(channel) { $0.mark(sequence) }
            deliveries.append(channel: channel, sequence: sequence, payload: payload, expiresAt: expiresAt)
        } else {
            let pending = LinkPendingDelivery(channel: channel, sequence: sequence, bytes: Array(payload), expiresAt: expiresAt)
            PayloadCopies.countReceive(payload.count)
            receiveChannels.update(channel) { state in
                state.mark(sequence)
                state.buffered[sequence] = pending
            }
        }
        return true
    }

    /// Moves a channel's cumulative point over every sequence received, releasing the ordered
    /// frames that were waiting for it.
    mutating func advance(_ channel: UInt32, now: ConduitInstant) {
        while true {
            // Each step in place (see `receiveData`); a buffered frame at the step is released.
            let step = receiveChannels.update(channel) { state -> LinkPendingDelivery?? in
                let sequence = state.cumulative
                guard state.isMarked(sequence) else { return .none }
                state.unmark(sequence)
                state.cumulative = sequence &+ 1
                return .some(state.buffered.isEmpty ? nil : state.buffered.removeValue(forKey: sequence))
            } ?? nil
            guard let released = step else { return }
            if let frame = released { release(frame, now: now) }
        }
    }

    /// Hands a buffered ordered frame to the delivery queue, unless its lifetime is over.
    mutating func release(_ frame: LinkPendingDelivery, now: ConduitInstant) {
        if let expiry = frame.expiresAt, expiry <= now {
            counters.framesExpiredAtReceiver += 1
            receiveBufferedBytes -= frame.bytes.count + Self.frameOverhead
            noteReceiveSpaceFreed()
            return
        }
        deliveries.append(frame)
    }

    /// RFC 3758 section 3.6, adapted: the sender will not send anything below `cumulative` again,
    /// so the receiver stops waiting. Ordered frames already buffered below it are still delivered
    /// in order (they arrived); gaps are skipped.
    mutating func receiveForward(channel: UInt32, cumulative: UInt32, now: ConduitInstant) -> Bool {
        guard ensureReceiveChannel(channel), let current = receiveChannels[channel]?.cumulative else { return false }
        let distance = cumulative &- current
        guard distance != 0, distance < 1 << 31 else { return true }  // stale or repeated
        // Only the window above the cumulative point can hold anything.
        let steps = min(Int(distance), configuration.channelWindow)
        var sequence = current
        for _ in 0..<steps {
            let released = receiveChannels.update(channel) { state -> LinkPendingDelivery?? in
                guard state.isMarked(sequence) else { return .none }
                state.unmark(sequence)
                return .some(state.buffered.removeValue(forKey: sequence))
            } ?? nil
            if let released {
                if let frame = released { release(frame, now: now) }
            } else {
                counters.framesSkipped += 1
            }
            sequence &+= 1
        }
        counters.framesSkipped += Int(distance) - steps
        receiveChannels.update(channel) { $0.cumulative = cumulative }
        forgetPartials(of: channel, below: cumulative)
        advance(channel, now: now)
        return true
    }

    // MARK: ACK

    /// RFC 9002 appendix A.7, OnAckReceived, with RACK's steps (RFC 8985 section 6.2), the
    /// acknowledgement of packets declared lost (spurious losses), and the window the peer advertises.
    mutating func onAckFrame(_ ack: LinkAckFrame, in datagram: UnsafeRawBufferPointer, now: ConduitInstant) {
        let largest = ack.largestAcknowledged
        // The newest ACK (by largest acknowledged) describes the peer's buffer best; an older one
        // overtaken in the network is ignored for the window.
        if peerWindowLargest.map({ largest >= $0 }) ?? true {
            peerReceiveWindow = Int(ack.receiveWindow)
            peerWindowLargest = largest
        }
        let previousLargestAcked = largestAcked
        if largestAcked.map({ largest > $0 }) ?? true { largestAcked = largest }

        var acked = scratchPackets
        scratchPackets = []
        acked.removeAll(keepingCapacity: true)
        var spurious: [LinkLostPacket] = []
        ack.forEachRange(in: datagram) { range in
            ledger.acknowledge(range) { acked.append($0) }
            rack.takeLost(in: range) { spurious.append($0) }
            pathProbesAcknowledged(range, now: now)
        }
        defer {
            acked.removeAll(keepingCapacity: true)
            scratchPackets = acked
        }
        guard !acked.isEmpty || !spurious.isEmpty else { return }

        // RFC 9002 section 5.1: an RTT sample when the largest acknowledged is newly acknowledged.
        // Not when the peer says it held that acknowledgement longer than max_ack_delay: then it is
        // an ACK repeated after the first copy was lost (a blackout, say), and the sample would
        // measure the outage rather than the path (section 5.3 would subtract only max_ack_delay).
        let ackDelay = Int64(ack.ackDelayMicroseconds) * 1_000
        let maxAckDelay = LinkTime.nanoseconds(configuration.maxAckDelay)
        if let newest = acked.max(by: { $0.number < $1.number }), newest.number == largest,
            ackDelay <= maxAckDelay + LinkRTTEstimator.granularity
        {
            rtt.update(
                sampleNanoseconds: LinkTime.elapsed(from: newest.timeSent, to: now),
                ackDelayNanoseconds: ackDelay,
                maxAckDelayNanoseconds: maxAckDelay
            )
            if firstRttSampleTime == nil { firstRttSampleTime = now }
        }
        for packet in acked {
            if let carried = packet.ackLargest, ackConfirmed.map({ carried > $0 }) ?? true { ackConfirmed = carried }
            congestion.onPacketAcked(bytes: packet.size, sentAt: packet.timeSent, isAppLimited: packet.isAppLimited)
            deliveryRate.onPacketAcked(packet.delivery, size: packet.size, timeSent: packet.timeSent, now: now)
            rack.onDelivered(number: packet.number, timeSent: packet.timeSent, now: now, previousLargestAcknowledged: previousLargestAcked)
            pathPacketAcknowledged(size: packet.size)
            onItemsAcknowledged(packet.items)
        }
        if !spurious.isEmpty { onSpuriousLosses(spurious) }
        if let sample = deliveryRate.finishSample(now: now, minRttNanoseconds: rtt.hasSample ? rtt.minimumNanoseconds : 0) {
            congestion.onAckProcessed(sample, now: now)
        }
        ledger.compact()
        rack.onAckProcessed(largestAcknowledged: largestAcked ?? largest, firstUnacknowledged: ledger.firstOutstandingNumber ?? nextPacketNumber)
        detectLostPackets(now: now)
        // RFC 9002 section 6.2.1: an acknowledgement resets the PTO backoff.
        ptoCount = 0
        if !isFlowBlocked { persistCount = 0 }
    }

    /// What an acknowledged packet carried is done with: its frames resolve, its FORWARD counts
    /// as acknowledged.
    mutating func onItemsAcknowledged(_ items: LinkSentItems) {
        for item in items {
            switch item {
            case .data(let handle):
                resolveFrame(handle, abandoned: false)
            case .dataPart(let handle, let part):
                onPartAcknowledged(handle, index: Int(part))
            case .forward(let channel, let value):
                if let known = sendChannels[channel]?.forwardAcknowledged, !linkSequence(value, isAfter: known) { continue }
                sendChannels.update(channel) { $0.forwardAcknowledged = value }
            case .ping:
                break
            }
        }
    }
}

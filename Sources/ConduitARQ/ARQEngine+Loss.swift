import ConduitCore

extension ARQEngine {
    /// The loss detection timer (RFC 9002 appendix A.8, RFC 8985 section 8): RACK's reordering
    /// timer if a packet waits out its reordering window, else the probe timeout while
    /// ack-eliciting packets are in flight: a tail loss probe first (RFC 8985 section 7.2), then
    /// RFC 9002's backed-off PTO.
    var lossDetectionDeadline: ConduitInstant? {
        if let lossTime { return lossTime }
        guard !ledger.isEmpty, let last = ledger.timeOfLastAckEliciting else { return nil }
        return LinkTime.add(last, ptoCount == 0 ? tailLossProbeTimeout : probeTimeout(backoff: ptoCount - 1))
    }

    /// PTO * 2^backoff (RFC 9002 section 6.2.1), capped so the shift cannot overflow.
    func probeTimeout(backoff: Int) -> Int64 {
        let base = rtt.probeTimeoutNanoseconds(maxAckDelayNanoseconds: LinkTime.nanoseconds(configuration.maxAckDelay))
        let shift = min(backoff, 16)
        let (scaled, overflow) = base.multipliedReportingOverflow(by: Int64(1) << Int64(shift))
        return overflow ? .max : scaled
    }

    /// RFC 8985 section 7.2: the first probe goes 2 * SRTT after the last ack-eliciting packet,
    /// plus the peer's worst-case ACK delay when a single packet is in flight (its ACK may be
    /// delayed); never later than the PTO it comes before. Never earlier than SRTT +
    /// max_ack_delay either: the peer acknowledges every second packet, so the last packet of an
    /// odd tail may wait for its delayed ACK too, and at sub-millisecond RTTs 2 * SRTT alone would
    /// probe before any ACK could come.
    var tailLossProbeTimeout: Int64 {
        guard rtt.hasSample else { return probeTimeout(backoff: 0) }
        let maxAckDelay = LinkTime.nanoseconds(configuration.maxAckDelay)
        var timeout = max(2 * rtt.smoothedNanoseconds, rtt.smoothedNanoseconds + maxAckDelay)
        if ledger.outstandingCount == 1 { timeout += maxAckDelay }
        return min(timeout, probeTimeout(backoff: 0))
    }

    /// RACK (RFC 8985 section 6.2 step 5): a packet sent before the most recently sent packet
    /// delivered is lost once `RACK.rtt + RACK.reo_wnd` has passed since it was sent; otherwise
    /// the reordering timer is set for the earliest such deadline (section 6.2, and section 8).
    mutating func detectLostPackets(now: ConduitInstant) {
        lossTime = nil
        guard rack.newestDelivered != nil else { return }
        let window = rack.reorderingWindow(
            minRttNanoseconds: rtt.hasSample ? rtt.minimumNanoseconds : nil, smoothedRttNanoseconds: rtt.smoothedNanoseconds,
            acknowledgedAbove: ledger.acknowledgedCount, packetThreshold: Int(clamping: configuration.packetThreshold)
        )
        // RFC 9002 section 6.1.2's floor: never less than the timer granularity.
        let lossDelay = max(rack.rttNanoseconds + window, LinkRTTEstimator.granularity)
        // RFC 9002 section 7.6: persistent congestion is a run of lost ack-eliciting packets, with
        // nothing acknowledged in between, spanning more than 3 PTOs (without backoff).
        let congestionPeriod = probeTimeout(backoff: 0).multipliedReportingOverflow(by: 3)
        let persistentPeriod = congestionPeriod.overflow ? Int64.max : congestionPeriod.partialValue
        var runStart: ConduitInstant?
        var persistent = false

        var lost = scratchPackets
        scratchPackets = []
        lost.removeAll(keepingCapacity: true)
        var index = 0
        while index < ledger.entryCount {
            let packet = ledger[index]
            guard rack.precedesNewestDelivered(packet.number) else { break }
            switch packet.state {
            case .acknowledged:
                runStart = nil
            case .lost:
                break
            case .outstanding:
                let due = LinkTime.add(packet.timeSent, lossDelay)
                if due <= now {
                    lost.append(ledger.markLost(at: index))
                    // Section 7.6.2: only packets sent after the first RTT sample count.
                    if let firstRttSampleTime, packet.timeSent >= firstRttSampleTime {
                        if let start = runStart {
                            if LinkTime.elapsed(from: start, to: packet.timeSent) > persistentPeriod { persistent = true }
                        } else {
                            runStart = packet.timeSent
                        }
                    }
                } else {
                    lossTime = LinkTime.earliest(lossTime, due)
                    runStart = nil
                }
            }
            index += 1
        }
        ledger.compact()
        if !lost.isEmpty { onPacketsLost(lost, persistentCongestion: persistent, now: now) }
        lost.removeAll(keepingCapacity: true)
        scratchPackets = lost
    }

    /// Lost packets leave the flight; of their frames, only those whose newest copy was lost are
    /// sent again, or abandoned if their retransmission limit or lifetime is reached. One
    /// congestion event for the batch (RFC 9002 appendix B.8, OnPacketsLost). Each is remembered
    /// (``LinkRACK``) in case the peer acknowledges it after all.
    mutating func onPacketsLost(_ lost: [LinkSentPacket], persistentCongestion: Bool, now: ConduitInstant) {
        var latestLostSend = ConduitInstant.zero
        for packet in lost {
            counters.packetsLost += 1
            congestion.onPacketRemovedFromFlight(bytes: packet.size)
            deliveryRate.onPacketLost(size: packet.size)
            pathPacketLost(size: packet.size)
            latestLostSend = max(latestLostSend, packet.timeSent)
        }
        if congestion.onCongestionEvent(sentAt: latestLostSend, now: now, lostPackets: lost.count) {
            rack.onRecoveryStarted(nextPacketNumber: nextPacketNumber)
        }
        if persistentCongestion { congestion.onPersistentCongestion() }
        rack.forgetLost(declaredBefore: LinkTime.add(now, -probeTimeout(backoff: 1)))
        for packet in lost {
            rack.remember(LinkLostPacket(number: packet.number, declaredAt: now, congestionEpisode: congestion.congestionEvents, items: packet.items))
            for item in packet.items {
                switch item {
                case .data(let handle):
                    guard let frame = frames[handle], frame.latestPacket == packet.number else { continue }
                    frames.update(handle) { $0.latestPacket = nil }
                    if let deadline = frame.deadline, deadline <= now {
                        resolveFrame(handle, abandoned: true, expired: true)
                    } else if !frame.mayBeRetransmitted {
                        resolveFrame(handle, abandoned: true)
                    } else {
                        frames.update(handle) { $0.awaitingRetransmit = true }
                        retransmitQueue.append(LinkRetransmission(handle: handle, part: nil))
                    }
                case .dataPart(let handle, let part):
                    onPartLost(handle, index: Int(part), packet: packet.number, now: now)
                case .forward(let channel, let value):
                    // Resend only if this was the newest FORWARD and it is not covered by one acknowledged.
                    guard sendChannels[channel]?.lastForwardSent == value else { continue }
                    if let acknowledged = sendChannels[channel]?.forwardAcknowledged, !linkSequence(value, isAfter: acknowledged) { continue }
                    requestForward(channel)
                case .ping:
                    break
                }
            }
        }
    }

    /// On a probe timeout send ack-eliciting probes, ignoring the congestion window: new data if
    /// any may go, else what the oldest packet in flight carried, else a PING. The tail loss probe
    /// is one packet (RFC 8985 section 7.3); the PTOs after it two (RFC 9002 section 6.2.4). The
    /// probe repeats the oldest frames rather than the newest (RFC 8985's choice for TCP): any
    /// acknowledged probe lets RACK declare the packets before it lost, since probe packets carry
    /// new numbers, and the oldest frames are the ones ordered delivery waits for.
    mutating func onProbeTimeout() {
        probesOwed = ptoCount == 0 ? 1 : 2
        ptoCount += 1
        counters.probeTimeouts += 1
        let count = ptoCount
        updatePathSearch { $0.probeTimeoutFired(count: count) }
    }

    /// The peer acknowledged packets declared lost: count them, widen the reordering window
    /// (RFC 8985 section 6.2 step 4), undo the congestion event they caused once all its losses
    /// proved spurious, and resolve their frames (a copy not yet sent again then never goes).
    mutating func onSpuriousLosses(_ packets: [LinkLostPacket]) {
        for packet in packets {
            counters.spuriousRetransmissions += 1
            rack.onSpuriousLoss(nextPacketNumber: nextPacketNumber)
            _ = congestion.onSpuriousLoss(event: packet.congestionEpisode)
            onItemsAcknowledged(packet.items)
        }
    }
}

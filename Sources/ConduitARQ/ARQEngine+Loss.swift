import ConduitCore

extension ARQEngine {
    /// The loss detection timer (RFC 9002 appendix A.8): the earliest time-threshold loss if one
    /// is pending, else the probe timeout while ack-eliciting packets are in flight.
    var lossDetectionDeadline: ConduitInstant? {
        if let lossTime { return lossTime }
        guard !ledger.isEmpty, let last = ledger.timeOfLastAckEliciting else { return nil }
        return LinkTime.add(last, probeTimeout(backoff: ptoCount))
    }

    /// PTO * 2^backoff (RFC 9002 section 6.2.1), capped so the shift cannot overflow.
    func probeTimeout(backoff: Int) -> Int64 {
        let base = rtt.probeTimeoutNanoseconds(maxAckDelayNanoseconds: LinkTime.nanoseconds(configuration.maxAckDelay))
        let shift = min(backoff, 16)
        let (scaled, overflow) = base.multipliedReportingOverflow(by: Int64(1) << Int64(shift))
        return overflow ? .max : scaled
    }

    /// RFC 9002 section 6.1 (appendix A.10, DetectAndRemoveLostPackets): a packet sent before the
    /// largest acknowledged one is lost once `kPacketThreshold` (3) later packets are acknowledged
    /// or it was sent `9/8 * max(smoothed_rtt, latest_rtt)` ago.
    mutating func detectLostPackets(now: ConduitInstant) {
        lossTime = nil
        guard let largestAcked else { return }
        let lossDelay = rtt.lossDelayNanoseconds
        let lostSendTime = LinkTime.add(now, -lossDelay)
        // Section 7.6: persistent congestion is a run of lost ack-eliciting packets, with nothing
        // acknowledged in between, spanning more than 3 PTOs (without backoff).
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
            guard packet.number <= largestAcked else { break }
            switch packet.state {
            case .acknowledged:
                runStart = nil
            case .lost:
                break
            case .outstanding:
                if packet.timeSent <= lostSendTime || largestAcked >= packet.number + configuration.packetThreshold {
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
                    let due = LinkTime.add(packet.timeSent, lossDelay)
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
    /// congestion event for the batch (RFC 9002 appendix B.8, OnPacketsLost).
    mutating func onPacketsLost(_ lost: [LinkSentPacket], persistentCongestion: Bool, now: ConduitInstant) {
        var latestLostSend = ConduitInstant.zero
        for packet in lost {
            counters.packetsLost += 1
            congestion.onPacketRemovedFromFlight(bytes: packet.size)
            pathPacketLost(size: packet.size)
            latestLostSend = max(latestLostSend, packet.timeSent)
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
                        retransmitQueue.append(handle)
                    }
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
        congestion.onCongestionEvent(sentAt: latestLostSend, now: now)
        if persistentCongestion { congestion.onPersistentCongestion() }
    }

    /// RFC 9002 section 6.2.4: on a probe timeout send up to two ack-eliciting probes, ignoring
    /// the congestion window: new data if any may go, else frames in flight, else a PING.
    mutating func onProbeTimeout() {
        ptoCount += 1
        counters.probeTimeouts += 1
        probesOwed = 2
        pathSearch?.probeTimeoutFired(count: ptoCount)
    }
}

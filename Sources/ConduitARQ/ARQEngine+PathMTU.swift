import ConduitCore

/// Path MTU discovery in the engine (RFC 8899, DPLPMTUD): the probes ``LinkPathMTUSearch`` asks
/// for, and what it hears of acknowledgements, losses and probe timeouts. The search decides;
/// this file only carries its decisions to the wire and the wire's news back to it.
extension ARQEngine {
    /// The largest packet the engine sends now: the PLPMTU the search found, or
    /// ``Configuration/maxDatagramSize`` with discovery off. Frames always fit a base-size
    /// packet (``Configuration/maxFramePayload``), so a fall back to the base loses none.
    public var currentMaxDatagramSize: Int { pathSearch?.packetSize ?? configuration.maxDatagramSize }

    /// The largest frame that goes whole in one packet of the size in use, lifetime field
    /// included: ``Configuration/maxFramePayload`` at the base size, more once the path search
    /// found larger packets (within ``Configuration/maxFrameBytes``). What the upper layer may cut
    /// its fragments to: a frame that no longer fits after a fall back goes in parts.
    public var currentFrameRoom: Int {
        let room = currentMaxDatagramSize - LinkPacket.overhead(checksum: configuration.checksum == .crc32c)
            - LinkPacket.dataFrameHeaderSize - LinkPacket.lifetimeFieldSize
        return min(configuration.maxFrameBytes, max(configuration.maxFramePayload, room))
    }

    /// Whether a packet takes more than one new frame of a channel: only once the search raised
    /// the packet size above the base that frames are cut to (otherwise one full frame fills it,
    /// and the link keeps its one-frame-per-channel round robin).
    var packsMoreFramesPerChannel: Bool {
        pathSearch.map { $0.packetSize > configuration.basePacketSize } ?? false
    }

    /// The search's state, nil with discovery off.
    public var pathMTUSearch: LinkPathMTUSearch? { pathSearch }

    /// The size of the probe the search wants sent, if any (RFC 8899 section 4.1). PTO probes of
    /// the loss recovery go first.
    var pathProbeWanted: Int? {
        guard probesOwed == 0, nextPacketNumber <= LinkPacket.maxPacketNumber else { return nil }
        return pathSearch?.probeSizeDue
    }

    /// Writes a probe of `size` bytes: a PING padded to the size, ack-eliciting, never resent.
    /// It stays out of the ledger, so its loss is neither retransmitted nor taken for congestion
    /// (RFC 8899 section 3); its timer is the search's, one probe timeout (section 5.1.1
    /// `PROBE_TIMER`). It is paced like any packet, and only one is in flight at a time.
    mutating func writePathProbe(size: Int, now: ConduitInstant) {
        let checksum = configuration.checksum == .crc32c
        let number = nextPacketNumber
        writer.begin(packetNumber: number, checksum: checksum, capacity: size)
        writer.appendPing()
        writer.appendPadding(size - writer.count - (checksum ? LinkPacket.checksumSize : 0))
        if checksum { writer.appendChecksum(using: crc32c) }
        nextPacketNumber += 1
        counters.packetsSent += 1
        pacer.consume(size, now: now, rate: pacingRate)
        let timeout = probeTimeout(backoff: 0)
        pathSearch?.probeSent(number: number, size: size, timeout: timeout, now: now)
    }

    /// The peer acknowledged `range`: a probe among it confirms its size.
    mutating func pathProbesAcknowledged(_ range: ClosedRange<UInt64>, now: ConduitInstant) {
        updatePathSearch { $0.acknowledged(range, now: now) }
    }

    /// A packet of the link's was acknowledged (black hole detection, RFC 8899 section 4.3).
    mutating func pathPacketAcknowledged(size: Int) {
        updatePathSearch { $0.dataPacketAcknowledged(size: size) }
    }

    /// A packet of the link's was declared lost (black hole detection, RFC 8899 section 4.3).
    mutating func pathPacketLost(size: Int) {
        updatePathSearch { $0.dataPacketLost(size: size) }
    }

    /// Applies `change` to the search; when it moved the packet size, the congestion controller
    /// counts its windows in the new size (RFC 9002 section 7.2: a window of 4 base-size packets
    /// would never let one 65,000-byte packet go), and the pacer its bucket.
    mutating func updatePathSearch(_ change: (inout LinkPathMTUSearch) -> Void) {
        guard pathSearch != nil else { return }
        let before = pathSearch!.packetSize
        change(&pathSearch!)
        let after = pathSearch!.packetSize
        if after != before {
            congestion.maxDatagramSizeChanged(to: after)
            pacer.maxDatagramSizeChanged(to: after, burstPackets: Configuration.pacingBurstPackets)
        }
    }
}

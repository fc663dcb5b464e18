@_spi(Benchmarks) import ConduitCore

/// Frames in parts (``LinkFrameParts``, DATA with `LinkPacket.partFlag`): a frame whose DATA frame
/// does not fit an empty packet of the size in use goes as parts of a base packet's room, each
/// sent, acknowledged, lost and sent again on its own; the receiver gathers the parts
/// (``LinkPartialFrame``) and takes the frame as if it had come whole.
extension ARQEngine {
    enum PartOutcome { case written, dropped, noRoom }

    /// Whether `frame`'s DATA frame fits an empty packet of the size in use.
    func fitsAPacket(_ frame: FrameSummary, lifetime: UInt32?, limit: Int) -> Bool {
        dataFrameSize(frame, lifetime: lifetime) <= limit - LinkPacket.headerSize
    }

    func partFrameSize(_ count: Int, lifetime: UInt32?) -> Int {
        LinkPacket.dataFrameHeaderSize + (lifetime != nil ? LinkPacket.lifetimeFieldSize : 0) + LinkPacket.partFieldsSize + count
    }

    /// A new frame too large for a packet leaves the send queue for the flight as a whole, then
    /// goes part by part (its cost counts once, as a whole frame's does).
    mutating func startParts(_ handle: UInt64, _ frame: FrameSummary) {
        let partSize = configuration.partSize
        frames.update(handle) {
            $0.transmitted = true
            $0.parts = LinkFrameParts(frameLength: frame.payloadCount, partSize: partSize)
        }
        queuedBytes -= frame.cost
        outstandingBytes += frame.cost
        counters.framesSent += 1
        counters.framesSentInParts += 1
    }

    /// Writes the parts of `handle` never sent yet, while they fit; returns whether all went.
    mutating func writeNewParts(_ handle: UInt64, _ frame: FrameSummary, lifetime: UInt32?, number: UInt64, limit: Int, into items: inout LinkSentItems) -> Bool {
        while let (index, range) = frames.read(handle, { stored -> (Int, Range<Int>)? in
            guard let parts = stored.parts, !parts.allSent else { return nil }
            return (parts.nextUnsent, parts.range(of: parts.nextUnsent))
        }) ?? nil {
            guard writer.count + partFrameSize(range.count, lifetime: lifetime) <= limit else { return false }
            writePart(handle, frame, index: index, range: range, lifetime: lifetime, number: number, into: &items)
            frames.update(handle) { $0.parts?.nextUnsent += 1 }
        }
        return true
    }

    /// Writes part `index` (bytes `range` of the frame) in this packet.
    mutating func writePart(_ handle: UInt64, _ frame: FrameSummary, index: Int, range: Range<Int>, lifetime: UInt32?, number: UInt64, into items: inout LinkSentItems) {
        var packet = LinkPacketWriter()
        swap(&packet, &writer)
        frames.read(handle) { stored in
            let start = stored.payload.startIndex
            packet.appendData(
                channel: frame.channel, sequence: frame.sequence, ordered: frame.ordered, lifetimeMilliseconds: lifetime,
                part: LinkFramePart(offset: UInt32(range.lowerBound), frameLength: UInt32(frame.payloadCount)),
                payload: stored.payload[(start + range.lowerBound)..<(start + range.upperBound)]
            )
        }
        swap(&packet, &writer)
        frames.update(handle) { $0.parts?.parts[index].latestPacket = number }
        items.append(.dataPart(handle, part: UInt16(index)))
        counters.framePartsSent += 1
    }

    /// Sends part `index` of `handle` again (a retransmission, or a probe's repeat).
    mutating func writePartCopy(_ handle: UInt64, index: Int, now: ConduitInstant, number: UInt64, limit: Int, into items: inout LinkSentItems) -> PartOutcome {
        guard let frame = frames.read(handle, { $0.summary }),
            let (range, mayGoAgain) = frames.read(handle, { stored -> (Range<Int>, Bool)? in
                guard let parts = stored.parts, parts.parts.indices.contains(index), !parts.parts[index].acknowledged else { return nil }
                return (parts.range(of: index), stored.retransmitLimit.map { parts.parts[index].retransmissions < $0 } ?? true)
            }) ?? nil, mayGoAgain
        else { return .dropped }
        let lifetime = lifetimeField(of: frame, now: now)
        if lifetime.expired {
            resolveFrame(handle, abandoned: true, expired: true)
            return .dropped
        }
        guard writer.count + partFrameSize(range.count, lifetime: lifetime.milliseconds) <= limit else { return .noRoom }
        writePart(handle, frame, index: index, range: range, lifetime: lifetime.milliseconds, number: number, into: &items)
        frames.update(handle) {
            $0.parts?.parts[index].awaitingRetransmit = false
            $0.parts?.parts[index].retransmissions += 1
        }
        counters.framesRetransmitted += 1
        return .written
    }

    /// A whole frame lost that no longer fits a packet (the path fell back to a smaller size):
    /// it goes again in parts, each waiting for retransmission, ahead of later losses.
    mutating func splitForRetransmission(_ handle: UInt64) {
        let partSize = configuration.partSize
        guard let count = frames.update(handle, { stored -> Int in
            var parts = LinkFrameParts(frameLength: stored.payload.count, partSize: partSize)
            parts.nextUnsent = parts.parts.count
            for index in parts.parts.indices {
                parts.parts[index].awaitingRetransmit = true
                parts.parts[index].retransmissions = stored.retransmissions
            }
            stored.parts = parts
            stored.awaitingRetransmit = false
            return parts.parts.count
        }) else { return }
        retransmitQueue.prepend(contentsOf: (0..<count).map { LinkRetransmission(handle: handle, part: $0) })
        counters.framesSentInParts += 1
    }

    /// A packet with part `index` of `handle` was lost: the part is sent again (if its newest copy
    /// was in that packet), or the frame is given up on by its lifetime or retransmission limit.
    mutating func onPartLost(_ handle: UInt64, index: Int, packet: UInt64, now: ConduitInstant) {
        guard let (deadline, mayGoAgain) = frames.read(handle, { stored -> (ConduitInstant?, Bool)? in
            guard let parts = stored.parts, parts.parts.indices.contains(index), parts.parts[index].latestPacket == packet else { return nil }
            return (stored.deadline, stored.retransmitLimit.map { parts.parts[index].retransmissions < $0 } ?? true)
        }) ?? nil else { return }
        frames.update(handle) { $0.parts?.parts[index].latestPacket = nil }
        if let deadline, deadline <= now {
            resolveFrame(handle, abandoned: true, expired: true)
        } else if !mayGoAgain {
            resolveFrame(handle, abandoned: true)
        } else {
            frames.update(handle) { $0.parts?.parts[index].awaitingRetransmit = true }
            retransmitQueue.append(LinkRetransmission(handle: handle, part: index))
        }
    }

    /// Part `index` of `handle` was acknowledged; the last one resolves the frame.
    mutating func onPartAcknowledged(_ handle: UInt64, index: Int) {
        if frames.update(handle, { $0.parts?.acknowledge(index) ?? false }) == true {
            resolveFrame(handle, abandoned: false)
        }
    }

    // MARK: Receiving

    static func partialKey(_ channel: UInt32, _ sequence: UInt32) -> UInt64 { UInt64(channel) << 32 | UInt64(sequence) }

    /// Takes one part of a frame the duplicate and window checks let through (`offset`: its
    /// sequence's distance from the channel's cumulative point). Its frame's whole length is
    /// counted in the receive buffer from the first part on; once every byte has come, the frame
    /// is taken as a whole one. False if it could not be taken now (the peer sends it again).
    mutating func receivePart(_ data: LinkDataFrame, _ part: LinkFramePart, in datagram: UnsafeRawBufferPointer, offset: UInt32, now: ConduitInstant) -> Bool {
        counters.framePartsReceived += 1
        let key = Self.partialKey(data.channel, data.sequence)
        let frameLength = Int(part.frameLength)
        if partialFrames[key] == nil {
            let cost = frameLength + Self.frameOverhead
            guard receiveBufferedBytes + cost <= configuration.receiveWindow else {
                counters.framesDroppedOverWindow += 1
                return false
            }
            receiveBufferedBytes += cost
            partialFrames[key] = LinkPartialFrame(frameLength: frameLength)
        }
        guard partialFrames[key]!.bytes.count == frameLength else {
            // Another length than its first part said: not a frame this side can complete.
            counters.framePartsRefused += 1
            return true
        }
        switch partialFrames[key]!.add(UnsafeRawBufferPointer(rebasing: datagram[data.payload]), at: Int(part.offset)) {
        case .duplicate:
            counters.duplicateFramesSuppressed += 1
            return true
        case .tooScattered:
            counters.framePartsRefused += 1
            return false
        case .added:
            break
        }
        guard partialFrames[key]!.isComplete, let complete = partialFrames.removeValue(forKey: key) else { return true }
        receiveBufferedBytes -= frameLength + Self.frameOverhead
        PayloadCopies.countReceive(frameLength)
        return complete.bytes.withUnsafeBytes { bytes in
            take(channel: data.channel, sequence: data.sequence, isOrdered: data.isOrdered, lifetime: data.remainingLifetimeMilliseconds,
                 payload: bytes, offset: offset, now: now)
        }
    }

    /// Forgets the partial frame at `channel`/`sequence`, if any (a whole copy came, or its
    /// lifetime ran out), and what it held of the receive buffer.
    mutating func forgetPartial(_ channel: UInt32, _ sequence: UInt32) {
        guard !partialFrames.isEmpty, let stale = partialFrames.removeValue(forKey: Self.partialKey(channel, sequence)) else { return }
        receiveBufferedBytes -= stale.bytes.count + Self.frameOverhead
        noteReceiveSpaceFreed()
    }

    /// Forgets `channel`'s partial frames below `cumulative` (a FORWARD skipped them).
    mutating func forgetPartials(of channel: UInt32, below cumulative: UInt32) {
        guard !partialFrames.isEmpty else { return }
        for key in partialFrames.keys where UInt32(key >> 32) == channel {
            let sequence = UInt32(truncatingIfNeeded: key)
            if cumulative &- sequence != 0, cumulative &- sequence < 1 << 31 { forgetPartial(channel, sequence) }
        }
    }
}

public import ConduitCore

extension ConferenceMachine {
    /// Appends what may be sent now: control first, then one fragment per ready session in
    /// round-robin, each in an envelope naming its message's destination.
    @discardableResult
    public mutating func pollTransmit(now: ConduitInstant, into batch: inout DatagramBatch, maxBytes: Int = 256 * 1024) -> Int {
        let before = batch.count
        defer {
            statistics.framesSent += batch.count - before
            if batch.count > before { lastTransmit = now }
        }
        while let frame = controlOut.first, batch.byteCount + frame.count <= maxBytes || batch.isEmpty {
            batch.append(frame)
            controlOut.removeFirst()
        }
        if isConnected, !trackQueue.isEmpty { pollTrackFrames(now: now, into: &batch, maxBytes: maxBytes) }
        guard isConnected, !outboundOrder.isEmpty else { return batch.count - before }
        var progressed = true
        while progressed, batch.byteCount < maxBytes {
            progressed = false
            for _ in 0..<outboundOrder.count {
                let key = outboundOrder[nextOutboundIndex % outboundOrder.count]
                nextOutboundIndex = (nextOutboundIndex + 1) % outboundOrder.count
                if emitFragment(key, now: now, into: &batch) { progressed = true }
                if batch.byteCount >= maxBytes { break }
            }
        }
        for key in outboundOrder where outbound[key]!.state.isOpen { updateDelay(key, now: now) }
        return batch.count - before
    }

    mutating func emitFragment(_ key: SessionKey, now: ConduitInstant, into batch: inout DatagramBatch) -> Bool {
        guard outbound[key]!.state.isOpen, !outbound[key]!.state.queue.isEmpty, outbound[key]!.state.pacer.mayRelease(now: now) else {
            return false
        }
        let destination = outbound[key]!.destinations[0]
        let before = outbound[key]!.state.queue[0].fragmenter.remainingBytes
        let size = outbound[key]!.state.queue[0].fragmenter.nextFrameSize
        scratch.removeAll()
        outbound[key]!.state.queue[0].bytes.withUnsafeBytes { message in
            _ = outbound[key]!.state.queue[0].fragmenter.emitNext(of: message, into: &scratch)
        }
        scratch.withDatagram(0) { frame in
            batch.append(frame, prefix: (WireVersion.current << 4 | RelayFrameKind.routed.rawValue, 0, UInt8(destination >> 8), UInt8(destination & 0xFF)))
        }
        outbound[key]!.state.pacer.consume(size + RelayEnvelope.size, now: now)
        outbound[key]!.state.queuedBytes -= before - outbound[key]!.state.queue[0].fragmenter.remainingBytes
        if outbound[key]!.state.queue[0].fragmenter.isFinished {
            outbound[key]!.state.queue.removeFirst()
            outbound[key]!.destinations.removeFirst()
            statistics.messagesSent += 1
            if outbound[key]!.state.isClosing, outbound[key]!.state.queue.isEmpty {
                finishClosing(key)
                return true
            }
            if outbound[key]!.state.senderIsWaiting, outbound[key]!.state.queuedBytes < configuration.session.maxQueuedBytesPerSession {
                outbound[key]!.state.senderIsWaiting = false
                events.append(.sendQueueHasRoom(key))
            }
        }
        return true
    }

    /// Whether control frames wait to be written.
    public func hasPendingControl() -> Bool { !controlOut.isEmpty }

    /// Reassembly expiry, queue-delay thresholds and the keepalive ping.
    public func nextTimeout() -> ConduitInstant? {
        var deadline: ConduitInstant? = isEnded ? nil : lastTransmit + configuration.pingInterval
        func consider(_ instant: ConduitInstant) { deadline = deadline.map { min($0, instant) } ?? instant }
        for reassembler in reassemblers.values { if let due = reassembler.nextExpiry { consider(due) } }
        for reassembler in trackReassemblers.values { if let due = reassembler.nextExpiry { consider(due) } }
        for reassembler in channelReassemblers.values { if let due = reassembler.nextExpiry { consider(due) } }
        for session in outbound.values { if let due = session.state.delayCheckDeadline { consider(due) } }
        return deadline
    }

    /// When paced data may next go out, or nil if nothing waits.
    public func nextTransmit(now: ConduitInstant) -> ConduitInstant? {
        outbound.values.reduce(nil) { LinkTime.earliest($0, $1.state.releaseDeadline(now: now)) }
    }

    /// Runs what is due at `now`: reassembly expiry, queue-delay events, keepalive pings.
    public mutating func handleTimeout(now: ConduitInstant) {
        for member in reassemblers.keys.sorted() { _ = reassemblers[member]!.expire(now: now) }
        for track in trackReassemblers.keys.sorted() { _ = trackReassemblers[track]!.expire(now: now) }
        for key in channelReassemblers.keys.sorted() { _ = channelReassemblers[key]!.expire(now: now) }
        for key in outboundOrder where outbound[key]!.state.isOpen { updateDelay(key, now: now) }
        if !isEnded, now - lastTransmit >= configuration.pingInterval, controlOut.isEmpty {
            controlOut.append(RoomControlFrame.ping.encoded)
        }
    }
}

extension ConferenceMachine {
    /// The longest queueing delay among the open outbound sessions (zero when every queue is
    /// empty), as ``CallMachine/longestQueueingDelay(now:)``.
    public func longestQueueingDelay(now: ConduitInstant) -> Duration {
        var longest = Duration.zero
        for session in outbound.values where session.state.isOpen { longest = max(longest, session.state.queueingDelay(now: now)) }
        return longest
    }
}

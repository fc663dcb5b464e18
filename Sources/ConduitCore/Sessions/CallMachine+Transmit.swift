extension CallMachine {
    /// Appends what may be sent now to `batch`: control frames first, then data frames from the
    /// sessions in round-robin, each as its pacer allows, until `maxBytes` is reached.
    /// Returns the number of datagrams appended.
    @discardableResult
    public mutating func pollTransmit(now: ConduitInstant, into batch: inout DatagramBatch, maxBytes: Int = 256 * 1024) -> Int {
        let before = batch.count
        defer { statistics.framesSent += batch.count - before }
        while let frame = controlOut.first, batch.byteCount + frame.count <= maxBytes || batch.isEmpty {
            batch.append(frame)
            controlOut.removeFirst()
        }
        guard isConnected, !outboundOrder.isEmpty else { return batch.count - before }

        // Deficit-free round robin: each pass gives every ready session one fragment.
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
        for key in outboundOrder where outbound[key]!.isOpen { updateDelay(key, now: now) }
        return batch.count - before
    }

    /// Emits one fragment of `key`'s head message if its pacer allows.
    mutating func emitFragment(_ key: SessionKey, now: ConduitInstant, into batch: inout DatagramBatch) -> Bool {
        // One hash lookup; the entry is then read and changed in place through its index (no
        // key is added or removed before the last use), so the queued bytes stay uniquely
        // referenced and nothing is hashed again per fragment.
        let index = outbound.index(forKey: key)!
        guard outbound.values[index].isOpen, !outbound.values[index].queue.isEmpty, outbound.values[index].pacer.mayRelease(now: now) else {
            return false
        }
        let emitted: Int = {
            let before = outbound.values[index].queue[0].fragmenter.remainingBytes
            let size = outbound.values[index].queue[0].fragmenter.nextFrameSize
            outbound.values[index].queue[0].bytes.withUnsafeBytes { message in
                _ = outbound.values[index].queue[0].fragmenter.emitNext(of: message, into: &batch)
            }
            outbound.values[index].pacer.consume(size, now: now)
            return before - outbound.values[index].queue[0].fragmenter.remainingBytes
        }()
        outbound.values[index].queuedBytes -= emitted
        if outbound.values[index].queue[0].fragmenter.isFinished {
            outbound.values[index].queue.removeFirst()
            statistics.messagesSent += 1
            if outbound.values[index].isClosing, outbound.values[index].queue.isEmpty {
                finishClosing(key)
                return true
            }
            if outbound.values[index].senderIsWaiting, outbound.values[index].queuedBytes < configuration.maxQueuedBytesPerSession {
                outbound.values[index].senderIsWaiting = false
                events.append(.sendQueueHasRoom(key))
            }
        }
        return true
    }

    mutating func updateDelay(_ key: SessionKey, now: ConduitInstant) {
        let index = outbound.index(forKey: key)!
        let delay = outbound.values[index].queueingDelay(now: now)
        if let enabled = outbound.values[index].delayMonitor.update(delay: delay) {
            events.append(.tooLongQueuedData(key, enabled: enabled))
        }
    }

    /// True if there is anything to transmit right now.
    public func hasPendingControl() -> Bool { !controlOut.isEmpty }

    /// When ``handleTimeout(now:)`` must run even if nothing else happens: an incomplete unreliable
    /// message expires, or a waiting message's age reaches the `tooLongQueuedData` threshold. This
    /// deadline holds even while the link refuses writes, which is exactly when the app must hear
    /// that its data is queueing.
    public func nextTimeout() -> ConduitInstant? {
        var deadline = reassembler.nextExpiry
        for (_, session) in outbound where session.isOpen && !session.delayMonitor.isTooLong {
            guard let head = session.queue.first else { continue }
            let due = head.enqueuedAt + session.delayMonitor.onThreshold
            deadline = deadline.map { min($0, due) } ?? due
        }
        return deadline
    }

    /// When a paced session may next release a frame (now, if one may already), or nil when
    /// nothing is queued.
    public func nextTransmit(now: ConduitInstant) -> ConduitInstant? {
        var deadline: ConduitInstant?
        for (_, session) in outbound where session.isOpen && !session.queue.isEmpty {
            let due = session.pacer.nextRelease(now: now)
            deadline = deadline.map { min($0, due) } ?? due
        }
        return deadline
    }

    /// The earlier of ``nextTimeout()`` and ``nextTransmit(now:)``.
    public func nextDeadline(now: ConduitInstant) -> ConduitInstant? {
        switch (nextTimeout(), nextTransmit(now: now)) {
        case (let a?, let b?): min(a, b)
        case (let a?, nil): a
        case (nil, let b): b
        }
    }

    /// Lets time pass: expires incomplete unreliable messages and re-evaluates queue delays.
    public mutating func handleTimeout(now: ConduitInstant) {
        reassembler.expire(now: now)
        statistics.reassembly = reassembler.statistics
        for key in outboundOrder where outbound[key]!.isOpen { updateDelay(key, now: now) }
    }
}

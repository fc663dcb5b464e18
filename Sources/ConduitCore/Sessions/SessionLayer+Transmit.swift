/// The send side in time: control first, then fragments from the ready sessions in weighted
/// round-robin (each session's priority weight per round), each as its pacer allows; the
/// queue-delay monitor; the deadlines a driver waits for.
extension SessionLayer {
    /// Appends the queued control frames that fit in `maxBytes` (at least one into an empty batch).
    package mutating func pollControl(into batch: inout DatagramBatch, maxBytes: Int) {
        while let frame = controlOut.first, batch.byteCount + frame.bytes.count <= maxBytes || batch.isEmpty {
            batch.append(frame.bytes, tag: frame.tag)
            controlOut.removeFirst()
        }
    }

    /// Appends data frames from the sessions in weighted round-robin, each as its pacer allows,
    /// until `maxBytes` is reached; then re-evaluates every session's queueing delay.
    package mutating func pollSessions(now: ConduitInstant, into batch: inout DatagramBatch, maxBytes: Int) {
        guard !outboundOrder.isEmpty else { return }
        // Each pass gives every ready session up to its weight in fragments (fragments are at most
        // one MTU, so shares by fragment are shares by bytes within one fragment per session). A
        // pass cut short by `maxBytes` resumes at the same session in the next poll, so over a
        // backlog the shares hold across batches.
        // Weights count in units of the lowest one present: sessions of one priority (the usual
        // case) take one fragment a turn, the finest interleaving, whatever that priority is.
        var unit = Int.max
        for key in outboundOrder { unit = min(unit, scheduling(key).weight) }
        var progressed = true
        while progressed, batch.byteCount < maxBytes {
            progressed = false
            for _ in 0..<outboundOrder.count {
                let key = outboundOrder[nextOutboundIndex % outboundOrder.count]
                let weight = scheduling(key).weight / unit
                while creditUsed < weight, batch.byteCount < maxBytes, emitFragment(key, now: now, into: &batch) {
                    creditUsed += 1
                    progressed = true
                }
                if batch.byteCount >= maxBytes, creditUsed < weight, scheduling(key).hasBacklog { break }
                creditUsed = 0
                nextOutboundIndex = (nextOutboundIndex + 1) % outboundOrder.count
                if batch.byteCount >= maxBytes { break }
            }
        }
        for key in outboundOrder { updateDelay(key, now: now, ifOpen: true) }
    }

    /// Emits one fragment of `key`'s head message if its pacer allows.
    mutating func emitFragment(_ key: SessionKey, now: ConduitInstant, into batch: inout DatagramBatch) -> Bool {
        // One hash lookup, then one in-place access to the entry (`inout` through its index): a
        // read through the index would copy the whole session, and a copy alive while its queue
        // changes would make the queue copy itself.
        let index = outbound.index(forKey: key)!
        let outcome = Self.emitFragment(
            of: &outbound.values[index], now: now, into: &batch, maxQueuedBytes: configuration.maxQueuedBytesPerSession, sentBytes: &statistics.bytesSent
        )
        switch outcome {
        case .notReady:
            return false
        case .fragment:
            return true
        case .lastFragment(let drainedWhileClosing, let senderMayResume):
            statistics.messagesSent += 1
            if drainedWhileClosing {
                finishClosing(key)
            } else if senderMayResume {
                events.append(Host.sendQueueHasRoom(key))
            }
            return true
        }
    }

    enum EmitOutcome {
        case notReady
        case fragment
        case lastFragment(drainedWhileClosing: Bool, senderMayResume: Bool)
    }

    /// Session `key`'s weight and whether it has data to send, read in place (a read through the
    /// dictionary's subscript would copy the session, retaining its queue).
    private mutating func scheduling(_ key: SessionKey) -> (weight: Int, hasBacklog: Bool) {
        let index = outbound.index(forKey: key)!
        return { (session: inout OutboundSessionState) in (session.weight, session.isOpen && !session.queue.isEmpty) }(&outbound.values[index])
    }

    /// Writes the head message's next fragment, addressed and tagged; adds its payload size to `sentBytes`.
    static func emitFragment(
        of session: inout OutboundSessionState, now: ConduitInstant, into batch: inout DatagramBatch, maxQueuedBytes: Int, sentBytes: inout Int
    ) -> EmitOutcome {
        guard session.isOpen, !session.queue.isEmpty, session.pacer.mayRelease(now: now) else { return .notReady }
        let before = session.queue[0].fragmenter.remainingBytes
        let size = session.queue[0].fragmenter.nextFrameSize
        Host.beginDataFrame(to: session.queue[0].destination, in: &batch)
        session.queue[0].bytes.withUnsafeBytes { message in
            _ = session.queue[0].fragmenter.emitNext(of: message, into: &batch)
        }
        batch.tag(from: batch.count - 1, as: session.tag)
        session.pacer.consume(size + Host.envelopeSize, now: now)
        let emitted = before - session.queue[0].fragmenter.remainingBytes
        session.queuedBytes -= emitted
        session.bytesSent += emitted
        sentBytes += emitted
        guard session.queue[0].fragmenter.isFinished else { return .fragment }
        session.queue.removeFirst()
        session.messagesSent += 1
        if session.isClosing, session.queue.isEmpty {
            return .lastFragment(drainedWhileClosing: true, senderMayResume: false)
        }
        let senderMayResume = session.senderIsWaiting && session.queuedBytes < maxQueuedBytes
        if senderMayResume { session.senderIsWaiting = false }
        return .lastFragment(drainedWhileClosing: false, senderMayResume: senderMayResume)
    }

    /// Feeds session `key`'s queueing delay to its monitor; a crossing is a `tooLongQueuedData` event.
    mutating func updateDelay(_ key: SessionKey, now: ConduitInstant, ifOpen: Bool = false) {
        let index = outbound.index(forKey: key)!
        let change = { (session: inout OutboundSessionState) -> Bool? in
            guard !ifOpen || session.isOpen else { return nil }
            return session.delayMonitor.update(delay: session.queueingDelay(now: now))
        }(&outbound.values[index])
        if let enabled = change {
            events.append(Host.tooLongQueuedData(key, enabled: enabled))
        }
    }

    /// ``nextTransmit(now:)`` and ``nextTimeout()`` in one walk, each session read in place.
    mutating func deadlines(now: ConduitInstant) -> (transmit: ConduitInstant?, timeout: ConduitInstant?) {
        var transmit: ConduitInstant?
        var timeout = nextReassemblyExpiry
        // By index, not `for (key, session) in outbound` (a copy of each session) nor over
        // `outbound.indices` (a second reference to the storage would make the access copy it).
        var index = outbound.startIndex
        while index != outbound.endIndex {
            let (release, due) = { (session: inout OutboundSessionState) in
                (session.releaseDeadline(now: now), session.delayCheckDeadline)
            }(&outbound.values[index])
            transmit = LinkTime.earliest(transmit, release)
            timeout = LinkTime.earliest(timeout, due)
            outbound.formIndex(after: &index)
        }
        return (transmit, timeout)
    }

    /// When an incomplete unreliable message expires, or a waiting message's age reaches the
    /// `tooLongQueuedData` threshold. This deadline holds even while the link refuses writes,
    /// which is exactly when the app must hear that its data is queueing.
    package func nextTimeout() -> ConduitInstant? {
        outbound.values.reduce(nextReassemblyExpiry) { LinkTime.earliest($0, $1.delayCheckDeadline) }
    }

    var nextReassemblyExpiry: ConduitInstant? {
        reassemblers.values.reduce(nil) { LinkTime.earliest($0, $1.nextExpiry) }
    }

    /// When a paced session may next release a frame (now, if one may already), or nil when
    /// nothing is queued.
    package func nextTransmit(now: ConduitInstant) -> ConduitInstant? {
        outbound.values.reduce(nil) { LinkTime.earliest($0, $1.releaseDeadline(now: now)) }
    }

    /// Lets time pass: expires incomplete unreliable messages and re-evaluates queue delays.
    package mutating func handleTimeout(now: ConduitInstant) {
        for sender in reassemblers.keys.sorted() {
            _ = reassemblers[sender]!.expire(now: now)
            statistics.noteReassembly(reassemblers[sender]!.statistics)
        }
        for key in outboundOrder { updateDelay(key, now: now, ifOpen: true) }
    }

    /// The longest queueing delay among the open outbound sessions (zero when every queue is empty).
    package func longestQueueingDelay(now: ConduitInstant) -> Duration {
        var longest = Duration.zero
        for session in outbound.values where session.isOpen { longest = max(longest, session.queueingDelay(now: now)) }
        return longest
    }
}

extension OutboundSessionState {
    /// When this session's oldest waiting message reaches the `tooLongQueuedData` threshold (nil
    /// while the event is on, or nothing waits in an open session).
    var delayCheckDeadline: ConduitInstant? {
        guard isOpen, !delayMonitor.isTooLong, let head = queue.first else { return nil }
        return head.enqueuedAt + delayMonitor.onThreshold
    }

    /// When its pacer releases its next frame (nil unless it is open with something queued).
    func releaseDeadline(now: ConduitInstant) -> ConduitInstant? {
        guard isOpen, !queue.isEmpty else { return nil }
        return pacer.nextRelease(now: now)
    }
}

extension CallMachine {
    /// Appends what may be sent now to `batch`: control frames first, then data frames from the
    /// sessions in round-robin, each as its pacer allows, until `maxBytes` is reached.
    /// Returns the number of datagrams appended.
    @discardableResult
    public mutating func pollTransmit(now: ConduitInstant, into batch: inout DatagramBatch, maxBytes: Int = 256 * 1024) -> Int {
        let before = batch.count
        sessions.pollControl(into: &batch, maxBytes: maxBytes)
        if isConnected { sessions.pollSessions(now: now, into: &batch, maxBytes: maxBytes) }
        sessions.statistics.framesSent += batch.count - before
        return batch.count - before
    }

    /// ``nextTransmit(now:)`` and ``nextTimeout()`` in one walk, each session read in place.
    /// `mutating` only so that a driver holding the machine in an actor or class property reaches
    /// it in place (a non-mutating call copies the whole machine first, which the pump did before
    /// every write); it changes nothing.
    public mutating func deadlines(now: ConduitInstant) -> (transmit: ConduitInstant?, timeout: ConduitInstant?) {
        sessions.deadlines(now: now)
    }

    /// True if there is anything to transmit right now.
    public func hasPendingControl() -> Bool { !sessions.controlOut.isEmpty }

    /// When ``handleTimeout(now:)`` must run even if nothing else happens: an incomplete unreliable
    /// message expires, or a waiting message's age reaches the `tooLongQueuedData` threshold. This
    /// deadline holds even while the link refuses writes, which is exactly when the app must hear
    /// that its data is queueing.
    public func nextTimeout() -> ConduitInstant? { sessions.nextTimeout() }

    /// When a paced session may next release a frame (now, if one may already), or nil when
    /// nothing is queued.
    public func nextTransmit(now: ConduitInstant) -> ConduitInstant? { sessions.nextTransmit(now: now) }

    /// The earlier of ``nextTimeout()`` and ``nextTransmit(now:)``.
    public func nextDeadline(now: ConduitInstant) -> ConduitInstant? {
        LinkTime.earliest(nextTimeout(), nextTransmit(now: now))
    }

    /// Lets time pass: expires incomplete unreliable messages and re-evaluates queue delays.
    public mutating func handleTimeout(now: ConduitInstant) { sessions.handleTimeout(now: now) }

    /// The longest queueing delay among the open outbound sessions (zero when every queue is
    /// empty): what `tooLongQueuedData` watches, for a driver that reports it (a walk over the
    /// sessions; drivers sample it in batches, not per message).
    public func longestQueueingDelay(now: ConduitInstant) -> Duration { sessions.longestQueueingDelay(now: now) }
}

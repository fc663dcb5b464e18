public import ConduitCore

extension ConferenceMachine {
    /// Appends what may be sent now: control first, then track and channel frames, then one
    /// fragment per ready session in round-robin, each in an envelope naming its message's destination.
    @discardableResult
    public mutating func pollTransmit(now: ConduitInstant, into batch: inout DatagramBatch, maxBytes: Int = 256 * 1024) -> Int {
        let before = batch.count
        sessions.pollControl(into: &batch, maxBytes: maxBytes)
        if isConnected {
            if !trackQueue.isEmpty { pollTrackFrames(now: now, into: &batch, maxBytes: maxBytes) }
            sessions.pollSessions(now: now, into: &batch, maxBytes: maxBytes)
        }
        sessions.statistics.framesSent += batch.count - before
        if batch.count > before { lastTransmit = now }
        return batch.count - before
    }

    /// Whether control frames wait to be written.
    public func hasPendingControl() -> Bool { !sessions.controlOut.isEmpty }

    /// Reassembly expiry, queue-delay thresholds and the keepalive ping.
    public func nextTimeout() -> ConduitInstant? {
        var deadline: ConduitInstant? = isEnded ? nil : lastTransmit + configuration.pingInterval
        deadline = LinkTime.earliest(deadline, sessions.nextTimeout())
        for reassembler in trackReassemblers.values { deadline = LinkTime.earliest(deadline, reassembler.nextExpiry) }
        for reassembler in channelReassemblers.values { deadline = LinkTime.earliest(deadline, reassembler.nextExpiry) }
        return deadline
    }

    /// When paced data may next go out, or nil if nothing waits.
    public func nextTransmit(now: ConduitInstant) -> ConduitInstant? { sessions.nextTransmit(now: now) }

    /// Runs what is due at `now`: reassembly expiry, queue-delay events, keepalive pings.
    public mutating func handleTimeout(now: ConduitInstant) {
        for track in trackReassemblers.keys.sorted() { _ = trackReassemblers[track]!.expire(now: now) }
        for key in channelReassemblers.keys.sorted() { _ = channelReassemblers[key]!.expire(now: now) }
        sessions.handleTimeout(now: now)
        if !isEnded, now - lastTransmit >= configuration.pingInterval, sessions.controlOut.isEmpty {
            sessions.controlOut.append(TaggedFrame(RoomControlFrame.ping.encoded))
        }
    }
}

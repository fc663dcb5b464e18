import ConduitCore
import ConduitDriver

/// What a flush found undelivered: messages that never left the queue, were discarded, or that
/// the peer did not acknowledge; and the link's frames behind them.
struct FlushShortfall: Sendable, Hashable {
    var messages = 0
    var frames = 0

    var isEmpty: Bool { messages == 0 && frames == 0 }

    static func + (lhs: Self, rhs: Self) -> Self { Self(messages: lhs.messages + rhs.messages, frames: lhs.frames + rhs.frames) }

    /// The error a flush, close or hang-up throws for it: how much of `what` did not arrive.
    func error(_ what: String, within timeout: Duration) -> ConduitError {
        ConduitError(
            .notAcknowledged,
            "\(messages) reliable message\(messages == 1 ? "" : "s") of \(what) not acknowledged by the peer within \(timeout) (\(frames) frame\(frames == 1 ? "" : "s") unacknowledged on the link)"
        )
    }
}

/// Flush and graceful close that wait for the peer: reliable data is done only when acknowledged.
extension SessionEngine {
    /// Waits until every message session `key` accepted before the call has been written and, for
    /// a reliable session type, acknowledged by the peer, or `timeout` passed on the engine's
    /// clock; with `closing`, closes the session gracefully first. Returns what was not done.
    func flushOutbound(_ key: SessionKey, timeout: Duration, closing: Bool) async -> FlushShortfall? {
        guard let mark = driver.machine.flushProgress(key, since: nil)?.mark else { return nil }
        let deadline = now() + timeout
        if closing {
            driver.machine.closeOutbound(key)
            machineChanged()
        }
        await waitForWrites(until: deadline, session: (key, mark))
        let progress = driver.machine.flushProgress(key, since: mark)
        var shortfall = FlushShortfall(messages: (progress?.queued ?? 0) + (progress?.discarded ?? 0))
        guard mark.isReliable else { return shortfall }
        let remaining = max(deadline - now(), .zero)
        let acknowledgement = await driver.link.waitForAcknowledgement(channel: mark.channel, timeout: remaining)
        shortfall.frames = acknowledgement.unacknowledgedFrames
        if acknowledgement.unacknowledgedFrames > 0 {
            // Without the frames, every message that may have had one on the link counts.
            shortfall.messages += acknowledgement.unacknowledgedHeads.map { Self.messages(in: $0) }
                ?? acknowledgement.unacknowledgedFrames
        }
        return shortfall
    }

    /// As ``flushOutbound(_:timeout:closing:)``, throwing `notAcknowledged` for a shortfall.
    func flushOutboundOrThrow(_ key: SessionKey, timeout: Duration, closing: Bool) async throws(ConduitError) {
        guard let shortfall = await flushOutbound(key, timeout: timeout, closing: closing) else {
            throw ConduitError(.sessionClosed, "no outbound session for \(key)", closeReason: .internal)
        }
        if !shortfall.isEmpty { throw shortfall.error("\(key)", within: timeout) }
    }

    /// Flushes every outbound session (within one `timeout` in all), then ends the machine's side
    /// with `end` (a hang-up or a leave, which waits for the link to close); throws what the
    /// flushes found not acknowledged.
    func flushAllThenEnd(timeout: Duration, what: String, end: () async -> Void) async throws(ConduitError) {
        let deadline = now() + timeout
        var shortfall = FlushShortfall()
        for key in sessions.outbound.keys.sorted(by: { $0.streamID < $1.streamID }) {
            let remaining = max(deadline - now(), .zero)
            shortfall = shortfall + (await flushOutbound(key, timeout: remaining, closing: true) ?? FlushShortfall())
        }
        // The rest of the link too: a room's data tracks and labeled channels, the call's control.
        await waitForWrites(until: deadline, session: nil)
        let whole = await driver.link.waitForAcknowledgement(channel: nil, timeout: max(deadline - now(), .zero))
        shortfall.frames = max(shortfall.frames, whole.unacknowledgedFrames)
        await end()
        if !shortfall.isEmpty { throw shortfall.error(what, within: timeout) }
    }

    /// Returns once the session's messages accepted before its mark have left its queue (when a
    /// session is given) and the pump is not in a write (what it polled is on the link), the link
    /// closed, or `deadline` passed (a link that stays blocked cannot hold it).
    private func waitForWrites(until deadline: ConduitInstant, session: (key: SessionKey, mark: OutboundFlushMark)?) async {
        // Pump rounds wake the wait; the expiry wakes it at the deadline.
        let expiry = driver.clock.after(max(deadline - now(), .zero)) { await self.resumeRoundWaiters() }
        defer { expiry.cancel() }
        func queued() -> Bool { session.map { driver.machine.flushProgress($0.key, since: $0.mark)?.queued ?? 0 > 0 } ?? false }
        while !driver.linkIsClosed, now() < deadline, queued() || driver.isWriting {
            wakePump()
            await withCheckedContinuation { sessions.roundWaiters.append($0) }
        }
    }

    func resumeRoundWaiters() { sessions.resumeRoundWaiters() }

    /// What the link under the engine measures of its path now.
    func linkStatistics() async -> LinkStatistics? { await driver.link.linkStatistics() }

    /// The distinct messages among the heads of unacknowledged frames of one session's channel:
    /// its data frames (after the engine's ``dataFramePrefix``), by message ID.
    static func messages(in heads: [[UInt8]]) -> Int {
        var messageIDs = Set<UInt32>()
        for head in heads {
            head.withUnsafeBytes { bytes in
                guard bytes.count >= dataFramePrefix + DataFrameHeader.size else { return }
                let frame = UnsafeRawBufferPointer(rebasing: bytes[dataFramePrefix...])
                guard (try? FrameKind.peek(frame)) == .data else { return }
                messageIDs.insert(frame.readU32(8))
            }
        }
        return messageIDs.count
    }
}

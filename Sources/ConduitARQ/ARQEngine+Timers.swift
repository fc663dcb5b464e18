public import ConduitCore

extension ARQEngine {
    /// When the driver must call again (``handleTimeout(now:)``, then
    /// ``pollTransmit(now:into:maxDatagrams:)``) if no datagram arrives first: `now` if something
    /// may be sent already, else the earliest of the loss detection timer or PTO, the ACK delay,
    /// the pacer, a frame lifetime, the keepalive, the window probe and the idle timeout.
    /// nil when nothing will ever happen without input.
    public func nextDeadline(now: ConduitInstant) -> ConduitInstant? {
        if isTransmitReady(now: now) { return now }
        var deadline = lossDetectionDeadline
        if !received.isEmpty { deadline = LinkTime.earliest(deadline, ackDeadline) }
        if case .paced(let until) = sendAllowance(now: now), hasAckElicitingContent() {
            deadline = LinkTime.earliest(deadline, until)
        }
        deadline = LinkTime.earliest(deadline, lifetimes.first?.deadline)
        deadline = LinkTime.earliest(deadline, keepaliveDeadline)
        deadline = LinkTime.earliest(deadline, windowProbeDeadline)
        deadline = LinkTime.earliest(deadline, pathSearch?.nextDeadline)
        if let idle = idleDeadline, idle > now { deadline = LinkTime.earliest(deadline, idle) }
        return deadline
    }

    /// Lets time pass: loss detection and probe timeouts, the ACK delay, frame lifetimes, the
    /// keepalive and window probes. What it decides goes out at the next `pollTransmit`.
    public mutating func handleTimeout(now: ConduitInstant) {
        // RFC 9002 appendix A.9, OnLossDetectionTimeout.
        if let lossTime {
            if lossTime <= now { detectLostPackets(now: now) }
        } else if let pto = lossDetectionDeadline, pto <= now {
            onProbeTimeout()
        }
        if let ackDeadline, ackDeadline <= now, !received.isEmpty { ackImmediately = true }
        expireLifetimes(now: now)
        updatePathSearch { $0.handleTimeout(now: now) }
        if let keepalive = keepaliveDeadline, keepalive <= now { pingPending = true }
        if let probe = windowProbeDeadline, probe <= now {
            pingPending = true
            persistCount += 1
        }
    }

    /// Abandons every frame whose lifetime is over, wherever it is (queued, in flight, waiting to
    /// be sent again): it is never sent after that.
    mutating func expireLifetimes(now: ConduitInstant) {
        while let top = lifetimes.first, top.deadline <= now {
            _ = lifetimes.popFirst()
            if frames[top.handle] != nil { resolveFrame(top.handle, abandoned: true, expired: true) }
        }
        // Entries of frames acknowledged early are dropped lazily; rebuild when they dominate.
        if lifetimes.count > 2 * liveLifetimeFrames + 64 {
            var rebuilt = LinkDeadlineHeap()
            frames.forEach { handle, frame in if let deadline = frame.deadline { rebuilt.push(deadline, handle) } }
            lifetimes = rebuilt
        }
    }

    /// A PING after `keepaliveInterval` without anything ack-eliciting sent, while nothing is in flight.
    var keepaliveDeadline: ConduitInstant? {
        guard let interval = configuration.keepaliveInterval, ledger.isEmpty, !pingPending else { return nil }
        return LinkTime.add(lastAckElicitingSent, LinkTime.nanoseconds(interval))
    }

    /// TCP's persist timer: frames wait for the peer's window, nothing is in flight to bring a
    /// window update, and the update may have been lost; ask with a PING after a backed-off PTO.
    var windowProbeDeadline: ConduitInstant? {
        guard ledger.isEmpty, !pingPending, isFlowBlocked else { return nil }
        return LinkTime.add(lastAckElicitingSent, probeTimeout(backoff: persistCount))
    }
}

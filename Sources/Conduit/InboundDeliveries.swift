import DequeModule

/// Deliveries to inbound sessions that found a session's buffer full, kept in order until the
/// session has room. The engine's reader waits for them to drain before it reads more from the
/// link: this is where receive backpressure starts.
struct InboundOverflow {
    var pending = Deque<(InboundDataSession, InboundDataSession.Event)>()
    var isDraining = false
    var drainedWaiters: [CheckedContinuation<Void, Never>] = []
}

/// An engine (``CallEngine``, ``ConferenceEngine``) that hands events to inbound sessions
/// without ever blocking its actor on a slow reader.
protocol InboundDelivering: Actor {
    var inboundOverflow: InboundOverflow { get set }
}

extension InboundDelivering {
    func deliver(_ event: InboundDataSession.Event, to session: InboundDataSession) {
        // Keep order: once anything overflowed, everything after it queues behind it (including
        // the delivery the drainer is handing over right now).
        if !inboundOverflow.isDraining, inboundOverflow.pending.isEmpty, session.events.trySend(event) {
            if case .closed = event { session.events.finish() }
            return
        }
        inboundOverflow.pending.append((session, event))
        startDraining()
    }

    private func startDraining() {
        guard !inboundOverflow.isDraining else { return }
        inboundOverflow.isDraining = true
        Task { await self.drainOverflow() }
    }

    /// Hands overflowed deliveries to their sessions, waiting for each to have room.
    private func drainOverflow() async {
        while let (session, event) = inboundOverflow.pending.popFirst() {
            await session.events.send(event)
            if case .closed = event { session.events.finish() }
        }
        inboundOverflow.isDraining = false
        let waiters = inboundOverflow.drainedWaiters
        inboundOverflow.drainedWaiters.removeAll()
        for waiter in waiters { waiter.resume() }
    }

    /// Suspends the reader until every overflowed delivery found room.
    func waitUntilDrained() async {
        guard inboundOverflow.isDraining || !inboundOverflow.pending.isEmpty else { return }
        startDraining()
        await withCheckedContinuation { inboundOverflow.drainedWaiters.append($0) }
    }
}

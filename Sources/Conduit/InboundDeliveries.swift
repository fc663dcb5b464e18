import ConduitCore
import DequeModule

/// Deliveries to data streams (inbound sessions, data tracks, labeled channels) that found a
/// stream's buffer full, kept in order until the stream has room. The engine's reader waits for
/// them to drain before it reads more from the link: this is where receive backpressure starts.
struct InboundOverflow {
    var pending = Deque<PendingDelivery>()
    var isDraining = false
    var drainedWaiters: [CheckedContinuation<Void, Never>] = []
}

/// One delivery waiting for room in its stream (a closure: the streams' element types differ).
struct PendingDelivery {
    let hand: @Sendable () async -> Void
}

/// An engine (``CallEngine``, ``ConferenceEngine``) that hands received data to data streams
/// without ever blocking its actor on a slow reader, and without dropping anything.
protocol InboundDelivering: Actor {
    var inboundOverflow: InboundOverflow { get set }
}

extension InboundDelivering {
    func deliver(_ event: InboundDataSession.Event, to session: InboundDataSession) {
        if case .closed = event {
            deliver(event, to: session.channel, finishing: true)
        } else {
            deliver(event, to: session.channel)
        }
    }

    /// Hands `element` to `channel` now if it has room and nothing waits before it, else queues
    /// it (the reader then stops reading the link until the queue drains). With `finishing`,
    /// the stream ends after it. A finished stream (unsubscribed, ended) takes nothing more.
    func deliver<Element: Sendable>(_ element: Element, to channel: AsyncBoundedChannel<Element>, finishing: Bool = false) {
        // Keep order: once anything overflowed, everything after it queues behind it (including
        // the delivery the drainer is handing over right now).
        if !inboundOverflow.isDraining, inboundOverflow.pending.isEmpty, channel.trySend(element) {
            if finishing { channel.finish() }
            return
        }
        guard !channel.isFinished else { return }
        inboundOverflow.pending.append(PendingDelivery {
            await channel.send(element)
            if finishing { channel.finish() }
        })
        startDraining()
    }

    private func startDraining() {
        guard !inboundOverflow.isDraining else { return }
        inboundOverflow.isDraining = true
        Task { await self.drainOverflow() }
    }

    /// Hands overflowed deliveries to their streams, waiting for each to have room.
    private func drainOverflow() async {
        while let delivery = inboundOverflow.pending.popFirst() {
            await delivery.hand()
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

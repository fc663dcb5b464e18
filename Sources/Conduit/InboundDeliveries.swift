import ConduitCore
import DequeModule

/// Deliveries to data streams (inbound sessions, data tracks, labeled channels) that found a
/// stream's buffer full, kept in order per stream until that stream has room. Streams are
/// independent: one whose app stopped reading holds up no other, until what waits for it passes
/// the engine's pause mark; then the engine's reader stops reading the link until it is back
/// under, which is where receive backpressure reaches the transport (and memory stays bounded).
struct InboundOverflow {
    /// Per stream (its channel's identity), what waits for room, in order.
    var pending: [ObjectIdentifier: Deque<PendingDelivery>] = [:]
    /// Streams whose drainer runs (it may be handing one delivery over while `pending` is empty).
    var draining: Set<ObjectIdentifier> = []
    /// The weight (bytes, as the streams weigh their elements) of everything in `pending`.
    var pendingBytes = 0
    var readerWaiters: [CheckedContinuation<Void, Never>] = []
}

/// One delivery waiting for room in its stream (a closure: the streams' element types differ).
struct PendingDelivery {
    let bytes: Int
    let hand: @Sendable () async -> Void
}

/// An engine (``CallEngine``, ``ConferenceEngine``) that hands received data to data streams
/// without ever blocking its actor on a slow reader, and without dropping anything.
protocol InboundDelivering: Actor {
    var inboundOverflow: InboundOverflow { get set }
    var configuration: ConduitConfiguration { get }
}

extension InboundDelivering {
    /// Overflowed bytes, across streams, past which the link is not read: one stream buffer's
    /// worth (`inboundBufferBytes`), at most 1 MiB, beyond the streams' own buffers.
    var readerMustWait: Bool { inboundOverflow.pendingBytes > min(configuration.inboundBufferBytes, 1 << 20) }

    func deliver(_ event: InboundDataSession.Event, to session: InboundDataSession) {
        if case .closed = event {
            deliver(event, to: session.channel, finishing: true)
        } else {
            deliver(event, to: session.channel)
        }
    }

    /// Hands `element` to `channel` now if it has room and nothing of that stream waits before
    /// it, else queues it behind the stream's earlier deliveries. With `finishing`, the stream
    /// ends after it. A finished stream (unsubscribed, ended) takes nothing more.
    func deliver<Element: Sendable>(_ element: Element, to channel: AsyncBoundedChannel<Element>, finishing: Bool = false) {
        let stream = ObjectIdentifier(channel)
        // Keep the stream's order: once it overflowed, what follows queues behind (including the
        // delivery its drainer is handing over right now).
        if !inboundOverflow.draining.contains(stream), channel.trySend(element) {
            if finishing { channel.finish() }
            return
        }
        guard !channel.isFinished else { return }
        let bytes = channel.weight(of: element)
        inboundOverflow.pending[stream, default: []].append(PendingDelivery(bytes: bytes) {
            await channel.send(element)
            if finishing { channel.finish() }
        })
        inboundOverflow.pendingBytes += bytes
        guard inboundOverflow.draining.insert(stream).inserted else { return }
        Task { await self.drainOverflow(of: stream) }
    }

    /// Hands one stream's overflowed deliveries over, each once the stream has room.
    private func drainOverflow(of stream: ObjectIdentifier) async {
        while let delivery = inboundOverflow.pending[stream]?.popFirst() {
            inboundOverflow.pendingBytes -= delivery.bytes
            resumeReaderIfUnderPause()
            await delivery.hand()
        }
        inboundOverflow.pending[stream] = nil
        inboundOverflow.draining.remove(stream)
    }

    private func resumeReaderIfUnderPause() {
        guard !readerMustWait, !inboundOverflow.readerWaiters.isEmpty else { return }
        let waiters = inboundOverflow.readerWaiters
        inboundOverflow.readerWaiters.removeAll()
        for waiter in waiters { waiter.resume() }
    }

    /// Suspends the reader while the streams' overflow is past the pause mark.
    func waitUntilDrained() async {
        while readerMustWait {
            await withCheckedContinuation { inboundOverflow.readerWaiters.append($0) }
        }
    }
}

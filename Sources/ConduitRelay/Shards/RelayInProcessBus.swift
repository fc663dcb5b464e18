import ConduitCore

/// The cluster bus between the shards of one relay process (``RelayShardGroup``): what a shard
/// publishes is appended to every other shard's inbox, in memory, no NATS and no library. The
/// messages travel as values, never encoded: one message (its frame an array copied on write,
/// never here) is shared by every inbox. A shard hands over everything one batch of its work
/// produced at once, so the bus takes each inbox's lock, and wakes its shard, once per batch.
///
/// Each inbox holds at most `capacity` messages; beyond that a message is dropped on arrival and
/// counted (``RelayClusterBus/dropped``), and the receiving machine counts the gap it leaves, as
/// with NATS. Nothing waits on a lock but for the append or the take of a batch.
final class RelayInProcessBus: Sendable {
    /// The shards' inboxes, by shard index.
    private let inboxes: [Inbox]

    /// A bus for `members` shards; each inbox holds at most `capacity` undelivered messages.
    init(members: Int, capacity: Int = 65_536) {
        inboxes = (0..<members).map { _ in Inbox(capacity: capacity) }
    }

    /// Shard `index`'s side of the bus.
    func endpoint(_ index: Int) -> Endpoint { Endpoint(bus: self, index: index) }

    /// One shard's side: publishes to every other shard, delivers what they publish.
    struct Endpoint: RelayClusterBus {
        let bus: RelayInProcessBus
        let index: Int

        func publish(_ posts: [RelayClusterPost]) -> Int {
            guard !bus.inboxes[index].isClosed else { return posts.count }
            let messages = posts.map(RelayClusterInbound.posted)
            for (other, inbox) in bus.inboxes.enumerated() where other != index { inbox.push(messages) }
            return 0
        }

        func deliveries() -> AsyncStream<[RelayClusterInbound]> {
            let inbox = bus.inboxes[index]
            return AsyncStream(unfolding: { await inbox.nextBatch() })
        }

        var dropped: Int { bus.inboxes[index].dropped }

        func close() async { bus.inboxes[index].close() }
    }

    /// Messages waiting for one shard, and its reader when it waits for them.
    final class Inbox: Sendable {
        private struct State {
            var pending: [RelayClusterInbound] = []
            var waiter: CheckedContinuation<[RelayClusterInbound]?, Never>?
            var closed = false
            var dropped = 0
        }

        private let state = TSanVisibleMutex(State())
        private let capacity: Int

        init(capacity: Int) { self.capacity = capacity }

        var isClosed: Bool { state.withLock { $0.closed } }
        var dropped: Int { state.withLock { $0.dropped } }

        /// Appends `messages`, or hands them straight to the waiting reader; drops those past the
        /// capacity (counted), and ignores them once closed.
        func push(_ messages: [RelayClusterInbound]) {
            let handOver = state.withLock { state -> (CheckedContinuation<[RelayClusterInbound]?, Never>, [RelayClusterInbound])? in
                guard !state.closed else { return nil }
                let room = max(0, capacity - state.pending.count)
                if room < messages.count {
                    state.dropped += messages.count - room
                    state.pending.append(contentsOf: messages.prefix(room))
                } else {
                    state.pending.append(contentsOf: messages)
                }
                // A waiting reader had taken everything before: what is pending now is all new.
                guard let waiter = state.waiter, !state.pending.isEmpty else { return nil }
                state.waiter = nil
                defer { state.pending = [] }
                return (waiter, state.pending)
            }
            if let (waiter, batch) = handOver { waiter.resume(returning: batch) }
        }

        /// Everything pending, waiting for at least one message; nil once closed.
        func nextBatch() async -> [RelayClusterInbound]? {
            await withCheckedContinuation { (continuation: CheckedContinuation<[RelayClusterInbound]?, Never>) in
                let ready = state.withLock { state -> [RelayClusterInbound]?? in
                    if !state.pending.isEmpty {
                        let batch = state.pending
                        state.pending = []
                        return .some(batch)
                    }
                    if state.closed { return .some(nil) }
                    state.waiter = continuation
                    return .none
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }

        /// Stops delivering: the waiting reader gets nil, later messages are ignored.
        func close() {
            let waiter = state.withLock { state -> CheckedContinuation<[RelayClusterInbound]?, Never>? in
                state.closed = true
                state.pending.removeAll()
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: nil)
        }
    }
}

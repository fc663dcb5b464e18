import ConduitCore
import ConduitRelayCore

/// The cluster bus between the shards of one relay process (``RelayShardGroup``): what a shard
/// publishes is appended to every other shard's inbox, in memory, no NATS and no library. The
/// messages travel as values, never encoded: one message (its frame an array copied on write,
/// never here) is shared by every inbox. A shard hands over everything one batch of its work
/// produced at once, so the bus takes each inbox's lock, and wakes its shard, once per batch.
///
/// Each inbox holds at most `capacity` messages; beyond that a message is dropped on arrival and
/// counted (``RelayClusterBus/dropped``), and the receiving machine counts the gap it leaves, as
/// with NATS. Nothing waits on a lock but for the append or the take of a batch.
///
/// Flow control: a shard reads no link while another shard has `backlogLimit` or more of its
/// messages still to take (``RelayClusterBus/waitForRoom()``), as a socket's full send buffer
/// would stop it. A receiver's relay announces pressure once its queue is above the high-water
/// mark, but what was already published reaches it anyway: bounding the backlog keeps that
/// (plus one read) within the receiver's cap, so a fast sender on one shard is slowed, not its
/// receivers on another isolated.
///
/// Roster: the bus numbers the shards' roster records in one order and hands each to every shard,
/// its writer included, past any inbox's capacity (records are few, one per join or leave, and a
/// shard that missed one could not read it again): the shards of one process share one numbering
/// and one peer-list version per room, as clustered relays do over JetStream.
final class RelayInProcessBus: Sendable {
    /// The shards' inboxes, by shard index.
    private let inboxes: [Inbox]
    /// The last roster sequence handed out (taken under this lock, so every inbox gets records in
    /// sequence order).
    private let rosterSequence = TSanVisibleMutex<UInt64>(0)

    /// A bus for `members` shards; each inbox holds at most `capacity` undelivered messages, and a
    /// shard waits for room before reading links while another's holds `backlogLimit` or more.
    init(members: Int, capacity: Int = 65_536, backlogLimit: Int = 1_024) {
        inboxes = (0..<members).map { _ in Inbox(capacity: capacity, backlogLimit: max(1, backlogLimit)) }
    }

    /// The backlog limit for shards with `configuration`: what may be in flight to a receiver's
    /// shard after it announced pressure (the backlog, plus a part of a read on each side of the
    /// check: `RelayServer.clusterReadPart`) stays within a third of the room between its
    /// high-water mark and its cap, in messages of at most a datagram (1,200 bytes); at least 16,
    /// at most 4,096.
    static func backlogLimit(for configuration: RelayConfiguration) -> Int {
        let headroom = max(0, configuration.maxQueuedBytesPerReceiver - configuration.receiverHighWater)
        return min(4_096, max(16, headroom / 3 / 1_200))
    }

    /// Publishers waiting for room in shard `index`'s inbox (for tests).
    func waitingPublishers(on index: Int) -> Int { inboxes[index].waitingPublishers }

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

        func waitForRoom() async -> Bool {
            var waited = false
            for (other, inbox) in bus.inboxes.enumerated() where other != index {
                if await inbox.waitForRoom() { waited = true }
            }
            return waited
        }

        var hasRoom: Bool {
            for (other, inbox) in bus.inboxes.enumerated() where other != index && !inbox.hasRoom { return false }
            return true
        }

        func close() async { bus.inboxes[index].close() }

        var hasRoster: Bool { true }

        func publishRoster(_ records: [RelayRosterRecord]) {
            guard !bus.inboxes[index].isClosed else { return }
            bus.rosterSequence.withLock { sequence in
                let numbered = records.map { record in
                    sequence += 1
                    return RelayClusterInbound.roster(payload: record.encoded, sequence: sequence, delivered: nil)
                }
                for inbox in bus.inboxes { inbox.push(numbered, pastCapacity: true) }
            }
        }
    }

    /// Messages waiting for one shard, and its reader when it waits for them.
    final class Inbox: Sendable {
        private struct State {
            var pending: [RelayClusterInbound] = []
            var waiter: CheckedContinuation<[RelayClusterInbound]?, Never>?
            /// Publishers waiting for the backlog to fall under the limit.
            var roomWaiters: [CheckedContinuation<Void, Never>] = []
            var closed = false
            var dropped = 0
        }

        private let state = TSanVisibleMutex(State())
        private let capacity: Int
        private let backlogLimit: Int

        init(capacity: Int, backlogLimit: Int) {
            self.capacity = capacity
            self.backlogLimit = backlogLimit
        }

        /// Returns once fewer than the backlog limit of messages wait here (or the inbox closed);
        /// true if it had to wait.
        func waitForRoom() async -> Bool {
            guard state.withLock({ $0.pending.count >= backlogLimit && !$0.closed }) else { return false }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state -> Bool in
                    guard state.pending.count >= backlogLimit, !state.closed else { return true }
                    state.roomWaiters.append(continuation)
                    return false
                }
                if ready { continuation.resume() }
            }
            return true
        }

        var isClosed: Bool { state.withLock { $0.closed } }
        /// Fewer than the backlog limit of messages wait here (or the inbox closed).
        var hasRoom: Bool { state.withLock { $0.pending.count < backlogLimit || $0.closed } }
        /// Publishers waiting for room (for tests).
        var waitingPublishers: Int { state.withLock { $0.roomWaiters.count } }
        var dropped: Int { state.withLock { $0.dropped } }

        /// Appends `messages`, or hands them straight to the waiting reader; drops those past the
        /// capacity (counted) unless `pastCapacity`, and ignores them once closed.
        func push(_ messages: [RelayClusterInbound], pastCapacity: Bool = false) {
            let handOver = state.withLock { state -> (CheckedContinuation<[RelayClusterInbound]?, Never>, [RelayClusterInbound])? in
                guard !state.closed else { return nil }
                let room = pastCapacity ? messages.count : max(0, capacity - state.pending.count)
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
                let (ready, publishers) = state.withLock { state -> ([RelayClusterInbound]??, [CheckedContinuation<Void, Never>]) in
                    if !state.pending.isEmpty {
                        let batch = state.pending
                        state.pending = []
                        defer { state.roomWaiters = [] }
                        return (.some(batch), state.roomWaiters)
                    }
                    if state.closed { return (.some(nil), []) }
                    state.waiter = continuation
                    return (.none, [])
                }
                for publisher in publishers { publisher.resume() }
                if let ready { continuation.resume(returning: ready) }
            }
        }

        /// Stops delivering: the waiting reader gets nil, later messages are ignored.
        func close() {
            let (waiter, publishers) = state.withLock { state -> (CheckedContinuation<[RelayClusterInbound]?, Never>?, [CheckedContinuation<Void, Never>]) in
                state.closed = true
                state.pending.removeAll()
                defer {
                    state.waiter = nil
                    state.roomWaiters = []
                }
                return (state.waiter, state.roomWaiters)
            }
            for publisher in publishers { publisher.resume() }
            waiter?.resume(returning: nil)
        }
    }
}

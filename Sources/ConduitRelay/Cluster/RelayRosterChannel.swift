#if NATS
import ConduitCore
import ConduitNATS
import ConduitRelayCore

/// The cluster's roster over NATS JetStream: one stream (``RelayRosterRecord/streamName``, file
/// storage, made by the first relay) that every relay appends its records to (a subject per
/// room) and reads from its start, in the stream's order, through an ordered consumer. An emptied
/// room's records are removed from it (``RelayRosterPurge``). The stream's order is the one order
/// of joins and leaves every relay applies (RelayMachine+Roster.swift).
///
/// Records are appended one at a time, in order, each retried (every 250 ms) until the stream
/// stored it: a record is never dropped, and a retry of a stored one is dropped by the stream
/// (its message ID). While JetStream is unreachable, joins here wait and are refused
/// `clusterUnavailable` after the join timeout. Reading is bounded (65,536 records waiting); a
/// record dropped for that shows the machine a gap, and the stream is read again from it
/// (``resume(from:)``).
final class RelayRosterChannel: Sendable {
    private let jetStream: NATSJetStream
    /// The records read, in the stream's order, from whichever consumer is current.
    let records: AsyncStream<NATSMessage>
    private let incoming: AsyncStream<NATSMessage>.Continuation
    private let reader: TSanVisibleMutex<Reader>
    private let pending: AsyncStream<[RelayRosterRecord]>.Continuation
    private let publisher: Task<Void, Never>
    /// Purges, made one at a time (a `nodeGone` can empty many rooms at once).
    private let purging: AsyncStream<RelayRosterPurge>.Continuation
    private let purger: Task<Void, Never>
    private let counts = Counts()

    private struct Reader {
        var subscription: NATSSubscription?
        var forward: Task<Void, Never>?
        var closed = false
        /// Which consumer's records are passed on: each reading anew makes the previous one's
        /// records (those it had not passed on yet) be dropped from then on, so that the machine
        /// sees the new consumer's records after every record of the old one it will ever see.
        var generation = 0
    }

    /// Finds or makes the stream and starts reading it; fails if the server has no JetStream.
    static func open(client: NATSClient, node: RelayNodeID) async throws(NATSError) -> RelayRosterChannel {
        let jetStream = try NATSJetStream(client: client)
        do {
            try await jetStream.addStream(named: RelayRosterRecord.streamName, subjects: [RelayRosterRecord.subjects])
            let subscription = try await jetStream.subscribeOrdered(to: RelayRosterRecord.subjects)
            return RelayRosterChannel(jetStream: jetStream, subscription: subscription, node: node)
        } catch {
            jetStream.close()
            throw error
        }
    }

    private init(jetStream: NATSJetStream, subscription: NATSSubscription, node: RelayNodeID) {
        self.jetStream = jetStream
        (records, incoming) = AsyncStream.makeStream(of: NATSMessage.self, bufferingPolicy: .bufferingOldest(65_536))
        reader = TSanVisibleMutex(Reader())
        let (batches, pending) = AsyncStream.makeStream(of: [RelayRosterRecord].self)
        self.pending = pending
        let counts = counts
        publisher = Task {
            var serial: UInt64 = 0
            for await batch in batches {
                for record in batch {
                    serial += 1
                    // The same ID for every try: a stored record retried is a duplicate there.
                    let id = "\(node)-\(serial)"
                    while !Task.isCancelled {
                        do {
                            _ = try await jetStream.publish(record.encoded, on: record.subject, messageID: id)
                            break
                        } catch {
                            counts.retried()
                            try? await Task.sleep(for: .milliseconds(250))
                        }
                    }
                }
            }
        }
        let (purges, purging) = AsyncStream.makeStream(of: RelayRosterPurge.self)
        self.purging = purging
        purger = Task {
            for await purge in purges {
                do {
                    try await jetStream.purge(stream: RelayRosterRecord.streamName, subject: purge.subject, before: purge.before)
                } catch {
                    counts.purgeFailed()
                }
            }
        }
        read(subscription, generation: 0)
    }

    /// Makes `subscription` the one records come from, if no later reading anew superseded
    /// `generation` (the previous subscription is cancelled; a superseded one is).
    private func read(_ subscription: NATSSubscription, generation: Int) {
        let (old, current): (Reader, Bool) = reader.withLock { reader in
            guard reader.generation == generation, !reader.closed else { return (Reader(), false) }
            let old = Reader(subscription: reader.subscription, forward: reader.forward)
            reader.subscription = subscription
            reader.forward = forward(subscription, generation: generation)
            return (old, true)
        }
        old.subscription?.cancel()
        old.forward?.cancel()
        if !current { subscription.cancel() }
    }

    /// Passes `subscription`'s records on while `generation` is the current one.
    private func forward(_ subscription: NATSSubscription, generation: Int) -> Task<Void, Never> {
        let incoming = incoming
        let counts = counts
        return Task { [weak self] in
            for await message in subscription.messages {
                guard let self else { return }
                let passed = self.reader.withLock { reader -> Bool in
                    guard reader.generation == generation else { return false }
                    if case .dropped = incoming.yield(message) { counts.dropped() }
                    return true
                }
                if !passed { return }
            }
        }
    }

    /// Reads the stream again from `sequence` on (retried every 250 ms until the consumer is made).
    /// The current consumer's records stop at once.
    func resume(from sequence: UInt64) {
        let generation = reader.withLock { reader in
            reader.generation += 1
            return reader.generation
        }
        Task {
            while reader.withLock({ !$0.closed && $0.generation == generation }) {
                do {
                    read(try await jetStream.subscribeOrdered(to: RelayRosterRecord.subjects, from: sequence), generation: generation)
                    return
                } catch {
                    try? await Task.sleep(for: .milliseconds(250))
                }
            }
        }
    }

    /// Appends `records` after those handed in before.
    func publish(_ records: [RelayRosterRecord]) { pending.yield(records) }

    /// Removes an emptied room's records from the stream, once (a failure is counted: the room's
    /// next emptying removes them too).
    func purge(_ purge: RelayRosterPurge) {
        counts.purgeAsked()
        purging.yield(purge)
    }

    /// Purges asked of the stream, and those that failed.
    var purges: (asked: Int, failed: Int) { counts.purges }

    /// Appends that failed and were tried again.
    var publishRetries: Int { counts.retries }

    /// Records dropped on arrival because the relay did not read them fast enough (each then read
    /// again from the stream).
    var dropped: Int { counts.drops + (reader.withLock { $0.subscription?.dropped } ?? 0) }

    /// Lets the records handed in be stored (within `limit`), then stops; the client closes after.
    func close(limit: Duration = .seconds(2)) async {
        pending.finish()
        purging.finish()
        purger.cancel()
        let publisher = publisher
        let finished = Task {
            try? await Task.sleep(for: limit)
            publisher.cancel()
        }
        await publisher.value
        finished.cancel()
        let current: Reader = reader.withLock { reader in
            reader.closed = true
            defer { reader.subscription = nil; reader.forward = nil }
            return Reader(subscription: reader.subscription, forward: reader.forward)
        }
        current.subscription?.cancel()
        current.forward?.cancel()
        incoming.finish()
        jetStream.close()
    }
}

/// Counts shared with the channel's tasks.
private final class Counts: Sendable {
    private let state = TSanVisibleMutex((retries: 0, drops: 0, purges: 0, purgesFailed: 0))
    func retried() { state.withLock { $0.retries += 1 } }
    func dropped() { state.withLock { $0.drops += 1 } }
    func purgeAsked() { state.withLock { $0.purges += 1 } }
    func purgeFailed() { state.withLock { $0.purgesFailed += 1 } }
    var purges: (asked: Int, failed: Int) { state.withLock { ($0.purges, $0.purgesFailed) } }
    var retries: Int { state.withLock { $0.retries } }
    var drops: Int { state.withLock { $0.drops } }
}
#endif

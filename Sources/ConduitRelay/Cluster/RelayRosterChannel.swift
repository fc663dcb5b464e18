#if NATS
import ConduitCore
import ConduitNATS
import ConduitRelayCore

/// The cluster's roster over NATS JetStream: one stream (``RelayRosterRecord/streamName``, file
/// storage, made by the first relay) that every relay appends its records to and reads from its
/// start, in the stream's order, through an ordered consumer. The stream's order is the one order
/// of joins and leaves every relay applies (RelayMachine+Roster.swift).
///
/// Records are appended one at a time, in order, each retried (every 250 ms) until the stream
/// stored it: a record is never dropped, and a retry of a stored one is dropped by the stream
/// (its message ID). While JetStream is unreachable, joins here wait and are refused
/// `clusterUnavailable` after the join timeout.
final class RelayRosterChannel: Sendable {
    private let jetStream: NATSJetStream
    let subscription: NATSSubscription
    private let pending: AsyncStream<[RelayRosterRecord]>.Continuation
    private let publisher: Task<Void, Never>
    private let retries = Counter()

    /// Finds or makes the stream and starts reading it; fails if the server has no JetStream.
    static func open(client: NATSClient, node: RelayNodeID) async throws(NATSError) -> RelayRosterChannel {
        let jetStream = try NATSJetStream(client: client)
        do {
            try await jetStream.addStream(named: RelayRosterRecord.streamName, subjects: [RelayRosterRecord.subject])
            let subscription = try jetStream.subscribeOrdered(to: RelayRosterRecord.subject)
            return RelayRosterChannel(jetStream: jetStream, subscription: subscription, node: node)
        } catch {
            jetStream.close()
            throw error
        }
    }

    private init(jetStream: NATSJetStream, subscription: NATSSubscription, node: RelayNodeID) {
        self.jetStream = jetStream
        self.subscription = subscription
        let retries = retries
        let (records, pending) = AsyncStream.makeStream(of: [RelayRosterRecord].self)
        self.pending = pending
        publisher = Task {
            var serial: UInt64 = 0
            for await batch in records {
                for record in batch {
                    serial += 1
                    // The same ID for every try: a stored record retried is a duplicate there.
                    let id = "\(node)-\(serial)"
                    while !Task.isCancelled {
                        do {
                            _ = try await jetStream.publish(record.encoded, on: RelayRosterRecord.subject, messageID: id)
                            break
                        } catch {
                            retries.add()
                            try? await Task.sleep(for: .milliseconds(250))
                        }
                    }
                }
            }
        }
    }

    /// Appends `records` after those handed in before.
    func publish(_ records: [RelayRosterRecord]) { pending.yield(records) }

    /// Appends that failed and were tried again.
    var publishRetries: Int { retries.value }

    /// Lets the records handed in be stored (within `limit`), then stops; the client closes after.
    func close(limit: Duration = .seconds(2)) async {
        pending.finish()
        let publisher = publisher
        let finished = Task {
            try? await Task.sleep(for: limit)
            publisher.cancel()
        }
        await publisher.value
        finished.cancel()
        jetStream.close()
    }
}

/// A count shared with the publishing task.
private final class Counter: Sendable {
    private let count = TSanVisibleMutex(0)
    func add() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
#endif

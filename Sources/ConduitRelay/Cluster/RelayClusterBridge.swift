import ConduitCore
import ConduitRelayCore
#if NATS
import ConduitNATS
#endif

/// The relay's link to its cluster: a NATS connection (the official C client, behind the NATS
/// trait) on which the relay publishes its `RelayClusterMessage`s, one subject per room, and
/// receives every other relay's. No protocol of its own beyond those subjects and messages
/// (`docs/wire-format.md`, "Relay cluster"); discovery is NATS's: a relay hears the others by
/// subscribing to every room subject.
struct RelayClusterBridge: RelayClusterBus {
    #if NATS
    private let client: NATSClient
    private let subscription: NATSSubscription
    /// The roster, when the server has JetStream (nil: per-relay numbering, as without one).
    private let roster: RelayRosterChannel?
    /// Why there is no roster, when there is none.
    let rosterUnavailable: String?

    /// Connects to the NATS server at `url` (`nats://HOST:PORT`) and subscribes to every room's
    /// subject; returns once the server registered the subscription.
    static func connect(to url: String, node: RelayNodeID) async throws(ConduitError) -> RelayClusterBridge {
        do {
            let client = try await NATSClient.connect(to: url, name: "conduit-relay-\(node)")
            do {
                // Every room subject and the token subject, on one subscription (one delivery
                // thread: messages arrive in the order the server sent them).
                let subscription = try client.subscribe(to: "conduit.relay.>")
                try await client.flush()
                do {
                    let roster = try await RelayRosterChannel.open(client: client, node: node)
                    return RelayClusterBridge(client: client, subscription: subscription, roster: roster, rosterUnavailable: nil)
                } catch {
                    // A server without JetStream: a cluster still, each relay numbering its own.
                    return RelayClusterBridge(client: client, subscription: subscription, roster: nil, rosterUnavailable: "\(error)")
                }
            } catch {
                await client.close()
                throw error
            }
        } catch {
            throw ConduitError(.connectionFailed, "cannot join the cluster at \(url): \(error)")
        }
    }

    /// Publishes each post, encoded, on its subject; returns how many the client refused (closed).
    func publish(_ posts: [RelayClusterPost]) -> Int {
        var refused = 0
        for post in posts {
            do {
                switch post {
                case .room(let message): try client.publish(message.encoded, on: RelayClusterMessage.subject(for: message.room))
                case .node(let message): try client.publish(message.encoded, on: RelayClusterNodeMessage.subject)
                case .tokenUse(let use): try client.publish(use.encoded, on: RelayClusterTokenUse.subject)
                }
            } catch {
                refused += 1
            }
        }
        return refused
    }

    var hasRoster: Bool { roster != nil }

    func publishRoster(_ records: [RelayRosterRecord]) { roster?.publish(records) }

    func resumeRoster(from sequence: UInt64) { roster?.resume(from: sequence) }

    func purgeRoster(_ purge: RelayRosterPurge) { roster?.purge(purge) }

    /// Purges of emptied rooms' records asked of the roster's stream, and those that failed.
    var rosterPurges: (asked: Int, failed: Int) { roster?.purges ?? (0, 0) }

    /// Roster appends that failed and were tried again.
    var rosterPublishRetries: Int { roster?.publishRetries ?? 0 }

    /// The other relays' messages (and this relay's own, which are ignored), in order, one per
    /// batch (the C client hands them over one at a time); and the roster's records, in the
    /// stream's order.
    func deliveries() -> AsyncStream<[RelayClusterInbound]> {
        let source = subscription.messages
        let records = roster?.records
        return AsyncStream { continuation in
            let pump = Task {
                await withTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for await message in source { continuation.yield([.encoded(subject: message.subject, payload: message.payload)]) }
                    }
                    if let records {
                        group.addTask {
                            for await record in records {
                                continuation.yield([.roster(payload: record.payload, sequence: record.streamSequence ?? 0, delivered: record.consumerSequence)])
                            }
                        }
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in pump.cancel() }
        }
    }

    /// Messages dropped on arrival because the relay did not read them fast enough (the machine
    /// also finds them as gaps; a roster record dropped so shows as one out of order).
    var dropped: Int { subscription.dropped + (roster?.dropped ?? 0) }

    /// Lets what was published reach the server (bounded), then closes the connection.
    func close() async {
        await roster?.close()
        try? await client.flush(timeout: .seconds(1))
        await client.close()
    }
    #else
    static func connect(to url: String, node: RelayNodeID) async throws(ConduitError) -> RelayClusterBridge {
        throw ConduitError(.unsupportedByTransport, "this build has no cluster support: build with the NATS package trait (libnats-dev)")
    }

    func publish(_ posts: [RelayClusterPost]) -> Int { posts.count }
    func deliveries() -> AsyncStream<[RelayClusterInbound]> { AsyncStream { $0.finish() } }
    var dropped: Int { 0 }
    var rosterUnavailable: String? { "no NATS support in this build" }
    var rosterPublishRetries: Int { 0 }
    var rosterPurges: (asked: Int, failed: Int) { (0, 0) }
    func close() async {}
    #endif
}

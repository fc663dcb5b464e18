public import ConduitCore
public import ConduitRelayCore

extension RelayServer {
    /// Joins the cluster whose NATS server is at `url` (`nats://HOST:PORT`): rooms span every
    /// relay of it. Members joined at another relay appear in this relay's peer lists (with the
    /// same member numbers and peer-list versions on every relay when the server has JetStream:
    /// ``usesClusterRoster``; else with numbers of this relay), and frames routed to the whole main room or to one member cross
    /// relays in order, each relay's room stream numbered so that a message NATS lost is counted
    /// (`RelayStatistics.cluster`). Needs the NATS package trait. Once per relay.
    ///
    /// A token admitted at one relay is refused at every other once they heard of it (a replay
    /// within NATS's delivery time of the first use can still pass at another relay).
    ///
    /// Subgroups (their frames and session lifetime), labeled channels, data tracks, extensions
    /// and backpressure span relays too, and invitations reach peers connected to any relay of
    /// it (online status is cluster-wide; `docs/wire-format.md`, "Relay cluster").
    ///
    /// `liveness`: how often this relay announces its members again, and after how long a silent
    /// relay's members are reported left here (a relay that died without a word).
    public func joinCluster(_ url: String, liveness: RelayClusterLiveness = .init()) async throws(ConduitError) {
        guard !isShutDown else { throw ConduitError(.connectionClosed, "the relay is shut down") }
        guard cluster == nil else { throw ConduitError(.invalidConfiguration, "the relay already joined a cluster") }
        let node = RelayNodeID.random()
        let bridge = try await RelayClusterBridge.connect(to: url, node: node)
        guard !isShutDown, cluster == nil else {
            await bridge.close()
            throw ConduitError(.connectionClosed, "the relay shut down (or joined a cluster) meanwhile")
        }
        join(bridge, as: node, liveness: liveness)
        rosterUnavailable = machine.usesRoster ? nil : bridge.rosterUnavailable ?? "rooms existed before the relay joined the cluster"
        rosterRetries = { bridge.rosterPublishRetries }
        rosterPurges = { bridge.rosterPurges }
    }

    /// Whether membership comes from the cluster's roster (a NATS server with JetStream): member
    /// numbers and peer-list versions are then the same on every relay. Without it (a server
    /// without JetStream), each relay numbers and versions its own (see `clusterRosterUnavailable`).
    public var usesClusterRoster: Bool { machine.usesRoster }

    /// Why the relay's cluster has no roster, once it joined one without.
    public var clusterRosterUnavailable: String? { rosterUnavailable }

    /// Roster records whose append failed (JetStream unreachable) and was tried again.
    public var clusterRosterRetries: Int { rosterRetries?() ?? 0 }

    /// Requests to remove an emptied room's records from the roster's stream, and those that
    /// failed (`RelayRosterPurge` in ConduitRelayCore).
    public var clusterRosterPurges: (asked: Int, failed: Int) { rosterPurges?() ?? (0, 0) }

    /// Makes this relay node `node` of the cluster `bus` reaches (NATS, or the in-process bus of
    /// a ``RelayShardGroup``'s shards). The relay must not be in a cluster yet.
    func join(_ bus: any RelayClusterBus, as node: RelayNodeID, liveness: RelayClusterLiveness) {
        cluster = bus
        machine.joinCluster(as: node, liveness: liveness, roster: bus.hasRoster, now: now())
        runActions()
        let deliveries = bus.deliveries()
        tasks.append(Task { [weak self] in
            for await batch in deliveries {
                guard let self else { return }
                await self.ingestCluster(batch)
            }
        })
    }

    /// This relay's name in its cluster, once it joined one.
    public var clusterNode: RelayNodeID? { machine.clusterNode }

    /// Messages the NATS client dropped on arrival for want of reading (also counted as lost by
    /// the machine, through the gaps they leave).
    public var clusterMessagesDroppedOnArrival: Int { cluster?.dropped ?? 0 }

    /// A batch from the bus, in order; the machine's actions run once for all of it.
    private func ingestCluster(_ batch: [RelayClusterInbound]) {
        guard !isShutDown else { return }
        let current = now()
        for inbound in batch {
            switch inbound {
            case .encoded(let subject, let payload):
                if subject == RelayClusterTokenUse.subject {
                    ingestTokenUse(payload)
                } else {
                    machine.handleCluster(payload, now: current)
                }
            case .posted(.room(let message)):
                machine.handleCluster(message, now: current)
            case .posted(.node(let message)):
                machine.handleClusterNode(message, now: current)
            case .posted(.tokenUse(let use)):
                ingestTokenUse(use)
            case .roster(let payload, let sequence, let delivered):
                machine.handleRoster(payload, sequence: sequence, delivered: delivered, now: current)
            }
        }
        runActions()
    }

    /// Publishes what the machine has for the cluster, in order, in one hand-over (the
    /// in-process bus then takes its lock and wakes the other shards once per batch).
    func publishClusterMessages() {
        guard let cluster else { return }
        var posts: [RelayClusterPost] = []
        while let message = machine.pollClusterMessage() { posts.append(.room(message)) }
        while let message = machine.pollClusterNodeMessage() { posts.append(.node(message)) }
        var records: [RelayRosterRecord] = []
        while let record = machine.pollRosterRecord() { records.append(record) }
        if !records.isEmpty { cluster.publishRoster(records) }
        if let from = machine.pollRosterResume() { cluster.resumeRoster(from: from) }
        while let purge = machine.pollRosterPurge() { cluster.purgeRoster(purge) }
        guard !posts.isEmpty else { return }
        clusterPublishFailures += cluster.publish(posts)
    }

    /// Closes the NATS link (after the members' departures were published).
    func leaveCluster() async {
        guard let bridge = cluster else { return }
        publishClusterMessages()
        cluster = nil
        await bridge.close()
    }
}

public import ConduitCore
import ConduitARQ
public import ConduitDriver
public import ConduitRelayCore

/// A relay on several cores: `threads` shards, each a ``RelayServer`` with its own `RelayMachine`
/// (no lock and no shared actor per message: a shard's traffic stays on that shard's actor), the
/// links spread over them, and rooms whose members sit on different shards held together by the
/// same cluster messages relays exchange through NATS, over a bus in memory.
///
/// - Links: where the transport lets listeners share an address (UDP with `reusePort`), each
///   shard listens on it with a socket of its own, read on its own event loop, and the kernel
///   spreads remote addresses over them (``LinkSpread/byAddress``); elsewhere one listener hands
///   its links to the shards in turn, in the order they are accepted (the first to shard 0, the
///   next to shard 1, …: ``LinkSpread/inTurn``, which lets a test place members).
/// - Rooms: each shard is a node of an in-process cluster; a member's frame is forwarded once per
///   other shard that has members of the room (one fan-out per shard, not per receiver), in
///   order, and every room rule that holds across clustered relays holds across shards.
/// - Control plane: presence (peer lists) and leaves cross shards as cluster presence; a token
///   joins once in the whole process (one ledger, checked at admission on every shard).
///   Subgroups, data tracks, labeled channels, extensions and backpressure cross shards as they
///   cross clustered relays, and so do invitations: online status is process-wide (each shard's
///   node stream), an invitation lives on its inviter's shard and reaches invitees on any other.
///   So `conduit relay` runs one shard per core by default.
///
/// With one thread the group is one plain relay. With ``joinCluster(_:liveness:)`` every shard
/// joins the NATS cluster itself instead (each one node of it), before the group listens.
public actor RelayShardGroup {
    /// The shards, each a relay of its own (for statistics and tests).
    public nonisolated let shards: [RelayServer]
    private let registry: TransportRegistry
    private let clock: any ConduitClock
    private let liveness: RelayClusterLiveness
    private let configuration: RelayConfiguration
    private var bus: RelayInProcessBus?
    private var clustered = false
    private var listeners: [any TransportListener] = []
    private var tasks: [Task<Void, Never>] = []
    private var nextShard = 0
    private var isShutDown = false

    /// How links reach the shards.
    public enum LinkSpread: Sendable, Hashable {
        /// One listener; its links go to the shards in turn, in the order they are accepted.
        case inTurn
        /// A listener per shard on one shared address; the kernel picks a shard per remote address.
        case byAddress
    }

    /// How the last ``listen(on:)`` spread its links (`.inTurn` until one shared its address).
    public private(set) var spread = LinkSpread.inTurn

    /// Makes `threads` shards that listen nowhere yet (see ``listen(on:)``).
    /// - Parameters:
    ///   - threads: how many shards (at least 1): one per core the relay is to use.
    ///   - authority: checks join tokens; each shard gets a copy, and replays are checked across shards.
    ///   - configuration: room caps, queue limits, invitation limits, for every shard.
    ///   - registry: the transports ``listen(on:)`` resolves URLs with.
    ///   - wallClock: Unix time in seconds, for token expiry.
    ///   - clock: the monotonic time the shards run on.
    ///   - liveness: how often a shard announces its members to the others, and after how long a
    ///     silent one is taken for gone (as between clustered relays).
    public init(
        threads: Int,
        authority: RelayTokenAuthority,
        configuration: RelayConfiguration = .init(),
        registry: TransportRegistry,
        wallClock: @escaping @Sendable () -> UInt64 = RelayServer.unixTime,
        clock: any ConduitClock = SystemMonotonicClock(),
        liveness: RelayClusterLiveness = .init()
    ) {
        let count = max(1, threads)
        let ledger = count > 1 ? RelaySharedTokenLedger(authority) : nil
        shards = (0..<count).map { _ in
            RelayServer(authority: authority, configuration: configuration, registry: registry, wallClock: wallClock, clock: clock, sharedTokens: ledger)
        }
        self.registry = registry
        self.clock = clock
        self.liveness = liveness
        self.configuration = configuration
    }

    /// Starts listening on `url` and returns the bound address; its links are spread over the shards.
    @discardableResult
    public func listen(on url: String) async throws(ConduitError) -> TransportURL {
        guard !isShutDown else { throw ConduitError(.connectionClosed, "the relay is shut down") }
        await joinInProcessBusIfNeeded()
        let (listener, reliability) = try await RelayServer.openListener(url, registry: registry)
        let own = await listenersSharing(listener)
        if own.count == shards.count, shards.count > 1 {
            spread = .byAddress
            for (shard, shardListener) in zip(shards, own) { await shard.serve(shardListener, reliability: reliability) }
        } else {
            listeners.append(listener)
            tasks.append(Task { await self.acceptLoop(listener, reliability: reliability) })
        }
        return listener.localURL
    }

    /// `first` and one more listener on its address per other shard, where the transport lets
    /// listeners share one (UDP with `reusePort`); just `first` where it does not.
    private func listenersSharing(_ first: any TransportListener) async -> [any TransportListener] {
        var own = [first]
        while own.count < shards.count, let more = try? await RelayServer.openListener(first.localURL.description, registry: registry).0 {
            own.append(more)
        }
        guard own.count < shards.count else { return own }
        for extra in own.dropFirst() { await extra.close() }
        return [first]
    }

    /// Makes every shard a node of the NATS cluster at `url` (see `RelayServer.joinCluster`):
    /// the shards then meet through NATS, as separate relays. Before ``listen(on:)`` when there
    /// are several shards (they are on the in-process bus from then on).
    public func joinCluster(_ url: String, liveness: RelayClusterLiveness = .init()) async throws(ConduitError) {
        guard bus == nil else { throw ConduitError(.invalidConfiguration, "join the cluster before listening: the shards already share an in-process bus") }
        for shard in shards { try await shard.joinCluster(url, liveness: liveness) }
        clustered = true
    }

    /// Why the shards' cluster has no roster (nil: every shard uses it, so member numbers and
    /// peer-list versions are the same on every relay; see `RelayServer.usesClusterRoster`).
    public var clusterRosterUnavailable: String? {
        get async {
            for shard in shards where !(await shard.usesClusterRoster) { return await shard.clusterRosterUnavailable ?? "not in a cluster" }
            return nil
        }
    }

    /// The shards of a group of more than one, each a node of one in-process cluster.
    private func joinInProcessBusIfNeeded() async {
        guard shards.count > 1, !clustered, bus == nil else { return }
        let bus = RelayInProcessBus(members: shards.count, backlogLimit: RelayInProcessBus.backlogLimit(for: configuration))
        self.bus = bus
        for (index, shard) in shards.enumerated() {
            await shard.join(bus.endpoint(index), as: RelayNodeID(UInt64(index + 1)), liveness: liveness)
        }
    }

    private func acceptLoop(_ listener: any TransportListener, reliability: ARQEngine.Configuration) async {
        while !Task.isCancelled {
            guard let link = await RelayServer.nextLink(listener, reliability: reliability, clock: clock) else { break }
            let shard = shards[nextShard % shards.count]
            nextShard += 1
            await shard.adopt(link)
        }
    }

    /// Every shard's counters added up (each frame forwarded to another shard is counted once
    /// there as received: `cluster` says how much crossed).
    public var statistics: RelayStatistics {
        get async {
            var total = RelayStatistics()
            for shard in shards { total.add(await shard.statistics) }
            return total
        }
    }

    /// The peers in `room` as shard `index` sees them (every shard sees every member once they
    /// heard of each other), by that shard's member numbers.
    public func members(of room: RoomID, onShard index: Int = 0) async -> [UInt16: PeerID] {
        await shards[index].members(of: room)
    }

    /// Stops accepting, then shuts every shard down (members told, links closed). Idempotent.
    public func shutdown() async {
        guard !isShutDown else { return }
        isShutDown = true
        for listener in listeners { await listener.close() }
        for task in tasks { task.cancel() }
        tasks.removeAll()
        await withTaskGroup(of: Void.self) { group in
            for shard in shards { group.addTask { await shard.shutdown() } }
        }
    }
}

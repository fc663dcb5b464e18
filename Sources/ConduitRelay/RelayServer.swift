public import ConduitCore
import ConduitARQ
public import ConduitRelayCore
public import ConduitDriver
import ConduitReliableTransport
import ConduitRooms
import DequeModule
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Hosts a `RelayMachine` on any number of transport listeners: the relay as a library, used in
/// process for loopback rooms and by `conduit relay`.
///
/// The control plane is this actor. Per link there is one reader task (a batch per hop into the
/// actor, never a hop per packet) and one writer task that takes the link's whole outbox per hop
/// and writes it; a writer blocked on a slow link holds nobody else up, and the machine's
/// per-receiver caps decide what happens to that receiver's queue meanwhile. A sender's reader
/// waits while the machine says a receiver of its room is full (`RelayMachine.mayRead`): the
/// unread link's flow control then slows the sender, instead of the relay dropping or
/// disconnecting anyone. Links that lose
/// datagrams (UDP) get the reliability engine, as calls do. Time comes from an injected clock and
/// the machine's timeouts (peer-list flushes, vanish checks, invitation expiry) run on one
/// deadline timer, not a tick.
///
/// The per-link loops are not `SansIODriver`s: that driver owns one machine per link, while the
/// relay's `RelayMachine` is one machine for every link (it routes between them), read and written
/// per connection ID, and says what to do through actions rather than events.
public actor RelayServer {
    /// Room caps, peer-list coalescing, per-receiver queue limits and invitation limits.
    public nonisolated let configuration: RelayConfiguration
    var machine: RelayMachine
    var authority: RelayTokenAuthority
    private let registry: TransportRegistry
    let wallClock: @Sendable () -> UInt64
    private let clock: any ConduitClock
    private var timer = DeadlineTimer()
    /// Links the machine closed, each with when it is closed under its writer if it is still
    /// there (``closeGrace`` after, rounded up to ``closeGraceTick``): in order of that time, so
    /// the one timer serves them all and a storm of refused links costs no task apiece.
    private var forceCloses = Deque<(due: ConduitInstant, id: RelayConnectionID)>()
    /// How long a closing link's writer may take to get its last frames out.
    static let closeGrace = Duration.seconds(2)
    /// Forced closes due within one tick are handled by one firing of the timer.
    static let closeGraceTick: UInt64 = 250_000_000
    private var drainedWaiters: [CheckedContinuation<Void, Never>] = []
    /// Isolated members' links, closed and being read to their end, each with the wait after
    /// which it is ended anyway (see ``endClosedLink(_:)``).
    private var isolatedReadLimits: [RelayConnectionID: Task<Void, Never>] = [:]
    /// Who waits in ``waitUntil(_:)`` (RelayServer+Waiting.swift), with what for.
    var conditionWaiters: [RelayConditionWaiter] = []

    private var listeners: [any TransportListener] = []
    private var links: [RelayConnectionID: LinkState] = [:]
    private var nextConnection: UInt64 = 1
    var tasks: [Task<Void, Never>] = []
    var isShutDown = false
    /// Whether a heap trim is due (see `trimHeapAfterChurn`), and how many were done (for tests).
    private var heapTrimScheduled = false
    /// Which of `heapTrimDelays` the next trim waits.
    private var nextHeapTrim = 0
    /// The wait for the next trim, cancelled at shutdown (on a clock nobody advances any more, a
    /// task left asleep would hold the relay for good).
    private var heapTrimWait: Task<Void, Never>?
    package private(set) var heapTrims = 0
    /// The bus to the other relays (NATS, once ``joinCluster(_:liveness:)`` ran) or to the other
    /// shards of this process (RelayServer+Cluster.swift, RelayShardGroup.swift).
    var cluster: (any RelayClusterBus)?
    /// Why the NATS cluster has no roster, and the roster's retried appends (RelayServer+Cluster.swift).
    var rosterUnavailable: String?
    var rosterRetries: (@Sendable () -> Int)?
    var rosterPurges: (@Sendable () -> (asked: Int, failed: Int))?
    /// The token IDs every shard of this process has admitted, when it is one of a
    /// ``RelayShardGroup``'s shards: a replay is refused at once on every shard.
    let sharedTokens: RelaySharedTokenLedger?
    /// Times a read waited for the other shards to take their backlog (RelayInProcessBus.swift).
    package private(set) var clusterBusWaits = 0
    /// Messages for the cluster the NATS client refused (the other relays count them as lost too).
    public internal(set) var clusterPublishFailures = 0
    /// Token uses announced to and heard from the cluster (RelayClusterTokens.swift).
    var clusterTokens = RelayClusterTokenLedger()

    private struct LinkState {
        let link: any TransportLink
        let wake: AsyncStream<Void>.Continuation
        var closing = false
        /// The reader, waiting for `.resumeReading` (backpressure).
        var resumeWaiter: CheckedContinuation<Void, Never>?
        /// The link's reader and writer; forgotten with the link, so the table stays as large as
        /// the set of open links.
        var tasks: [Task<Void, Never>] = []
    }

    /// Makes a relay that listens nowhere yet (see ``listen(on:)``).
    /// - Parameters:
    ///   - authority: checks join tokens (signature, expiry, room, peer, replays).
    ///   - configuration: room caps, peer-list coalescing, per-receiver queue limits, invitation limits.
    ///   - registry: the transports ``listen(on:)`` resolves URLs with; share the peers' registry for loopback rooms.
    ///   - wallClock: Unix time in seconds, for token expiry (a parameter so tests can move it).
    ///   - clock: the monotonic time the machine runs on (a `VirtualClock` in tests); by default the system's.
    public init(
        authority: RelayTokenAuthority,
        configuration: RelayConfiguration = .init(),
        registry: TransportRegistry,
        wallClock: @escaping @Sendable () -> UInt64 = RelayServer.unixTime,
        clock: any ConduitClock = SystemMonotonicClock()
    ) {
        self.init(authority: authority, configuration: configuration, registry: registry, wallClock: wallClock, clock: clock, sharedTokens: nil)
    }

    /// A shard of a ``RelayShardGroup``: token uses are checked against `sharedTokens` too.
    init(
        authority: RelayTokenAuthority,
        configuration: RelayConfiguration,
        registry: TransportRegistry,
        wallClock: @escaping @Sendable () -> UInt64,
        clock: any ConduitClock,
        sharedTokens: RelaySharedTokenLedger?
    ) {
        self.sharedTokens = sharedTokens
        self.configuration = configuration
        self.machine = RelayMachine(configuration: configuration)
        self.authority = authority
        self.registry = registry
        self.wallClock = wallClock
        self.clock = clock
    }

    /// The system's wall clock in Unix seconds: the default `wallClock`, against which tokens expire.
    public static let unixTime: @Sendable () -> UInt64 = { UInt64(max(0, time(nil))) }

    func now() -> ConduitInstant { clock.now() }

    /// Starts listening on `url` (any registered transport) and returns the bound address.
    @discardableResult
    public func listen(on url: String) async throws(ConduitError) -> TransportURL {
        guard !isShutDown else { throw ConduitError(.connectionClosed, "the relay is shut down") }
        let (listener, reliability) = try await Self.openListener(url, registry: registry)
        serve(listener, reliability: reliability)
        return listener.localURL
    }

    /// Accepts `listener`'s links from now on (and closes it at shutdown).
    func serve(_ listener: any TransportListener, reliability: ARQEngine.Configuration) {
        guard !isShutDown else {
            Task { await listener.close() }
            return
        }
        listeners.append(listener)
        tasks.append(Task { await self.acceptLoop(listener, reliability: reliability) })
    }

    /// A listener on `url`, and the reliability its links get (URL options such as the ARQ's are
    /// the relay's, not the transport's).
    static func openListener(_ url: String, registry: TransportRegistry) async throws(ConduitError) -> (any TransportListener, ARQEngine.Configuration) {
        let (transport, resolved) = try registry.resolve(url)
        let reliability = try ARQEngine.Configuration(url: resolved)
        return (try await transport.listen(on: resolved.withoutReliableTransportOptions), reliability)
    }

    /// The listener's next link, made reliable if it loses datagrams; nil once the listener closed.
    static func nextLink(_ listener: any TransportListener, reliability: ARQEngine.Configuration, clock: any ConduitClock) async -> (any TransportLink)? {
        guard let raw = try? await listener.accept() else { return nil }
        return await ReliableTransportLink.wrapIfNeeded(raw, configuration: reliability, clock: clock)
    }

    /// Counters of joins, refusals by reason, frames relayed and dropped.
    public var statistics: RelayStatistics { machine.statistics }

    /// The invitation table and its counters (issue 8).
    public var invitations: RelayInvitations { machine.invitations }

    /// Peers in a room, by member number (for tools and tests).
    public func members(of room: RoomID) -> [UInt16: PeerID] { machine.members(of: room) }

    /// Tells every member the relay is going away, lets their links drain briefly, then closes
    /// every listener and link. Idempotent.
    public func shutdown() async {
        guard !isShutDown else { return }
        isShutDown = true
        for listener in listeners { await listener.close() }
        let current = now()
        for id in links.keys.sorted() { machine.disconnect(id, .relayShutdown, "the relay is shutting down", now: current) }
        runActions()
        // Writers close their links once the goodbye is out; give them a moment.
        await waitUntilLinksClosed(limit: .seconds(1))
        timer.cancel()
        for (id, state) in links {
            state.wake.finish()
            state.resumeWaiter?.resume()
            await state.link.close()
            for task in state.tasks { task.cancel() }
            machine.connectionClosed(id, now: now())
        }
        links.removeAll()
        heapTrimWait?.cancel()
        for limit in isolatedReadLimits.values { limit.cancel() }
        isolatedReadLimits.removeAll()
        for task in tasks { task.cancel() }
        tasks.removeAll()
        await leaveCluster()
    }

    /// Returns once every link closed, or after `limit`.
    private func waitUntilLinksClosed(limit: Duration) async {
        guard !links.isEmpty else { return }
        let limiter = clock.after(limit) { [weak self] in await self?.releaseDrainedWaiters() }
        await withCheckedContinuation { drainedWaiters.append($0) }
        limiter.cancel()
    }

    private func releaseDrainedWaiters() {
        let waiters = drainedWaiters
        drainedWaiters.removeAll()
        for waiter in waiters { waiter.resume() }
    }

    // MARK: Links

    private func acceptLoop(_ listener: any TransportListener, reliability: ARQEngine.Configuration) async {
        while !Task.isCancelled {
            guard let link = await Self.nextLink(listener, reliability: reliability, clock: clock) else { break }
            adopt(link)
        }
    }

    /// Serves `link` (accepted here, or by a ``RelayShardGroup`` that picked this shard for it).
    func adopt(_ link: any TransportLink) {
        guard !isShutDown else {
            Task { await link.close() }
            return
        }
        let id = RelayConnectionID(nextConnection)
        nextConnection += 1
        guard machine.connectionOpened(id, now: now()) else {
            Task { await link.close() }
            return
        }
        rearmTimer()
        let (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        links[id] = LinkState(link: link, wake: wake)
        links[id]!.tasks = [
            Task { await self.readLoop(id, link) },
            Task { await self.writeLoop(id, link, wakeups) },
        ]
    }

    /// How many frames of one read a clustered relay hands its machine before it checks that the
    /// bus has room again.
    static let clusterReadPart = 32

    private func readLoop(_ id: RelayConnectionID, _ link: any TransportLink) async {
        while true {
            await waitUntilReadable(id)
            // What this read publishes to the other shards must not pile up beyond a bound there.
            await waitForClusterRoom()
            let batch: DatagramBatch?
            do { batch = try await link.read() } catch { batch = nil }
            guard let batch else { break }
            // A read may hold many frames: the machine takes them until a receiver fills, and
            // the rest waits here until the room has drained. In a cluster, a part at a time,
            // each after the bus has room (RelayInProcessBus.swift says why).
            var next = 0
            while hasLink(id) {
                let end = cluster == nil ? batch.count : min(batch.count, next + Self.clusterReadPart)
                next = ingest(id, batch, from: next, to: end)
                guard next < batch.count else { break }
                // Let the other shards' messages in before the next part: a `pressure` waiting
                // behind this read is applied then, not after the whole read (a reliable link
                // hands over everything ready, up to its 4 MiB receive window). Neither wait below
                // suspends while the sender may go on and the bus has room.
                await Task.yield()
                await waitForResume(id)
                await waitForClusterRoom()
            }
        }
        linkEnded(id)
    }

    private func waitForClusterRoom() async {
        guard let cluster, !cluster.hasRoom, await cluster.waitForRoom() else { return }
        clusterBusWaits += 1
    }

    /// Returns at once unless the machine holds this sender back; then when it lets it go (or
    /// the link ends).
    private func waitUntilReadable(_ id: RelayConnectionID) async {
        guard hasLink(id), !machine.mayRead(id, now: now()) else { return }
        await waitForResume(id)
    }

    private func waitForResume(_ id: RelayConnectionID) async {
        guard hasLink(id), { (machine: inout RelayMachine) in machine.isReadPaused(id) }(&machine) else { return }
        rearmTimer()
        await withCheckedContinuation { links[id]!.resumeWaiter = $0 }
    }

    private func resumeReader(_ id: RelayConnectionID) {
        links[id]?.resumeWaiter?.resume()
        links[id]?.resumeWaiter = nil
    }

    /// Hands `batch` from `start` to the machine; returns where it stopped (see `RelayMachine.handle(_:batch:from:now:)`).
    private func ingest(_ id: RelayConnectionID, _ batch: DatagramBatch, from start: Int, to end: Int) -> Int {
        guard hasLink(id) else { return batch.count }
        let next = machine.handle(id, batch: batch, from: start, to: end, now: now())
        runActions()
        return next
    }

    private func linkEnded(_ id: RelayConnectionID) {
        isolatedReadLimits.removeValue(forKey: id)?.cancel()
        guard let state = links.removeValue(forKey: id) else { return }
        state.wake.finish()
        state.resumeWaiter?.resume()
        machine.connectionClosed(id, now: now())
        runActions()
        if links.isEmpty { releaseDrainedWaiters() }
        trimHeapAfterChurn()
    }

    /// A storm of short-lived links (refused joins) leaves glibc's heap large though little of it
    /// is live: freed chunks stay with the process. A second after a link ends (and so at most
    /// once a second while links keep ending) the free memory is handed back to the system; then
    /// twice more, 4 and 10 s later, because what a link's transport held is freed only when it
    /// has finished closing (a refused link drains for up to 2 s after the relay let it go). So
    /// the relay's RSS returns to its baseline after a storm, its tail included.
    static let heapTrimDelays: [Duration] = [.seconds(1), .seconds(4), .seconds(10)]

    private func trimHeapAfterChurn() {
        nextHeapTrim = 0  // churn starts the sequence again
        guard !heapTrimScheduled else { return }
        scheduleHeapTrim()
    }

    private func scheduleHeapTrim() {
        heapTrimScheduled = true
        let delay = Self.heapTrimDelays[nextHeapTrim]
        nextHeapTrim += 1
        heapTrimWait = clock.after(delay) { [weak self] in await self?.trimHeap() }
    }

    private func trimHeap() {
        heapTrimScheduled = false
        heapTrims += 1
        _ = Self.mallocTrim?(0)
        if nextHeapTrim < Self.heapTrimDelays.count { scheduleHeapTrim() }
    }

    /// glibc's `malloc_trim`, looked up at run time (its header is not in Swift's Glibc module);
    /// nil elsewhere.
    private static let mallocTrim: (@convention(c) (Int) -> Int32)? = {
        #if canImport(Glibc)
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return nil }  // RTLD_DEFAULT
        return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
        #else
        return nil
        #endif
    }()

    private func writeLoop(_ id: RelayConnectionID, _ link: any TransportLink, _ wakeups: AsyncStream<Void>) async {
        // Grown by use, not reserved: a link that is refused or never joins writes one small frame.
        var batch = DatagramBatch()
        for await _ in wakeups {
            while true {
                batch.removeAll()
                let closing = take(id, into: &batch)
                if !batch.isEmpty {
                    do { try await link.write(batch) } catch { break }
                }
                if closing && batch.isEmpty || closing && !hasQueued(id) {
                    await link.close()
                    endClosedLink(id)
                    return
                }
                if batch.isEmpty { break }
            }
        }
    }

    /// The link's queued frames, and whether the link is to be closed once they are out.
    private func take(_ id: RelayConnectionID, into batch: inout DatagramBatch) -> Bool {
        machine.pollTransmit(id, into: &batch, maxBytes: 256 * 1024, now: now())
        // Draining may let held-back senders go.
        runActions()
        return withLink(id) { $0.closing } ?? true
    }

    /// Whether link `id` is still open. Through the table's index: `links[id] != nil` copied the
    /// link's state (its link, wake-up stream and waiter retained and released) on every read and write.
    private func hasLink(_ id: RelayConnectionID) -> Bool { links.index(forKey: id) != nil }

    /// `body` on link `id`'s state in place (nil: no such link). A read through `links[id]` or
    /// the table's values copies the state; this runs for every batch a link writes.
    @discardableResult private func withLink<R>(_ id: RelayConnectionID, _ body: (inout LinkState) -> R) -> R? {
        guard let index = links.index(forKey: id) else { return nil }
        return body(&links.values[index])
    }

    private func forceClose(_ id: RelayConnectionID, _ link: any TransportLink) async {
        guard links[id] != nil else { return }
        await link.close()
        endClosedLink(id)
    }

    /// After the relay closed link `id`: ends the connection, unless the machine wants the link
    /// read to its end first (an isolated member, RelayMachine+Isolation.swift). Its reader then
    /// takes what the link still holds (a closed link's `read` returns what it had received,
    /// then nil) and ends the connection itself.
    private func endClosedLink(_ id: RelayConnectionID) {
        guard machine.readsUntilLinkEnds(id) else { return linkEnded(id) }
        // A reader held back by a room that does not move would keep the member for good.
        guard isolatedReadLimits[id] == nil else { return }
        isolatedReadLimits[id] = clock.after(configuration.isolateAfter) { [weak self] in await self?.endIsolatedLink(id) }
    }

    private func endIsolatedLink(_ id: RelayConnectionID) {
        isolatedReadLimits[id] = nil
        guard hasLink(id) else { return }
        machine.isolatedReadCutShort(id)
        linkEnded(id)
    }

    private func hasQueued(_ id: RelayConnectionID) -> Bool { machine.queuedBytes(id) > 0 }

    // MARK: The machine's actions

    func runActions() {
        defer {
            publishClusterMessages()
            rearmTimer()
            if !conditionWaiters.isEmpty { resumeConditionWaiters() }
        }
        while let action = machine.pollAction() {
            switch action {
            case .authorize(let id, let request):
                authorize(id, request)
            case .transmit(let id):
                withLink(id) { $0.wake.yield() }
            case .resumeReading(let id):
                resumeReader(id)
            case .close(let id):
                links[id]?.closing = true
                links[id]?.wake.yield()
                // A receiver that stopped reading would hold its writer (and link) forever:
                // after a grace period the link is closed under it.
                if links[id] != nil {
                    let due = (now() + Self.closeGrace).nanoseconds
                    let tick = Self.closeGraceTick
                    forceCloses.append((ConduitInstant(nanoseconds: (due / tick + 1) * tick), id))
                }
            }
        }
    }

    /// Checks a join's token (and, on a shard, that no other shard admitted it), then admits or refuses.
    private func authorize(_ id: RelayConnectionID, _ request: RelayJoinRequest) {
        let unixTime = wallClock()
        let checked = authority.authorizeToken(request, unixTime: unixTime).flatMap { token -> Result<RelayToken, RelayRefusal> in
            guard let sharedTokens else { return .success(token) }
            return sharedTokens.claim(token.id, expiresAt: token.expiresAt, unixTime: unixTime).map { token }
        }
        switch checked {
        case .success(let token):
            announceTokenUse(token)
            machine.admit(id, grant: token.grant, now: now())
        case .failure(let refusal):
            machine.refuse(id, refusal, now: now())
        }
    }

    /// Arms the one timer for the machine's next timeout (peer-list flushes, vanish checks,
    /// invitation expiry) or the next forced close, whichever comes first.
    private func rearmTimer() {
        guard !isShutDown else { return }
        // In place: `machine.nextTimeout()` on the actor's stored machine copied the whole machine
        // (every table retained and released) after every batch, for a call the optimizer could
        // not prove left it unchanged.
        var due = { (machine: inout RelayMachine) in machine.nextTimeout() }(&machine)
        if let close = forceCloses.first?.due { due = due.map { min($0, close) } ?? close }
        guard let due else { return }
        timer.arm(at: due, on: clock) { [weak self] generation in await self?.timerFired(generation) }
    }

    private func timerFired(_ generation: UInt64) {
        guard timer.claim(generation) else { return }
        let current = now()
        // The timer also fires for forced closes; the machine only when its own time came.
        if let due = machine.nextTimeout(), due <= current { machine.handleTimeout(now: current) }
        while let first = forceCloses.first, first.due <= current {
            forceCloses.removeFirst()
            if let link = links[first.id]?.link {
                Task { await self.forceClose(first.id, link) }
            }
        }
        runActions()
    }
}

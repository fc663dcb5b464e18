import ConduitCore
import ConduitDriver

/// Runs a `CallMachine` over a real link with a real clock on the shared driver: just enough for
/// the suite's call-level cases, independent of the `Conduit` runtime so a transport can be
/// checked alone. Keeps every event, for the cases to wait on.
actor LinkDriver: SansIODriverHost {
    var driver: SansIODriver<CallMachine>
    private nonisolated let executor: DriverExecutor
    private(set) var events: [CallEvent] = []
    private var waiters: [(id: Int, condition: @Sendable ([CallEvent]) -> Bool, continuation: CheckedContinuation<Bool, Never>)] = []
    private var nextWaiterID = 0

    init(peer: PeerID, link: any TransportLink) {
        executor = DriverExecutor(for: link)
        let machine = CallMachine(localPeer: peer, configuration: CallConfiguration(fragmentSize: link.capabilities.fragmentSize, rateLimit: .unlimited))
        driver = SansIODriver(machine: machine, link: link, clock: SystemMonotonicClock())
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.unownedExecutor }

    var machine: CallMachine { driver.machine }

    func start() { startDriver() }

    /// Returns once what the machine had ready is written.
    func flush() async { await waitUntilPumpIdle() }

    func handle(_ event: CallEvent) {
        events.append(event)
        let snapshot = events
        waiters.removeAll { waiter in
            guard waiter.condition(snapshot) else { return false }
            waiter.continuation.resume(returning: true)
            return true
        }
    }

    /// Waits until `condition` holds for the events so far; false once `timeout` passes with no new
    /// event. A wait measured from its start failed under ThreadSanitizer in CI: on a slow machine
    /// a call through 10 % loss was still delivering, steadily, when a fixed 20 s ran out. A stall
    /// still fails after `timeout`, and `limit` bounds a wait that trickles on.
    func wait(
        timeout: Duration = .seconds(20),
        limit: Duration = .seconds(300),
        until condition: @escaping @Sendable ([CallEvent]) -> Bool
    ) async -> Bool {
        if condition(events) { return true }
        nextWaiterID += 1
        let id = nextWaiterID
        let timer = Task {
            let clock = ContinuousClock()
            let end = clock.now.advanced(by: limit)
            var seen = self.events.count
            while !Task.isCancelled {
                try? await Task.sleep(for: timeout)
                let count = self.events.count
                if count == seen || clock.now >= end { break }
                seen = count
            }
            if !Task.isCancelled { self.expire(id) }
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { waiters.append((id, condition, $0)) }
    }

    /// Ends one waiter whose time ran out, with whatever its condition says now.
    private func expire(_ id: Int) {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return }
        let waiter = waiters.remove(at: index)
        waiter.continuation.resume(returning: waiter.condition(events))
    }

    /// Runs `body` on the machine at now, then hands its events out and flushes what it queued.
    func perform<R: Sendable>(_ body: (inout CallMachine, ConduitInstant) -> R) async -> R {
        let current = now()
        let result = body(&driver.machine, current)
        machineEnqueued()
        await flush()
        return result
    }

    func stop() async {
        // A call that ended closes its link once its goodbye is out; otherwise close it now.
        if driver.machine.isEnded { await waitUntilLinkClosed() } else { await closeLink() }
    }
}

import ConduitCore

/// Runs a `CallMachine` over a real link with a real clock: just enough driver for the suite's
/// call-level cases, independent of the `Conduit` runtime so a transport can be checked alone.
actor LinkDriver {
    private(set) var machine: CallMachine
    private let link: any TransportLink
    private let origin = ContinuousClock.now
    private(set) var events: [CallEvent] = []
    private var waiters: [(id: Int, condition: @Sendable ([CallEvent]) -> Bool, continuation: CheckedContinuation<Bool, Never>)] = []
    private var nextWaiterID = 0
    private var tasks: [Task<Void, Never>] = []

    init(peer: PeerID, link: any TransportLink) {
        self.link = link
        machine = CallMachine(localPeer: peer, configuration: CallConfiguration(fragmentSize: link.capabilities.fragmentSize, rateLimit: .unlimited))
    }

    func now() -> ConduitInstant {
        ConduitInstant(nanoseconds: UInt64(max(0, (ContinuousClock.now - origin).nanosecondsClamped)))
    }

    func start() {
        tasks.append(Task { await self.readLoop() })
        tasks.append(Task { await self.tick() })
    }

    private func readLoop() async {
        while let batch = try? await link.read() {
            machine.handle(batch: batch, now: now())
            collect()
            await flush()
        }
        machine.linkClosed()
        collect()
    }

    /// Keeps timers honest without a scheduler: the suite's traffic is small and unpaced.
    private func tick() async {
        while !Task.isCancelled, !machine.isEnded {
            machine.handleTimeout(now: now())
            await flush()
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    func flush() async {
        while true {
            var batch = DatagramBatch()
            machine.pollTransmit(now: now(), into: &batch)
            collect()
            guard !batch.isEmpty else { return }
            do { try await link.write(batch) } catch { return }
        }
    }

    private func collect() {
        while let event = machine.pollEvent() { events.append(event) }
        let snapshot = events
        waiters.removeAll { waiter in
            guard waiter.condition(snapshot) else { return false }
            waiter.continuation.resume(returning: true)
            return true
        }
    }

    /// Waits until `condition` holds for the events so far; false after `timeout`.
    func wait(timeout: Duration = .seconds(20), until condition: @escaping @Sendable ([CallEvent]) -> Bool) async -> Bool {
        if condition(events) { return true }
        nextWaiterID += 1
        let id = nextWaiterID
        let timer = Task {
            try? await Task.sleep(for: timeout)
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

    func perform<R: Sendable>(_ body: (inout CallMachine, ConduitInstant) -> R) async -> R {
        let result = body(&machine, now())
        collect()
        await flush()
        return result
    }

    func stop() async {
        for task in tasks { task.cancel() }
        await link.close()
    }
}

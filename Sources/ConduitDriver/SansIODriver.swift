public import ConduitCore

/// One `SansIOMachine` over one `TransportLink`: the state of the one driver every engine
/// shares (the call, the conference, the conformance suite's driver). The loops themselves are in
/// ``SansIODriverHost``'s extension and run on the host actor, which owns this value.
///
/// What it does: a read loop (link → machine, a batch per hop, waiting while the host holds
/// deliveries the app has no room for), a pump (machine → link, polled into one reused batch),
/// ONE deadline timer on the injected clock (re-armed before every write that may block, so
/// timeouts such as `tooLongQueuedData` fire while the link refuses writes), a grace period after a
/// failed write (the peer's goodbye may still be waiting to be read), and close and drain (the link
/// closes once the machine ended and what it queued is out). No periodic tick.
public struct SansIODriver<Machine: SansIOMachine> {
    /// The machine; the host calls its operations in place (`driver.machine.enqueue(...)`).
    public var machine: Machine
    /// The link the machine runs over.
    public let link: any TransportLink
    /// Where `now` comes from and where the timer sleeps.
    public let clock: any ConduitClock
    /// How long, after a write failed, the reader has to drain what the peer sent before it closed
    /// (its goodbye) before the machine is told the link is gone.
    public var writeFailureGrace: Duration
    /// Bytes a pump round hands to one write, at most. The next poll, and so a high-priority
    /// message that arrives meanwhile, waits until the link has taken the whole batch: on
    /// `sctp+udp://` with a full send buffer, that is until the peer acknowledged as much. 64 KiB
    /// (one frame of the largest size) keeps that wait short; 256 KiB, the earlier default, gave a
    /// 1 KiB ping under bulk load a p99 of 6.9-13 ms there between two processes (now 4.2-6.0;
    /// 3.5-4.4 in one), and cost throughput too (`conduit bench`, 1 KiB and 64 KiB messages: 42
    /// and 63 MB/s on sctp+udp://, 110 and 127 on udp://; now 55, 74, 135 and 188).
    public var maxBytesPerWrite: Int
    /// Datagram bytes written to and read from the link, counted once per batch (for metrics).
    public internal(set) var linkBytesSent = 0
    /// Datagram bytes read from the link.
    public internal(set) var linkBytesReceived = 0
    /// Set once the link is closed: the loops are over and the timer is off.
    public internal(set) var linkIsClosed = false

    /// The pump is in a write (the link has not taken its batch yet).
    public internal(set) var isWriting = false
    var timer = DeadlineTimer()
    let wakeups: AsyncStream<Void>
    let wakeSink: AsyncStream<Void>.Continuation
    var tasks: [Task<Void, Never>] = []
    var closedWaiters: [CheckedContinuation<Void, Never>] = []
    var idleWaiters: [CheckedContinuation<Void, Never>] = []

    /// A driver for `machine` over `link`, on `clock`.
    public init(
        machine: Machine, link: any TransportLink, clock: any ConduitClock,
        writeFailureGrace: Duration = .seconds(1), maxBytesPerWrite: Int = 64 * 1024
    ) {
        self.machine = machine
        self.link = link
        self.clock = clock
        self.writeFailureGrace = writeFailureGrace
        self.maxBytesPerWrite = maxBytesPerWrite
        (wakeups, wakeSink) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }
}

/// The actor that owns a ``SansIODriver`` and adapts its machine's events to what its caller sees
/// (API objects, a test's event list). Events are handed to ``handle(_:)`` synchronously on the
/// actor, as the machine produces them. An adopter runs on the link's executor by returning a
/// ``DriverExecutor``'s `unownedExecutor` as its own.
public protocol SansIODriverHost: Actor {
    /// The machine the driver runs.
    associatedtype Machine: SansIOMachine
    /// The driver's state, owned by the host.
    var driver: SansIODriver<Machine> { get set }
    /// One event from the machine.
    func handle(_ event: Machine.Event)
    /// Suspends the read loop while deliveries wait for room in the app (receive backpressure).
    /// Default: returns at once.
    func waitForInboundRoom() async
    /// After every pump round (export metrics here). Default: nothing.
    func pumpRoundEnded()
    /// Once, before the link closes (final metrics, the end log). Default: nothing.
    func linkWillClose()
    /// Once, after the link closed (forget what the app held). Default: nothing.
    func linkDidClose()
}

extension SansIODriverHost {
    public func waitForInboundRoom() async {}
    public func pumpRoundEnded() {}
    public func linkWillClose() {}
    public func linkDidClose() {}

    /// Now, on the driver's clock.
    public func now() -> ConduitInstant { driver.clock.now() }

    /// Starts the read loop and the pump, and runs a first pump round (a hello, say). Call once.
    public func startDriver() {
        guard driver.tasks.isEmpty else { return }
        driver.tasks = [Task { await self.readLoop() }, Task { await self.pumpLoop() }]
        wakePump()
    }

    /// Asks the pump for a round (coalesced: many wakes before it runs make one round).
    public func wakePump() { driver.wakeSink.yield() }

    /// Hands every waiting event to ``handle(_:)``.
    public func dispatchEvents() {
        while let event = driver.machine.pollEvent() { handle(event) }
    }

    /// After an operation on the machine: its events out, a pump round asked for.
    public func machineChanged() {
        dispatchEvents()
        wakePump()
    }

    /// After an enqueue: as ``machineChanged()``, and the timer re-armed when the send made a new
    /// queue head (its queue-delay deadline must hold even while the pump is blocked in a write).
    public func machineEnqueued() {
        machineChanged()
        if driver.machine.takeQueueHeadAdded() { rearmTimer() }
    }

    /// Suspends until the link is closed (after the machine ended and its last frames went out).
    public func waitUntilLinkClosed() async {
        guard !driver.linkIsClosed else { return }
        await withCheckedContinuation { driver.closedWaiters.append($0) }
    }

    /// Suspends until a pump round found nothing more to send (everything the machine had ready
    /// was written), or the link closed: a flush, for drivers that want writes done before they
    /// go on.
    public func waitUntilPumpIdle() async {
        guard !driver.linkIsClosed else { return }
        wakePump()
        await withCheckedContinuation { driver.idleWaiters.append($0) }
    }

    private func resumeIdleWaiters() {
        guard !driver.idleWaiters.isEmpty else { return }
        let waiters = driver.idleWaiters
        driver.idleWaiters.removeAll()
        for waiter in waiters { waiter.resume() }
    }

    /// Gives up on the link now: the machine hears it closed, then the link closes.
    public func abandonLink() async {
        driver.machine.linkClosed()
        dispatchEvents()
        await closeLink()
    }

    // MARK: Loops

    private func readLoop() async {
        let link = driver.link
        while true {
            let batch: DatagramBatch?
            do { batch = try await link.read() } catch { batch = nil }
            guard let batch else { break }
            driver.linkBytesReceived &+= batch.byteCount
            let current = now()
            driver.machine.handle(batch: batch, now: current)
            machineChanged()
            await waitForInboundRoom()
        }
        driver.machine.linkClosed()
        machineChanged()
    }

    private func pumpLoop() async {
        let link = driver.link
        let maxBytes = driver.maxBytesPerWrite
        // One batch, reused: links copy what they keep (a link that shares it, as loopback does,
        // makes the next burst copy on write instead).
        var batch = DatagramBatch(reservingBytes: maxBytes + 2 * 1_500, datagrams: 256)
        for await _ in driver.wakeups {
            while true {
                batch.removeAll()
                let current = now()
                _ = driver.machine.pollTransmit(now: current, into: &batch, maxBytes: maxBytes)
                dispatchEvents()
                if batch.isEmpty || driver.linkIsClosed { break }
                // Before a write that may block: sending may have moved queue heads, and their
                // timeouts must fire while the write waits.
                driver.isWriting = true
                rearmTimer()
                do { try await link.write(batch) } catch {
                    driver.isWriting = false
                    writeFailed()
                    break
                }
                driver.isWriting = false
                driver.linkBytesSent &+= batch.byteCount
            }
            pumpRoundEnded()
            resumeIdleWaiters()
            if driver.machine.isEnded {
                await closeLink()
                break
            }
            rearmTimer()
        }
    }

    // MARK: The timer

    /// Arms the one timer for the machine's next deadline: its timeout, and (unless the pump is
    /// in a write, which it will finish first) its next paced transmission.
    public func rearmTimer() {
        guard !driver.linkIsClosed else { return }
        let current = now()
        let (transmit, timeout) = driver.machine.deadlines(now: current)
        var due = timeout
        if !driver.isWriting, let transmit {
            // Already due (time passed since the last poll): go round again rather than sleep.
            if transmit > current { due = due.map { min($0, transmit) } ?? transmit } else { wakePump() }
        }
        // Armed for then or earlier already: nothing to do (and no closure to make, per send).
        guard let due, driver.timer.deadline.map({ due < $0 }) ?? true else { return }
        let clock = driver.clock
        driver.timer.arm(at: due, on: clock) { [weak self] generation in await self?.timerFired(generation) }
    }

    private func timerFired(_ generation: UInt64) {
        guard driver.timer.claim(generation), !driver.linkIsClosed else { return }
        let current = now()
        driver.machine.handleTimeout(now: current)
        machineChanged()
        rearmTimer()
    }

    // MARK: Ending

    /// Writing failed: the peer closed its end. Its goodbye may still be waiting in our inbox,
    /// so the reader gets to drain it first (the machine then ends as the peer's hang-up, not as
    /// a broken transport); if it has not within the grace period, the link is gone.
    private func writeFailed() {
        guard !driver.machine.isEnded else { return }
        driver.clock.after(driver.writeFailureGrace) { [weak self] in await self?.endIfStillOpen() }
    }

    private func endIfStillOpen() {
        guard !driver.machine.isEnded else { return }
        driver.machine.linkClosed()
        machineChanged()
    }

    /// Closes the link (once): the timer stops, the host hears ``linkWillClose()`` before and
    /// ``linkDidClose()`` after, and whoever waits in ``waitUntilLinkClosed()`` resumes.
    public func closeLink() async {
        guard !driver.linkIsClosed else { return }
        driver.linkIsClosed = true
        driver.timer.cancel()
        linkWillClose()
        await driver.link.close()
        driver.wakeSink.finish()
        linkDidClose()
        resumeIdleWaiters()
        let waiters = driver.closedWaiters
        driver.closedWaiters.removeAll()
        for waiter in waiters { waiter.resume() }
    }
}

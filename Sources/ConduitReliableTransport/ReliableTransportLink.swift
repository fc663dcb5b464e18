public import ConduitCore
public import ConduitARQ
public import ConduitDriver
public import CoreMetrics
public import Logging
import Synchronization

/// The core's reliability engine (`ARQEngine`) driven over a link that loses, duplicates and
/// reorders datagrams (raw UDP, impaired loopback), presenting a reliable, ordered
/// `TransportLink` to the call above it: "the core supplies what a transport lacks".
///
/// One actor per link. Three tasks feed it, each one hop per batch, never per packet: the reader
/// (inner link → engine), the pump (engine → inner link) and one `DeadlineTimer` on the injected
/// clock for the engine's deadlines.
///
/// It is not a `SansIODriverHost`: it is a link itself, so the engine's output goes to an outer
/// reader that pulls deliveries and an outer writer that pushes frames (with backpressure and a
/// barrier before a goodbye), not to an adapter as events; a failed write ends the link at once
/// (there is no goodbye below it to wait for); and closing drains acknowledgements rather than
/// waiting for a machine to end. It shares the driver's clock, timer and executor.
/// Frames go on the channel their writer tagged them with (`FrameTag`: one per data session, with
/// the session type's delivery), so a lossy unreliable session never stalls a reliable one.
///
/// When the inner link has a `TransportLink.preferredExecutor` (a UDP link's event loop), the
/// actor runs on it: datagrams go from socket to engine and acknowledgements back without a
/// thread hop, and a call driving this link on the same executor reaches it without one either.
public actor ReliableTransportLink: TransportLink {
    /// What the link offers above the engine: reliable and ordered, with partial reliability.
    public nonisolated let capabilities: TransportCapabilities
    public nonisolated let remoteDescription: String
    /// The engine's options: keepalive, idle timeout, receive window, acknowledgement policy.
    public nonisolated let configuration: ARQEngine.Configuration

    private let inner: any TransportLink
    public nonisolated let preferredExecutor: (any SerialExecutor)?
    /// The inner link's executor, or a default one when it has none.
    private nonisolated let executor: DriverExecutor
    private var engine: ARQEngine
    /// The engine's ``ARQEngine/currentFrameRoom`` after its last pump round, for
    /// ``currentMTU`` (read by the call on its own executor).
    private nonisolated let frameRoom: Atomic<Int>
    /// Where `now` comes from and where the timer and the drain limits sleep.
    private let clock: any ConduitClock

    private var reader: CheckedContinuation<Void, Never>?
    private var writers: [CheckedContinuation<Void, Never>] = []
    private let wakeups: AsyncStream<Void>
    private let wakeSink: AsyncStream<Void>.Continuation
    private var timer = DeadlineTimer()
    private var tasks: [Task<Void, Never>] = []
    private var drainWaiters: [CheckedContinuation<Void, Never>] = []
    /// The timers watching a drain for progress, cancelled when it ends.
    private var drainWatchdogs: [Task<Void, Never>] = []
    /// Who waits in ``waitForAcknowledgement(channel:timeout:)``.
    private var acknowledgementWaiters: [AcknowledgementWaiter] = []
    private var nextAcknowledgementWaiter = 0
    /// A wait on every channel ended with frames unacknowledged: the app was told and gave up on
    /// them (a hang-up or leave whose deadline passed), so the goodbye and the close that follow
    /// do not wait for them again.
    private var gaveUpOnAcknowledgement = false
    /// Set when the inner link ended (the peer closed it, or it failed) or idled out.
    private var innerEnded = false
    private var closeReason: String?
    private var isClosed = false
    private var dueInARow = 0
    /// Reused for every write, and grown by the first ones: nothing is reserved up front, so a
    /// link that never sends much (a relay's flood of links that never join) costs no 96 KB buffer.
    private var outputBatch = DatagramBatch()
    /// Lifecycle logs and the engine's counters as metrics.
    private var observer: ARQEngineObserver

    /// Frames handed to one `read`, at most: everything ready, which the receive window bounds
    /// (the ready frames go over as one batch, without a copy, when they all go).
    static let maxFramesPerRead = Int.max

    /// Wraps `inner`. Logs its end through `logger` and counts retransmissions, losses and drops
    /// through `metricsFactory` with the dimension `transport` (both silent by default). Runs on
    /// `clock` (nil: the system's monotonic clock).
    public init(
        wrapping inner: any TransportLink,
        configuration: ARQEngine.Configuration,
        logger: Logger = Logger(label: "conduit", factory: { _ in SwiftLogNoOpLogHandler() }),
        metricsFactory: any MetricsFactory = NOOPMetricsHandler.instance,
        transport: String = "unknown",
        clock: (any ConduitClock)? = nil
    ) {
        self.observer = ARQEngineObserver(logger: logger, metricsFactory: metricsFactory, transport: transport, remote: inner.remoteDescription)
        var configuration = configuration
        configuration.maxDatagramSize = min(inner.capabilities.mtu, 65_535)
        self.inner = inner
        self.preferredExecutor = inner.preferredExecutor
        self.executor = DriverExecutor(for: inner)
        let clock = clock ?? SystemMonotonicClock()
        self.clock = clock
        self.configuration = configuration
        self.remoteDescription = inner.remoteDescription
        // Frames up to maxFrameBytes go, in parts when a packet cannot hold them; what fits one
        // base-size packet whole is the mtu the call layer cuts fragments to.
        self.capabilities = TransportCapabilities(
            isReliable: true, isOrdered: true, supportsPartialReliability: true,
            maxDatagramSize: configuration.maxFrameBytes, mtu: configuration.maxFramePayload
        )
        self.engine = ARQEngine(configuration: configuration, now: clock.now(), crc32c: .hardware)
        frameRoom = Atomic(configuration.maxFramePayload)
        (wakeups, wakeSink) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// The largest frame that goes whole in one packet of the size the path search found (the
    /// base packet's room until it found more; back to it after a fall back).
    public nonisolated var currentMTU: Int { frameRoom.load(ordering: .relaxed) }

    public nonisolated var unownedExecutor: UnownedSerialExecutor {
        executor.unownedExecutor
    }

    /// Wraps `link` unless it is already reliable and ordered; `logger`, `metricsFactory` and
    /// `transport` and `clock` as in ``init(wrapping:configuration:logger:metricsFactory:transport:clock:)``.
    public static func wrapIfNeeded(
        _ link: any TransportLink,
        configuration: ARQEngine.Configuration,
        logger: Logger = Logger(label: "conduit", factory: { _ in SwiftLogNoOpLogHandler() }),
        metricsFactory: any MetricsFactory = NOOPMetricsHandler.instance,
        transport: String = "unknown", clock: (any ConduitClock)? = nil
    ) async -> any TransportLink {
        guard !link.capabilities.isReliable || !link.capabilities.isOrdered else { return link }
        let wrapped = ReliableTransportLink(
            wrapping: link, configuration: configuration, logger: logger, metricsFactory: metricsFactory, transport: transport, clock: clock
        )
        await wrapped.start()
        return wrapped
    }

    /// Starts the reader, pump and timer. Call once, before use.
    public func start() {
        guard tasks.isEmpty else { return }
        tasks.append(Task { await self.readLoop() })
        tasks.append(Task { await self.pumpLoop() })
        scheduleTimer()
    }

    private func now() -> ConduitInstant { clock.now() }

    /// Frames written that the peer had not acknowledged when the link closed or ended (0 while
    /// it is open): counted in metrics and logged, never dropped unseen.
    public private(set) var framesUnacknowledgedAtEnd = 0

    /// The engine's counters and congestion state.
    public var statistics: ARQEngine.Statistics { engine.statistics }

    private func exportMetrics() {
        observer.export(engine.statistics, pacingRate: engine.pacingRateBytesPerSecond, mtu: engine.currentMaxDatagramSize)
    }

    /// The engine's view of the path: RTT, congestion window, pacing, losses, packet size.
    public func linkStatistics() -> LinkStatistics? {
        let counts = engine.statistics
        return LinkStatistics(
            smoothedRTT: counts.smoothedRtt, minimumRTT: counts.minRtt, rttVariation: counts.rttVariation,
            congestionWindow: counts.congestionWindow, bytesInFlight: counts.bytesInFlight, pacingRate: engine.pacingRateBytesPerSecond,
            packetsSent: counts.packetsSent, packetsReceived: counts.packetsReceived, packetsLost: counts.packetsLost,
            packetsRetransmitted: counts.packetsRetransmitted, duplicatesReceived: counts.duplicatePacketsSuppressed,
            mtu: engine.currentMaxDatagramSize
        )
    }

    // MARK: TransportLink

    /// Hands the batch's frames to the engine, which sends, retransmits and paces them. Suspends while the send window is full; throws `connectionClosed` once the link closed or the peer went idle.
    public func write(_ batch: DatagramBatch) async throws(ConduitError) {
        // One clock reading per batch (until the write has to wait): frames handed over together
        // are queued at the same instant.
        var current = now()
        for index in 0..<batch.count {
            let tag = batch.tag(at: index)
            if tag.isBarrier {
                // Channels are independent, so a goodbye could overtake the data written before
                // it and end the peer's call early. It waits until everything before it was
                // acknowledged (or the link ended): what the call sent before hanging up arrives.
                await waitUntilQuiescent(limit: Self.goodbyeDrainLimit)
                current = now()
            }
            while true {
                if let failure = writeFailure { throw failure }
                let result = engine.send(datagram: index, of: batch, channel: tag.channel, delivery: tag.delivery, now: current)
                switch result {
                case .queued:
                    break
                case .queueFull:
                    // Resumed once sending or expiry has taken frames off the queue (never by a
                    // pump round that sent nothing, which would spin while the peer is blocked).
                    wake()
                    await withCheckedContinuation { writers.append($0) }
                    current = now()
                    continue
                case .frameTooLarge(let limit):
                    throw ConduitError(.protocolViolation, "a \(batch.range(of: index).count)-byte frame exceeds the reliable link's \(limit)-byte limit")
                case .tooManyChannels:
                    throw ConduitError(.protocolViolation, "more than \(configuration.maxChannels) channels on the link to \(remoteDescription)")
                }
                break
            }
        }
        wake()
    }

    private var writeFailure: ConduitError? {
        guard isClosed || innerEnded else { return nil }
        return ConduitError(.connectionClosed, "the link to \(remoteDescription) is closed\(closeReason.map { " (\($0))" } ?? "")")
    }

    /// Frames the peer sent, in delivery order; nil once the link is closed and drained.
    public func read() async throws(ConduitError) -> DatagramBatch? {
        while true {
            var batch = DatagramBatch()
            if engine.pollDeliveries(now: now(), into: &batch, maxFrames: Self.maxFramesPerRead) > 0 {
                // Reading frees receive window: the peer may need to hear about it.
                wake()
                return batch
            }
            if isClosed || innerEnded { return nil }
            await withCheckedContinuation { reader = $0 }
        }
    }

    /// Returns once every frame written so far is acknowledged or given up on, the link ended,
    /// or `limit` passed without one more frame acknowledged (a peer that stays alive but stops
    /// reading never acknowledges; one that reads slowly, like a relay pacing a room, keeps the
    /// wait going for as long as it makes progress).
    private func waitUntilQuiescent(limit: Duration) async {
        guard !isClosed, !innerEnded, !engine.isQuiescent, !gaveUpOnAcknowledgement else { return }
        wake()
        let watchdog = clock.after(limit) { [weak self] in await self?.drainWatch(limit: limit, outstanding: .max) }
        drainWatchdogs.append(watchdog)
        await withCheckedContinuation { drainWaiters.append($0) }
    }

    /// Every `limit` while a drain waits: waits on if frames were acknowledged since the last
    /// look, lets the waiters go if none were.
    private func drainWatch(limit: Duration, outstanding before: Int) {
        guard !drainWaiters.isEmpty else { return }
        let now = engine.framesOutstanding
        guard now < before else { return releaseDrainWaiters() }
        drainWatchdogs.append(clock.after(limit) { [weak self] in await self?.drainWatch(limit: limit, outstanding: now) })
    }

    private struct AcknowledgementWaiter {
        let id: Int
        let channel: UInt32?
        let mark: UInt32
        let continuation: CheckedContinuation<LinkAcknowledgement, Never>
        let expiry: Task<Void, Never>
    }

    /// Waits until the peer acknowledged every frame written so far on `channel` (every channel
    /// when nil), the link ended, or `timeout` passed on the link's clock; then says which frames
    /// are still unacknowledged (the engine still holds them, so their heads are known).
    public func waitForAcknowledgement(channel: UInt32?, timeout: Duration) async -> LinkAcknowledgement {
        let mark = channel.map { engine.sendMark(onChannel: $0) } ?? 0
        if let settled = settledAcknowledgement(channel: channel, mark: mark) { return settled }
        wake()
        let id = nextAcknowledgementWaiter
        nextAcknowledgementWaiter += 1
        let expiry = clock.after(timeout) { [weak self] in await self?.acknowledgementWaitExpired(id) }
        return await withCheckedContinuation { continuation in
            acknowledgementWaiters.append(.init(id: id, channel: channel, mark: mark, continuation: continuation, expiry: expiry))
        }
    }

    /// The answer if the wait is over (everything acknowledged, or the link ended), else nil.
    private func settledAcknowledgement(channel: UInt32?, mark: UInt32) -> LinkAcknowledgement? {
        let unresolved = channel.map { engine.unresolvedFrames(onChannel: $0, below: mark) } ?? engine.framesOutstanding
        if unresolved == 0 { return .complete }
        return isClosed || innerEnded ? acknowledgement(channel: channel, mark: mark) : nil
    }

    private func acknowledgement(channel: UInt32?, mark: UInt32) -> LinkAcknowledgement {
        let heads = engine.unresolvedFrameHeads(onChannel: channel, below: channel == nil ? nil : mark, length: LinkAcknowledgement.headLength)
        return LinkAcknowledgement(unacknowledgedFrames: heads.count, unacknowledgedHeads: heads)
    }

    /// After acknowledgements arrived or the link ended: lets go the waits that are over.
    private func settleAcknowledgementWaiters() {
        guard !acknowledgementWaiters.isEmpty else { return }
        acknowledgementWaiters.removeAll { waiter in
            guard let answer = settledAcknowledgement(channel: waiter.channel, mark: waiter.mark) else { return false }
            waiter.expiry.cancel()
            waiter.continuation.resume(returning: answer)
            return true
        }
    }

    private func acknowledgementWaitExpired(_ id: Int) {
        guard let index = acknowledgementWaiters.firstIndex(where: { $0.id == id }) else { return }
        let waiter = acknowledgementWaiters.remove(at: index)
        let answer = settledAcknowledgement(channel: waiter.channel, mark: waiter.mark) ?? acknowledgement(channel: waiter.channel, mark: waiter.mark)
        if waiter.channel == nil, !answer.isComplete {
            // A goodbye already waiting for these frames stops waiting too.
            gaveUpOnAcknowledgement = true
            releaseDrainWaiters()
        }
        waiter.continuation.resume(returning: answer)
    }

    /// How long a goodbye waits, without one more frame acknowledged, for the frames written before it.
    static let goodbyeDrainLimit = Duration.seconds(10)

    /// Closes gracefully: what was written is delivered and acknowledged first (given up on after
    /// `drainTimeout` without progress), then the inner link closes and the peer reads nil.
    public func close() async {
        await close(drainTimeout: .seconds(2))
    }

    /// Closes gracefully: waits for what was written to be acknowledged while the peer keeps
    /// acknowledging (up to `drainTimeout` without one more frame acknowledged), then closes the inner link.
    public func close(drainTimeout: Duration) async {
        guard !isClosed else { return }
        await waitUntilQuiescent(limit: drainTimeout)
        guard !isClosed else { return }
        isClosed = true
        // Whether the peer ended the link first (then that end was logged): decided before the
        // await, during which the read loop sees this side's own close end the inner link.
        let endedByPeer = innerEnded
        timer.cancel()
        wakeSink.finish()
        framesUnacknowledgedAtEnd = engine.framesOutstanding
        observer.framesUnacknowledgedAtEnd(framesUnacknowledgedAtEnd, told: gaveUpOnAcknowledgement)
        if !endedByPeer { await sendDelayedAcknowledgement() }
        await inner.close()
        exportMetrics()
        if !endedByPeer { observer.logEnd(engine.statistics, reason: nil) }
        resumeAll()
    }

    /// The peer's last frames may wait on the ACK delay timer, which closing cancels: they are
    /// acknowledged now, in one last packet, so the peer's close does not count them as lost.
    private func sendDelayedAcknowledgement() async {
        guard engine.hasDelayedAcknowledgement else { return }
        engine.acknowledgeNow()
        var last = DatagramBatch()
        guard engine.pollTransmit(now: now(), into: &last, maxDatagrams: 1) > 0 else { return }
        try? await inner.write(last)
    }

    // MARK: Loops

    private func readLoop() async {
        while true {
            let batch: DatagramBatch?
            do { batch = try await inner.read() } catch { batch = nil }
            guard let batch else { break }
            engine.handle(batch: batch, now: now())
            if engine.hasPendingDeliveries { resumeReader() }
            wake()
        }
        endInner("the peer closed the link")
    }

    private func pumpLoop() async {
        for await _ in wakeups {
            while !isClosed, !innerEnded {
                outputBatch.removeAll()
                guard engine.pollTransmit(now: now(), into: &outputBatch) > 0 else { break }
                let batch = outputBatch
                resumeWriters()
                do { try await inner.write(batch) } catch {
                    endInner("writing failed: \(error)")
                    break
                }
            }
            if engine.isQuiescent { releaseDrainWaiters() }
            frameRoom.store(engine.currentFrameRoom, ordering: .relaxed)
            settleAcknowledgementWaiters()
            if observer.isCounting { exportMetrics() }
            scheduleTimer()
        }
    }

    private func wake() { wakeSink.yield() }

    /// Arms the timer for the engine's next deadline, unless it is armed for that time or earlier.
    private func scheduleTimer() {
        guard !isClosed, !innerEnded else { return }
        let current = now()
        guard let deadline = engine.nextDeadline(now: current) else { return }
        if deadline <= current, dueInARow < 64 {
            // Already due: let time pass in the engine now (loss detection, probes, ACK delay),
            // then the pump sends what that decided.
            dueInARow += 1
            runTimeouts(now: current)
            return
        }
        // A deadline that stays due after its timeouts ran would spin the pump; sleep a moment.
        let wakeAt = dueInARow >= 64 ? current + .milliseconds(1) : deadline
        dueInARow = 0
        timer.arm(at: wakeAt, on: clock) { [weak self] generation in await self?.timerFired(generation: generation) }
    }

    private func timerFired(generation: UInt64) {
        // A timer cancelled after its sleep ended may still get here: only the armed one counts.
        guard timer.claim(generation), !isClosed, !innerEnded else { return }
        runTimeouts(now: now())
        scheduleTimer()
    }

    private func runTimeouts(now current: ConduitInstant) {
        engine.handleTimeout(now: current)
        if engine.isIdleTimedOut(now: current) {
            endInner("nothing heard from the peer for \(configuration.idleTimeout.map { "\($0)" } ?? "too long")")
            return
        }
        if engine.hasPendingDeliveries { resumeReader() }
        resumeWriters()  // expired frames may have left the send queue
        wake()
    }

    /// The link ended under us (the peer closed it, writing failed, or it idled out): wake every
    /// waiter, stop the pump and let the inner link go, so nothing outlives it.
    private func endInner(_ reason: String) {
        guard !innerEnded else { return }
        innerEnded = true
        if !isClosed {
            closeReason = reason
            framesUnacknowledgedAtEnd = engine.framesOutstanding
            observer.framesUnacknowledgedAtEnd(framesUnacknowledgedAtEnd, told: gaveUpOnAcknowledgement)
        }
        exportMetrics()
        if !isClosed { observer.logEnd(engine.statistics, reason: reason) }
        timer.cancel()
        wakeSink.finish()
        let inner = self.inner
        Task { await inner.close() }
        resumeAll()
    }

    private func resumeReader() {
        reader?.resume()
        reader = nil
    }

    private func resumeWriters() {
        let waiting = writers
        writers.removeAll()
        for writer in waiting { writer.resume() }
    }

    private func releaseDrainWaiters() {
        for watchdog in drainWatchdogs { watchdog.cancel() }
        drainWatchdogs.removeAll()
        let waiting = drainWaiters
        drainWaiters.removeAll()
        for waiter in waiting { waiter.resume() }
    }

    private func resumeAll() {
        resumeReader()
        resumeWriters()
        releaseDrainWaiters()
        settleAcknowledgementWaiters()
    }
}

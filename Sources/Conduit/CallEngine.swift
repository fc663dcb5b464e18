import ConduitCore
import ConduitReliability
import DequeModule
import Logging

/// Drives one `CallMachine` over one `TransportLink`: the I/O half of a call.
///
/// All call state lives in this actor. Two tasks feed it: the reader (link → machine, a batch per
/// hop) and the pump (machine → link, a batch per write). App calls hop in once per operation, not
/// per packet. Time comes from a monotonic clock here and is passed into the machine.
actor CallEngine: OutboundSessionEngine, InboundDelivering {
    private var machine: CallMachine
    private let link: any TransportLink
    private let configuration: ConduitConfiguration
    /// `MonotonicClock` nanoseconds at creation: the machine's time zero.
    private let origin = MonotonicClock.nanoseconds()

    private var outboundSessions: [SessionKey: OutboundDataSession] = [:]
    private var inboundSessions: [SessionKey: InboundDataSession] = [:] {
        didSet { lastReceiving = nil }
    }
    /// The session the last message went to: consecutive messages mostly go to the same one,
    /// and looking it up hashed its key once per message. Forgotten whenever the table changes.
    private var lastReceiving: (key: SessionKey, session: InboundDataSession)?
    /// Deliveries waiting for room in their session (see ``InboundDelivering``).
    var inboundOverflow = InboundOverflow()
    private var sendWaiters: [SessionKey: [CheckedContinuation<Void, Never>]] = [:]

    private let callEventSink = EventQueue<Call.Event>(capacity: 1_024, makeDropped: { .eventsDropped(count: $0) })
    private var connectWaiter: CheckedContinuation<Void, any Error>?
    private var closedWaiters: [CheckedContinuation<Void, Never>] = []
    private var linkIsClosed = false

    private let wakeups: AsyncStream<Void>
    private let wakeSink: AsyncStream<Void>.Continuation
    private var timers: [TimerKind: (task: Task<Void, Never>, deadline: ConduitInstant)] = [:]
    private var tasks: [Task<Void, Never>] = []

    /// Lifecycle logs and metrics (see ``ConduitObservability``).
    private var observer: SessionLayerObserver
    /// Datagram bytes through the link, counted once per batch (for metrics).
    private var linkBytesSent = 0
    private var linkBytesReceived = 0
    private var queueDelayAlerts = 0

    private enum TimerKind {
        /// Wakes the pump when a paced session may release its next frame.
        case transmit
        /// Runs the machine's timeouts (reassembly expiry, queue-delay checks) on its own, so they
        /// fire even while the pump is blocked in a write: that is when `tooLongQueuedData` matters.
        case timeout
    }

    init(localPeer: PeerID, link: any TransportLink, configuration: ConduitConfiguration, observability: ConduitObservability = .disabled, transport: String) {
        self.link = link
        self.configuration = configuration
        var observer = SessionLayerObserver(observability, kind: .call, transport: transport, link: link)
        observer.logger[metadataKey: ConduitObservability.MetadataKey.localPeer] = "\(localPeer)"
        self.observer = observer
        self.machine = CallMachine(localPeer: localPeer, configuration: configuration.callConfiguration(fragmentSize: link.capabilities.fragmentSize))
        (wakeups, wakeSink) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    private func now() -> ConduitInstant {
        ConduitInstant(nanoseconds: MonotonicClock.nanoseconds() &- origin)
    }

    // MARK: Start-up

    /// Starts the reader and pump, and returns the call once both sides said hello.
    func establish(timeout: Duration) async throws(ConduitError) -> Call {
        observer.logger.debug("call handshake started")
        tasks.append(Task { await self.readLoop() })
        tasks.append(Task { await self.pumpLoop() })
        wake()
        let timeoutTask = Task {
            try? await Task.sleep(for: timeout)
            self.failConnect(ConduitError(.timedOut, "the peer did not complete the handshake within \(timeout)"))
        }
        defer { timeoutTask.cancel() }
        do {
            try await withCheckedThrowingContinuation { continuation in
                if machine.isConnected {
                    continuation.resume()
                } else if machine.isEnded {
                    continuation.resume(throwing: ConduitError(.connectionFailed, "the link closed during the handshake"))
                } else {
                    connectWaiter = continuation
                }
            }
        } catch {
            let failure = (error as? ConduitError) ?? ConduitError(.connectionFailed, "\(error)")
            observer.logger.info("call handshake failed", metadata: [ConduitObservability.MetadataKey.reason: "\(failure)"])
            await shutdown()
            throw failure
        }
        guard case .connected(let peer, let supported) = machine.phase else {
            throw ConduitError(.connectionFailed, "the call ended during the handshake")
        }
        return Call(engine: self, localPeer: machine.localPeer, remotePeer: peer, peerSupportsDataSessions: supported, events: callEventSink)
    }

    private func failConnect(_ error: ConduitError) {
        connectWaiter?.resume(throwing: error)
        connectWaiter = nil
    }

    private func shutdown() async {
        machine.linkClosed()
        dispatchEvents()
        await closeLink()
    }

    // MARK: Loops

    private func readLoop() async {
        while true {
            let batch: DatagramBatch?
            do { batch = try await link.read() } catch { batch = nil }
            guard let batch else { break }
            linkBytesReceived &+= batch.byteCount
            machine.handle(batch: batch, now: now())
            dispatchEvents()
            wake()
            await waitUntilDrained()
        }
        machine.linkClosed()
        dispatchEvents()
        wake()
    }

    private func pumpLoop() async {
        // One batch, reused: links copy what they keep (a link that shares it, as loopback does,
        // makes the next burst copy on write instead).
        var batch = DatagramBatch(reservingBytes: 256 * 1024 + 2 * 1_500, datagrams: 256)
        for await _ in wakeups {
            while true {
                batch.removeAll()
                machine.pollTransmit(now: now(), into: &batch, maxBytes: 256 * 1024)
                dispatchEvents()
                if batch.isEmpty || linkIsClosed { break }
                // Before a write that may block: sending may have moved queue heads and switched
                // delay monitors, and their timers must run while the write waits (that is when
                // `tooLongQueuedData` matters).
                scheduleTimers()
                do { try await link.write(batch) } catch {
                    writeFailed()
                    break
                }
                linkBytesSent &+= batch.byteCount
            }
            exportMetrics()
            if machine.isEnded {
                await closeLink()
                break
            }
            scheduleTimers()
        }
    }

    private func wake() { wakeSink.yield() }

    /// Hands the statistics gathered since the last export to the metrics (a batch per pump
    /// round, never per message; nothing at all with the no-op factory).
    private func exportMetrics() {
        guard observer.isCounting else { return }
        observer.export(.init(machine.statistics, linkBytesSent: linkBytesSent, linkBytesReceived: linkBytesReceived, queueDelayAlerts: queueDelayAlerts, eventsDropped: callEventSink.droppedCount))
        if !linkIsClosed { observer.recordQueueDelay(machine.longestQueueingDelay(now: now())) }
    }

    /// Writing failed: the peer closed its end. Its goodbye may still be waiting in our inbox,
    /// so the reader gets to drain it first (the call then ends as the peer's hang-up, not as a
    /// broken transport); if the reader has not finished within a second, the link is gone.
    private func writeFailed() {
        guard !machine.isEnded else { return }
        Task {
            try? await Task.sleep(for: .seconds(1))
            self.endIfStillOpen()
        }
    }

    private func endIfStillOpen() {
        guard !machine.isEnded else { return }
        machine.linkClosed()
        dispatchEvents()
        wake()
    }

    private func scheduleTimers() {
        guard !linkIsClosed else { return }
        let current = now()
        let (transmit, timeout) = machine.deadlines(now: current)
        if let due = transmit {
            // Already due (time passed since the last poll): go round again rather than sleep.
            if due > current { arm(.transmit, at: due) } else { wake() }
        }
        if let due = timeout { arm(.timeout, at: due) }
    }

    /// Arms a timer for `deadline` unless it is already armed for that time or earlier.
    private func arm(_ kind: TimerKind, at deadline: ConduitInstant) {
        if let armed = timers[kind], armed.deadline <= deadline { return }
        timers[kind]?.task.cancel()
        let delay = deadline - now()
        let task = Task {
            try? await Task.sleep(for: delay)
            guard !Task.isCancelled else { return }
            self.fired(kind)
        }
        timers[kind] = (task, deadline)
    }

    private func fired(_ kind: TimerKind) {
        timers[kind] = nil
        switch kind {
        case .transmit: wake()
        case .timeout: timeoutFired()
        }
    }

    private func timeoutFired() {
        machine.handleTimeout(now: now())
        dispatchEvents()
        wake()
        scheduleTimers()
    }

    private func closeLink() async {
        guard !linkIsClosed else { return }
        linkIsClosed = true
        for timer in timers.values { timer.task.cancel() }
        timers.removeAll()
        // Exported before the close's suspension: whoever sees the call ended sees its metrics.
        exportMetrics()
        observer.ended()
        await link.close()
        wakeSink.finish()
        // Sessions hold the engine; forgetting them here breaks the cycle so an ended call is freed.
        // Their final events were dispatched when the machine ended.
        outboundSessions.removeAll()
        inboundSessions.removeAll()
        for waiter in closedWaiters { waiter.resume() }
        closedWaiters.removeAll()
    }

    // MARK: Events

    private func dispatchEvents() {
        while let event = machine.pollEvent() {
            switch event {
            case .connected(let peer, let supported):
                observer.logger[metadataKey: ConduitObservability.MetadataKey.peer] = "\(peer)"
                observer.logger.info("call connected", metadata: ["conduit.peerSupportsDataSessions": "\(supported)"])
                observer.connected()
                callEventSink.yield(.connected(peer: peer, isDataSessionSupported: supported))
                connectWaiter?.resume()
                connectWaiter = nil
            case .disconnected(let reason):
                logEnd(reason)
                failConnect(ConduitError(.connectionFailed, "the call ended during the handshake (\(reason))"))
                callEventSink.yield(.disconnected(reason), essential: true)
                callEventSink.finish()
                for waiters in sendWaiters.values { for waiter in waiters { waiter.resume() } }
                sendWaiters.removeAll()
                wake()
            case .dataSessionIncoming(let key, let type):
                observer.logger.debug("data session incoming", metadata: SessionLayerObserver.metadata(key, type: type))
                callEventSink.yield(.dataSessionIncoming(streamID: key.streamID, subgroup: key.subgroup, type: type))
            case .received(let key, let delivery):
                let session: InboundDataSession
                if let last = lastReceiving, last.key == key {
                    session = last.session
                } else {
                    guard let found = inboundSessions[key] else { continue }
                    lastReceiving = (key, found)
                    session = found
                }
                switch delivery {
                case .message(let bytes, let timestamp): deliver(.message(.init(bytes: bytes, timestamp: timestamp)), to: session)
                case .fragment(let fragment): deliver(.fragment(fragment), to: session)
                }
            case .inboundClosed(let key, let reason):
                guard let session = inboundSessions[key] else { continue }
                observer.logger.debug("inbound data session closed", metadata: SessionLayerObserver.metadata(key).merging([ConduitObservability.MetadataKey.reason: "\(reason)"]) { $1 })
                deliver(.closed(reason), to: session)
            case .outboundClosed(let key, let reason):
                observer.logger.debug("outbound data session closed", metadata: SessionLayerObserver.metadata(key).merging([ConduitObservability.MetadataKey.reason: "\(reason)"]) { $1 })
                if let session = outboundSessions[key] {
                    session.eventSink.yield(.closed(reason))
                    session.eventSink.finish()
                }
                resumeSenders(key)
            case .tooLongQueuedData(let key, let enabled):
                if enabled { queueDelayAlerts += 1 }
                observer.logger.debug("queueing delay \(enabled ? "too long" : "back to normal")", metadata: SessionLayerObserver.metadata(key))
                outboundSessions[key]?.eventSink.yield(.tooLongQueuedData(enabled: enabled))
            case .sendQueueHasRoom(let key):
                resumeSenders(key)
            }
        }
    }

    private func resumeSenders(_ key: SessionKey) {
        guard let waiters = sendWaiters.removeValue(forKey: key) else { return }
        for waiter in waiters { waiter.resume() }
    }

    // MARK: App operations

    func makeOutbound(_ key: SessionKey, type: SessionType) throws(ConduitError) -> OutboundDataSession {
        let reason = machine.makeOutbound(key, type: type, now: now())
        guard reason == .none else {
            throw .creationFailed(reason, Self.explain(reason, key: key, peerSupports: machine.phase))
        }
        let session = OutboundDataSession(key: key, type: type, engine: self)
        outboundSessions[key] = session
        observer.logger.debug("outbound data session opened", metadata: SessionLayerObserver.metadata(key, type: type))
        wake()
        return session
    }

    func outboundSession(_ key: SessionKey) -> OutboundDataSession? { outboundSessions[key] }

    func outboundCloseReason(_ key: SessionKey) -> DataSessionCloseReason? { machine.outboundCloseReason(key) }

    func makeInbound(_ key: SessionKey, expecting type: SessionType?) throws(ConduitError) -> InboundDataSession {
        guard key.streamID.isValid else { throw .creationFailed(.invalidId, Self.explain(.invalidId, key: key, peerSupports: machine.phase)) }
        let announced = machine.inboundType(key)
        let session = InboundDataSession(key: key, type: announced ?? type ?? .reliableMessage, bufferBytes: configuration.inboundBufferBytes)
        let previous = inboundSessions[key]
        if !machine.isInboundAccepted(key) { inboundSessions[key] = session }
        let reason = machine.makeInbound(key, expectedType: type)
        guard reason == .none else {
            inboundSessions[key] = previous
            throw .creationFailed(reason, Self.explain(reason, key: key, peerSupports: machine.phase))
        }
        observer.logger.debug("inbound data session opened", metadata: SessionLayerObserver.metadata(key, type: session.type))
        dispatchEvents()
        return session
    }

    func inboundSession(_ key: SessionKey) -> InboundDataSession? { inboundSessions[key] }

    func unsupportInbound(_ key: SessionKey) {
        observer.logger.debug("inbound data session unsupported", metadata: SessionLayerObserver.metadata(key))
        machine.unsupportInbound(key)
        dispatchEvents()
        inboundSessions[key] = nil
        wake()
    }

    func send(_ key: SessionKey, bytes: [UInt8], timestamp: UInt64, wait: Bool) async throws(ConduitError) -> Bool {
        while true {
            switch machine.enqueue(key, bytes: bytes, timestamp: timestamp, now: now()) {
            case .queued:
                dispatchEvents()
                wake()
                // The pump re-arms before each write; a send into an empty queue makes a new head
                // that needs it now, in case the pump is blocked in a write.
                if machine.takeQueueHeadAdded() { scheduleTimers() }
                return true
            case .failed(let error):
                throw error
            case .queueFull:
                dispatchEvents()
                scheduleTimers()
                guard wait else { return false }
                await withCheckedContinuation { sendWaiters[key, default: []].append($0) }
            }
        }
    }

    /// A 1:1 call has one destination: the peer.
    func changeDestination(_ key: SessionKey, to peer: PeerID?) -> Bool { false }

    func closeOutbound(_ key: SessionKey) {
        machine.closeOutbound(key)
        dispatchEvents()
        wake()
    }

    func hangUp() async {
        machine.hangUp()
        dispatchEvents()
        wake()
        guard !linkIsClosed else { return }
        await withCheckedContinuation { closedWaiters.append($0) }
    }

    var isEnded: Bool { machine.isEnded }
    var statistics: CallStatistics { machine.statistics }

    /// The end of the call, at `info`, with what it carried and dropped.
    private func logEnd(_ reason: DisconnectReason) {
        let statistics = machine.statistics
        let reassembly = statistics.reassembly
        let dropped = statistics.malformedDatagrams + statistics.droppedUnsupported + statistics.droppedPendingOverflow
            + statistics.droppedOutOfState + statistics.droppedUnknownSubgroup + statistics.droppedClosedSession
            + reassembly.messagesDroppedOverCapacity + reassembly.messagesDroppedTimedOut + reassembly.messagesEvicted
        observer.logger.info(
            "call ended",
            metadata: [
                ConduitObservability.MetadataKey.reason: "\(reason)",
                "conduit.messagesSent": "\(statistics.messagesSent)",
                "conduit.bytesSent": "\(statistics.bytesSent)",
                "conduit.messagesReceived": "\(statistics.messagesDelivered)",
                "conduit.bytesReceived": "\(statistics.bytesDelivered)",
                "conduit.dropped": "\(dropped)",
            ]
        )
    }

    static func explain(_ reason: DataSessionFailReason, key: SessionKey, peerSupports phase: CallMachine.Phase) -> String {
        switch reason {
        case .none: "created"
        case .invalidId: "stream ID \(key.streamID) is outside 100...999"
        case .alreadyExist: "a session for \(key) already exists in this direction"
        case .notIncoming: "no dataSessionIncoming event was received for \(key)"
        case .invalidType: "the session type does not match the type the sender announced for \(key)"
        case .internal:
            switch phase {
            case .connected(_, false): "the peer does not support data sessions"
            case .connected: "this side does not support data sessions"
            case .handshaking: "the call is not connected yet"
            case .ended: "the call has ended"
            }
        }
    }
}

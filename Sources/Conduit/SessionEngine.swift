import ConduitCore
import ConduitRooms
import ConduitDriver
import Logging

/// The data-session half that the call and conference machines share, method for method: what
/// ``SessionEngine`` needs of a machine.
protocol SessionMachine: SansIOMachine {
    mutating func makeOutbound(_ key: SessionKey, type: SessionType, options: OutboundSessionOptions, now: ConduitInstant) -> DataSessionFailReason
    func outboundCloseReason(_ key: SessionKey) -> DataSessionCloseReason?
    mutating func makeInbound(_ key: SessionKey, expectedType: SessionType?) -> DataSessionFailReason
    func inboundType(_ key: SessionKey) -> SessionType?
    func isInboundAccepted(_ key: SessionKey) -> Bool
    var isHoldingBeyondLimit: Bool { get }
    func outboundStatistics(_ key: SessionKey, now: ConduitInstant) -> OutboundDataSessionStatistics?
    func inboundStatistics(_ key: SessionKey) -> InboundDataSessionStatistics?
    mutating func unsupportInbound(_ key: SessionKey)
    mutating func enqueue(_ key: SessionKey, bytes: [UInt8], timestamp: UInt64, now: ConduitInstant) -> EnqueueResult
    mutating func closeOutbound(_ key: SessionKey)
    func flushProgress(_ key: SessionKey, since mark: OutboundFlushMark?) -> OutboundFlushProgress?
    func longestQueueingDelay(now: ConduitInstant) -> Duration
    var isConnected: Bool { get }
    /// Cuts messages queued from now on to `size` bytes (see `SessionLayer.setFragmentSize`).
    mutating func setFragmentSize(_ size: Int)
}

extension CallMachine: SessionMachine {
    mutating func setFragmentSize(_ size: Int) { sessions.setFragmentSize(size) }
}

extension ConferenceMachine: SessionMachine {
    mutating func setFragmentSize(_ size: Int) { sessions.setFragmentSize(size) }
}

/// The app's side of the data sessions of one engine: the session objects by key, and the senders
/// waiting for queue room.
struct SessionTables {
    var outbound: [SessionKey: OutboundDataSession] = [:]
    var inbound: [SessionKey: InboundDataSession] = [:] {
        didSet { lastReceiving = nil }
    }
    /// The session the last message went to: consecutive messages mostly go to the same one,
    /// and looking it up hashed its key once per message. Forgotten whenever the table changes.
    private var lastReceiving: (key: SessionKey, session: InboundDataSession)?
    var sendWaiters: [SessionKey: [CheckedContinuation<Void, Never>]] = [:]
    /// Who waits in `OutboundDataSession.close()` for its queue to drain.
    var closeWaiters: [SessionKey: [CheckedContinuation<Void, Never>]] = [:]
    /// Who waits in a flush for the next pump round (or its deadline).
    var roundWaiters: [CheckedContinuation<Void, Never>] = []
    /// The read loop, while a reliable stream the app has not accepted holds its limit.
    var heldDataWaiters: [CheckedContinuation<Void, Never>] = []
    /// `tooLongQueuedData(enabled: true)` events so far (for metrics).
    var queueDelayAlerts = 0

    mutating func receiving(_ key: SessionKey) -> InboundDataSession? {
        if let last = lastReceiving, last.key == key { return last.session }
        guard let found = inbound[key] else { return nil }
        lastReceiving = (key, found)
        return found
    }

    mutating func resumeSenders(_ key: SessionKey) {
        guard let waiters = sendWaiters.removeValue(forKey: key) else { return }
        for waiter in waiters { waiter.resume() }
    }

    mutating func resumeAllSenders() {
        for waiters in sendWaiters.values { for waiter in waiters { waiter.resume() } }
        sendWaiters.removeAll()
        for waiters in closeWaiters.values { for waiter in waiters { waiter.resume() } }
        closeWaiters.removeAll()
        resumeRoundWaiters()
    }

    mutating func resumeRoundWaiters() {
        let waiters = roundWaiters
        roundWaiters.removeAll()
        for waiter in waiters { waiter.resume() }
    }

    mutating func resumeHeldDataWaiters() {
        let waiters = heldDataWaiters
        heldDataWaiters.removeAll()
        for waiter in waiters { waiter.resume() }
    }

    mutating func resumeClosers(_ key: SessionKey) {
        guard let waiters = closeWaiters.removeValue(forKey: key) else { return }
        for waiter in waiters { waiter.resume() }
    }
}

/// An engine (``CallEngine``, ``ConferenceEngine``): a `SansIODriverHost` that adapts its
/// machine's events to API objects. Everything about data sessions, metrics and the end log is
/// here, once; the engines keep their control planes (handshake, rooms, tracks, channels).
protocol SessionEngine: SansIODriverHost, OutboundSessionEngine, InboundSessionEngine, InboundDelivering where Machine: SessionMachine {
    var sessions: SessionTables { get set }
    var observer: SessionLayerObserver { get set }
    var configuration: ConduitConfiguration { get }
    /// Who waits in ``startAndAwaitConnection(timeout:timedOut:failedLog:failure:)``.
    var connectWaiter: CheckedContinuation<Void, any Error>? { get set }
    /// The machine's counters as metrics, with what the driver and the engine counted.
    func metricsSnapshot() -> SessionLayerObserver.Snapshot
    /// Bytes before a data frame in what this engine writes on a session's channel (a relay
    /// envelope for a conference), to read the message IDs of unacknowledged frames.
    static var dataFramePrefix: Int { get }
    /// Why creating a session for `key` failed, in words.
    func explain(_ reason: DataSessionFailReason, key: SessionKey) -> String
    /// After every pump round, for the engine's control plane (a conference wakes the senders
    /// its track and channel queue refused). Default: nothing.
    func controlPlaneRoundEnded()
}

extension SessionEngine {
    // MARK: Start-up

    /// Starts the driver and returns once the machine is connected; throws `failure()` if it
    /// already failed, what ``failConnect(_:)`` is given, or `timedOut` after `timeout` on the
    /// driver's clock (then the link is abandoned, after logging `failedLog`). `limit`: the one
    /// connect limit `timeout` is what is left of, named in the error.
    func startAndAwaitConnection(
        timeout: Duration, limit: Duration? = nil, timedOut: String, failedLog: Logger.Message, failure: () -> ConduitError?
    ) async throws(ConduitError) {
        startDriver()
        let message = "\(timedOut) \(Self.describeWait(timeout, of: limit))"
        let timer = driver.clock.after(timeout) { await self.failConnect(ConduitError(.timedOut, message)) }
        defer { timer.cancel() }
        do {
            try await withCheckedThrowingContinuation { continuation in
                if driver.machine.isConnected {
                    continuation.resume()
                } else if let failure = failure() {
                    continuation.resume(throwing: failure)
                } else {
                    connectWaiter = continuation
                }
            }
        } catch {
            let failure = (error as? ConduitError) ?? ConduitError(.connectionFailed, "\(error)")
            observer.logger.info(failedLog, metadata: [ConduitObservability.MetadataKey.reason: "\(failure)"])
            await abandonLink()
            throw failure
        }
    }

    /// "within 10 s", or, when connecting the link used part of the limit, how much: the wait
    /// alone (once "within 0.0 seconds", when a starved machine took the whole limit to connect)
    /// said nothing of where the time went.
    static func describeWait(_ wait: Duration, of limit: Duration?) -> String {
        guard let limit, limit > wait else { return "within \(wait.limitDescription)" }
        return "within the connect limit of \(limit.limitDescription), \((limit - wait).limitDescription) of which connecting the link took"
    }

    /// The machine connected: whoever waits to connect returns.
    func connectSucceeded() {
        connectWaiter?.resume()
        connectWaiter = nil
    }

    /// Connecting failed: whoever waits to connect throws `error`.
    func failConnect(_ error: ConduitError) {
        connectWaiter?.resume(throwing: error)
        connectWaiter = nil
    }

    // MARK: Driver hooks

    /// Suspends the read loop while deliveries wait for room in the app's streams, and while a
    /// reliable stream the app has not answered yet holds its limit (`maxPendingInboundBytes`).
    func waitForInboundRoom() async {
        await waitUntilDrained()
        while driver.machine.isHoldingBeyondLimit, !driver.linkIsClosed {
            await withCheckedContinuation { sessions.heldDataWaiters.append($0) }
        }
    }

    /// The read loop may go on once no stream the app has not answered holds its limit.
    func resumeReadingIfNothingHeldBeyondLimit() {
        if !driver.machine.isHoldingBeyondLimit { sessions.resumeHeldDataWaiters() }
    }

    func pumpRoundEnded() {
        exportMetrics()
        sessions.resumeRoundWaiters()
        resumeReadingIfNothingHeldBeyondLimit()
        controlPlaneRoundEnded()
        // Fragments follow the packet size the link's path search found (issue 17): a 64 KiB
        // message on a 65,000-byte path goes as 2 frames, not 55; after a fall back the link
        // sends in parts what was cut larger, and later messages are cut smaller again.
        driver.machine.setFragmentSize(driver.link.currentMTU - DataFrameHeader.size - Self.dataFramePrefix)
    }

    func controlPlaneRoundEnded() {}

    func linkWillClose() {
        // Exported before the close's suspension: whoever sees the engine ended sees its metrics.
        exportMetrics()
        observer.ended()
        sessions.resumeHeldDataWaiters()
    }

    func linkDidClose() {
        sessions.resumeHeldDataWaiters()
        // Sessions hold the engine; forgetting them breaks the cycle so an ended engine is freed.
        // Their final events were dispatched when the machine ended.
        sessions.outbound.removeAll()
        sessions.inbound.removeAll()
    }

    /// Hands the statistics gathered since the last export to the metrics (a batch per pump
    /// round, never per message; nothing at all with the no-op factory).
    func exportMetrics() {
        guard observer.isCounting else { return }
        observer.export(metricsSnapshot())
        if !driver.linkIsClosed { observer.recordQueueDelay(driver.machine.longestQueueingDelay(now: now())) }
    }

    /// The end, at `info`, with what was carried and dropped.
    func logEnd(_ message: Logger.Message, reason: String, metadata extra: Logger.Metadata = [:]) {
        let snapshot = metricsSnapshot()
        let metadata: Logger.Metadata = [
            ConduitObservability.MetadataKey.reason: "\(reason)",
            "conduit.messagesSent": "\(snapshot.messagesSent)",
            "conduit.bytesSent": "\(snapshot.bytesSent)",
            "conduit.messagesReceived": "\(snapshot.messagesReceived)",
            "conduit.bytesReceived": "\(snapshot.bytesReceived)",
            "conduit.dropped": "\(snapshot.drops.reduce(0, +))",
        ]
        observer.logger.info(message, metadata: metadata.merging(extra) { $1 })
    }

    // MARK: Session events

    func received(_ key: SessionKey, _ delivery: InboundDelivery, from sender: PeerID? = nil) {
        guard let session = sessions.receiving(key) else { return }
        switch delivery {
        case .message(let bytes, let timestamp): deliver(.message(.init(bytes: bytes, timestamp: timestamp, sender: sender)), to: session)
        case .fragment(let fragment): deliver(.fragment(fragment), to: session)
        }
    }

    func inboundClosed(_ key: SessionKey, _ reason: DataSessionCloseReason) {
        guard let session = sessions.inbound[key] else { return }
        observer.logger.debug("inbound data session closed", metadata: Self.metadata(key, reason))
        deliver(.closed(reason), to: session)
    }

    func outboundClosed(_ key: SessionKey, _ reason: DataSessionCloseReason) {
        observer.logger.debug("outbound data session closed", metadata: Self.metadata(key, reason))
        if let session = sessions.outbound[key] {
            session.eventSink.yield(.closed(reason))
            session.eventSink.finish()
        }
        sessions.resumeSenders(key)
        sessions.resumeClosers(key)
    }

    func queueDelayChanged(_ key: SessionKey, tooLong enabled: Bool) {
        if enabled { sessions.queueDelayAlerts += 1 }
        observer.logger.debug("queueing delay \(enabled ? "too long" : "back to normal")", metadata: SessionLayerObserver.metadata(key))
        sessions.outbound[key]?.eventSink.yield(.tooLongQueuedData(enabled: enabled))
    }

    private static func metadata(_ key: SessionKey, _ reason: DataSessionCloseReason) -> Logger.Metadata {
        SessionLayerObserver.metadata(key).merging([ConduitObservability.MetadataKey.reason: "\(reason)"]) { $1 }
    }

    // MARK: App operations

    func makeOutbound(_ key: SessionKey, type: SessionType, options: OutboundSessionOptions) throws(ConduitError) -> OutboundDataSession {
        let current = now()
        let reason = driver.machine.makeOutbound(key, type: type, options: options, now: current)
        guard reason == .none else { throw .creationFailed(reason, explain(reason, key: key)) }
        let session = OutboundDataSession(key: key, type: type, engine: self)
        sessions.outbound[key] = session
        observer.logger.debug("outbound data session opened", metadata: SessionLayerObserver.metadata(key, type: type))
        wakePump()
        return session
    }

    func outboundSession(_ key: SessionKey) -> OutboundDataSession? { sessions.outbound[key] }

    func outboundStatistics(_ key: SessionKey) -> OutboundDataSessionStatistics {
        driver.machine.outboundStatistics(key, now: now()) ?? OutboundDataSessionStatistics()
    }

    func inboundStatistics(_ key: SessionKey) -> InboundDataSessionStatistics {
        driver.machine.inboundStatistics(key) ?? InboundDataSessionStatistics()
    }

    func outboundCloseReason(_ key: SessionKey) -> DataSessionCloseReason? { driver.machine.outboundCloseReason(key) }

    func makeInbound(_ key: SessionKey, expecting type: SessionType?) throws(ConduitError) -> InboundDataSession {
        guard key.streamID.isValid else { throw .creationFailed(.invalidId, explain(.invalidId, key: key)) }
        let announced = driver.machine.inboundType(key)
        let session = InboundDataSession(key: key, type: announced ?? type ?? .reliableMessage, bufferBytes: configuration.inboundBufferBytes, engine: self)
        let previous = sessions.inbound[key]
        if !driver.machine.isInboundAccepted(key) { sessions.inbound[key] = session }
        let reason = driver.machine.makeInbound(key, expectedType: type)
        guard reason == .none else {
            sessions.inbound[key] = previous
            throw .creationFailed(reason, explain(reason, key: key))
        }
        observer.logger.debug("inbound data session opened", metadata: SessionLayerObserver.metadata(key, type: session.type))
        dispatchEvents()
        // Made after the call ended (draining what the stream held): the table is not kept, as
        // it would hold the engine after its link closed.
        if driver.linkIsClosed { sessions.inbound[key] = nil }
        resumeReadingIfNothingHeldBeyondLimit()
        return session
    }

    func inboundSession(_ key: SessionKey) -> InboundDataSession? { sessions.inbound[key] }

    func unsupportInbound(_ key: SessionKey) {
        observer.logger.debug("inbound data session unsupported", metadata: SessionLayerObserver.metadata(key))
        driver.machine.unsupportInbound(key)
        dispatchEvents()
        sessions.inbound[key] = nil
        resumeReadingIfNothingHeldBeyondLimit()
        wakePump()
    }

    func send(_ key: SessionKey, bytes: [UInt8], timestamp: UInt64, wait: Bool) async throws(ConduitError) -> Bool {
        while true {
            let current = now()
            switch driver.machine.enqueue(key, bytes: bytes, timestamp: timestamp, now: current) {
            case .queued:
                machineEnqueued()
                return true
            case .failed(let error):
                throw error
            case .queueFull:
                dispatchEvents()
                rearmTimer()
                guard wait else { return false }
                await withCheckedContinuation { sessions.sendWaiters[key, default: []].append($0) }
            }
        }
    }

    /// Closes gracefully and returns once the session's queue has drained to the link (or the
    /// session ended otherwise), so a leave or hang-up after it cannot cut its last messages.
    func closeOutbound(_ key: SessionKey) async {
        driver.machine.closeOutbound(key)
        machineChanged()
        guard sessions.outbound[key] != nil, driver.machine.outboundCloseReason(key) == nil, !driver.machine.isEnded else { return }
        await withCheckedContinuation { sessions.closeWaiters[key, default: []].append($0) }
    }

    /// Why creating a session failed, for the reasons every engine words alike (nil for `internal`,
    /// which depends on the engine's state).
    static func explainCommon(_ reason: DataSessionFailReason, key: SessionKey) -> String? {
        switch reason {
        case .none: "created"
        case .invalidId: "stream ID \(key.streamID) is outside 100...999"
        case .alreadyExist: "a session for \(key) already exists in this direction"
        case .notIncoming: "no dataSessionIncoming event was received for \(key)"
        case .invalidType: "the session type does not match the type the sender announced for \(key)"
        case .internal: nil
        }
    }
}

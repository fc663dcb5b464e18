import ConduitCore
import ConduitDriver

/// One `CallMachine` over one `TransportLink`: the I/O half of a call, as a thin adapter from the
/// machine's events to the API's objects. The loops, the timer and the close are the shared
/// driver's (`SansIODriverHost`); data sessions, metrics and the end log are
/// ``SessionEngine``'s. The actor runs on an executor of its own, not the link's (see `init`).
actor CallEngine: SessionEngine {
    var driver: SansIODriver<CallMachine>
    let configuration: ConduitConfiguration
    private nonisolated let executor: DriverExecutor

    var sessions = SessionTables()
    /// Deliveries waiting for room in their session (see ``InboundDelivering``).
    var inboundOverflow = InboundOverflow()
    /// Lifecycle logs and metrics (see ``ConduitObservability``).
    var observer: SessionLayerObserver

    private let callEventSink = EventQueue<Call.Event>(capacity: 1_024, makeDropped: { .eventsDropped(count: $0) })
    var connectWaiter: CheckedContinuation<Void, any Error>?

    init(
        localPeer: PeerID, link: any TransportLink, configuration: ConduitConfiguration, observability: ConduitObservability = .disabled,
        transport: String, clock: (any ConduitClock)? = nil
    ) {
        self.configuration = configuration
        // Not the link's event loop: the app calls into the engine once per send, and a hop onto
        // the loop's thread and back per message costs more (two thread wake-ups) than the one
        // hop per batch between the engine and the link (measured: 13 vs 296 MB/s at 1 KiB).
        executor = DriverExecutor(for: link, followsLink: false)
        var observer = SessionLayerObserver(observability, kind: .call, transport: transport, link: link)
        observer.logger[metadataKey: ConduitObservability.MetadataKey.localPeer] = "\(localPeer)"
        self.observer = observer
        let machine = CallMachine(localPeer: localPeer, configuration: configuration.callConfiguration(fragmentSize: link.capabilities.fragmentSize))
        driver = SansIODriver(machine: machine, link: link, clock: clock ?? SystemMonotonicClock())
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.unownedExecutor }

    // MARK: Start-up

    /// Starts the reader and pump, and returns the call once both sides said hello.
    func establish(timeout: Duration, limit: Duration? = nil) async throws(ConduitError) -> Call {
        observer.logger.debug("call handshake started")
        try await startAndAwaitConnection(timeout: timeout, limit: limit, timedOut: "the peer did not complete the handshake", failedLog: "call handshake failed") {
            driver.machine.isEnded ? ConduitError(.connectionFailed, "the link closed during the handshake") : nil
        }
        guard case .connected(let peer, let supported) = driver.machine.phase else {
            throw ConduitError(.connectionFailed, "the call ended during the handshake")
        }
        return Call(engine: self, localPeer: driver.machine.localPeer, remotePeer: peer, peerSupportsDataSessions: supported, events: callEventSink)
    }

    // MARK: Events

    func handle(_ event: CallEvent) {
        switch event {
        case .connected(let peer, let supported):
            observer.logger[metadataKey: ConduitObservability.MetadataKey.peer] = "\(peer)"
            observer.logger.info("call connected", metadata: ["conduit.peerSupportsDataSessions": "\(supported)"])
            observer.connected()
            callEventSink.yield(.connected(peer: peer, isDataSessionSupported: supported))
            connectSucceeded()
        case .disconnected(let reason):
            logEnd("call ended", reason: "\(reason)")
            failConnect(ConduitError(.connectionFailed, "the call ended during the handshake (\(reason))"))
            callEventSink.yield(.disconnected(reason), essential: true)
            callEventSink.finish()
            sessions.resumeAllSenders()
            wakePump()
        case .dataSessionIncoming(let key, let type):
            observer.logger.debug("data session incoming", metadata: SessionLayerObserver.metadata(key, type: type))
            callEventSink.yield(.dataSessionIncoming(streamID: key.streamID, subgroup: key.subgroup, type: type))
        case .received(let key, let delivery): received(key, delivery)
        case .inboundClosed(let key, let reason): inboundClosed(key, reason)
        case .outboundClosed(let key, let reason): outboundClosed(key, reason)
        case .tooLongQueuedData(let key, let enabled): queueDelayChanged(key, tooLong: enabled)
        case .sendQueueHasRoom(let key): sessions.resumeSenders(key)
        }
    }

    func metricsSnapshot() -> SessionLayerObserver.Snapshot {
        .init(
            driver.machine.statistics, linkBytesSent: driver.linkBytesSent, linkBytesReceived: driver.linkBytesReceived,
            queueDelayAlerts: sessions.queueDelayAlerts, eventsDropped: callEventSink.droppedCount
        )
    }

    // MARK: App operations

    /// A 1:1 call has one destination: the peer.
    func changeDestination(_ key: SessionKey, to peer: PeerID?) -> Bool { false }

    func hangUp() async {
        driver.machine.hangUp()
        machineChanged()
        await waitUntilLinkClosed()
    }

    func hangUp(timeout: Duration) async throws(ConduitError) {
        try await flushAllThenEnd(timeout: timeout, what: "the call") { await hangUp() }
    }

    /// A call writes data frames bare.
    static var dataFramePrefix: Int { 0 }

    var isEnded: Bool { driver.machine.isEnded }
    var statistics: CallStatistics { driver.machine.statistics }

    func explain(_ reason: DataSessionFailReason, key: SessionKey) -> String {
        if let common = Self.explainCommon(reason, key: key) { return common }
        return switch driver.machine.phase {
        case .connected(_, false): "the peer does not support data sessions"
        case .connected: "this side does not support data sessions"
        case .handshaking: "the call is not connected yet"
        case .ended: "the call has ended"
        }
    }
}

import ConduitCore
import ConduitRooms
import DequeModule
import Logging
import ConduitDriver

/// One `ConferenceMachine` over one link to a relay: the I/O half of a conference, as a thin
/// adapter from the machine's events to the API's objects, on the same driver and session layer
/// as ``CallEngine`` (see ``SessionEngine``). The control plane of rooms (subscriptions, data
/// tracks, labeled channels, invitations) is what is left here.
actor ConferenceEngine: SessionEngine {
    var driver: SansIODriver<ConferenceMachine>
    let configuration: ConduitConfiguration
    private nonisolated let executor: DriverExecutor

    var sessions = SessionTables()
    /// Deliveries waiting for room in their session (see ``InboundDelivering``).
    var inboundOverflow = InboundOverflow()
    /// Lifecycle logs and metrics (see ``ConduitObservability``).
    var observer: SessionLayerObserver

    private var subscribeWaiters: [SubgroupName: [CheckedContinuation<Bool, Never>]] = [:]
    private var publishWaiters: [ChannelLabel: [CheckedContinuation<Bool, Never>]] = [:]
    private var trackSubscribeWaiters: [TrackKey: [CheckedContinuation<Bool, Never>]] = [:]
    private var remoteTracks: [TrackKey: RemoteDataTrack] = [:]
    /// Senders waiting for room in the queue that tracks and labeled channels share.
    private var relayMessageSendWaiters: [CheckedContinuation<Void, Never>] = []

    struct TrackKey: Hashable {
        var name: ChannelLabel
        var publisher: PeerID
    }

    /// Invitations through the relay (issue 8): see ConferenceEngine+Invitations.swift.
    let invitationEvents = EventQueue<InvitationEvent>(capacity: 8_192, makeDropped: nil)
    var invitationState = ConferenceInvitationState()

    let eventSink = EventQueue<Conference.Event>(capacity: 1_024, makeDropped: { .eventsDropped(count: $0) })
    var connectWaiter: CheckedContinuation<Void, any Error>?
    private var endReason: (RelayDisconnectReason, String)?

    /// Labeled-channel messages: a data stream, backpressured like inbound sessions.
    let channelMessages: AsyncBoundedChannel<Conference.ChannelMessage>
    /// Compressed channel messages that did not inflate (corrupt, or larger than the limit).
    private(set) var channelMessagesRefused = 0

    init(
        room: RoomID, peer: PeerID, token: String, link: any TransportLink, configuration: ConduitConfiguration, channels: [ChannelDeclaration] = [],
        observability: ConduitObservability, transport: String, clock: (any ConduitClock)? = nil
    ) {
        self.configuration = configuration
        // Not the link's event loop: the app calls into the engine once per send, and a hop onto
        // the loop's thread and back per message costs more (two thread wake-ups) than the one
        // hop per batch between the engine and the link (measured: 13 vs 296 MB/s at 1 KiB).
        executor = DriverExecutor(for: link, followsLink: false)
        var observer = SessionLayerObserver(observability, kind: .conference, transport: transport, link: link)
        observer.logger[metadataKey: ConduitObservability.MetadataKey.peer] = "\(peer)"
        observer.logger[metadataKey: ConduitObservability.MetadataKey.room] = "\(room)"
        self.observer = observer
        let clock = clock ?? SystemMonotonicClock()
        // Every frame to the relay carries a 4-byte envelope: fragments leave room for it.
        let session = configuration.callConfiguration(fragmentSize: link.capabilities.fragmentSize - RelayEnvelope.size)
        let machine = ConferenceMachine(
            room: room, localPeer: peer, token: Array(token.utf8), configuration: .init(session: session, channels: channels), now: clock.now()
        )
        driver = SansIODriver(machine: machine, link: link, clock: clock)
        channelMessages = .received(capacity: configuration.inboundBufferBytes) { $0.data.count }
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.unownedExecutor }

    // MARK: Start-up

    /// Starts the loops and returns once the relay accepted the join (or throws why not).
    func establish(timeout: Duration, limit: Duration? = nil) async throws(ConduitError) -> [PeerID] {
        observer.logger.debug("joining room")
        try await startAndAwaitConnection(timeout: timeout, limit: limit, timedOut: "the relay did not answer the join", failedLog: "join failed") {
            endReason.map { ConduitError(.connectionFailed, "join failed: \($0.1)") }
        }
        return peers
    }

    // MARK: Events

    func handle(_ event: ConferenceEvent) {
        switch event {
        case .connected(_, let peers):
            observer.logger.info("joined room", metadata: ["conduit.peers": "\(peers.map(\.peer))"])
            observer.connected()
            eventSink.yield(.connected(peers: peers.map(\.peer)))
            connectSucceeded()
        case .peersChanged(let joined, let left, let version):
            observer.logger.debug(
                "room peers changed", metadata: ["conduit.joined": "\(joined.map(\.peer))", "conduit.left": "\(left.map(\.peer))", "conduit.version": "\(version)"]
            )
            eventSink.yield(.peersChanged(joined: joined.map(\.peer), left: left.map(\.peer), version: version))
        case .disconnected(let reason, let text):
            logEnd("left room", reason: "\(reason)", metadata: ["conduit.detail": "\(text)"])
            endReason = (reason, text)
            failConnect(ConduitError(.connectionFailed, "join failed: \(text)"))
            eventSink.yield(.disconnected(reason, text), essential: true)
            eventSink.finish()
            endControlPlane()
            wakePump()
        case .dataSessionIncoming(let key, let type, let from):
            observer.logger.debug("data session incoming", metadata: SessionLayerObserver.metadata(key, type: type).merging(["conduit.from": "\(from)"]) { $1 })
            eventSink.yield(.dataSessionIncoming(streamID: key.streamID, subgroup: key.subgroup, type: type, from: from))
        case .senderSessionEnded(let key, let from, let reason):
            eventSink.yield(.dataSessionEnded(streamID: key.streamID, subgroup: key.subgroup, from: from, reason: reason))
        case .received(let key, let from, let delivery): received(key, delivery, from: from)
        case .inboundClosed(let key, let reason): inboundClosed(key, reason)
        case .outboundClosed(let key, let reason): outboundClosed(key, reason)
        case .tooLongQueuedData(let key, let enabled): queueDelayChanged(key, tooLong: enabled)
        case .sendQueueHasRoom(let key): sessions.resumeSenders(key)
        case .subscribed(let name, let dataSession):
            eventSink.yield(.subscribed(name, dataSession: dataSession))
            for waiter in subscribeWaiters.removeValue(forKey: name) ?? [] { waiter.resume(returning: true) }
        case .subscribeRefused(let name, let refusal):
            eventSink.yield(.subscribeRefused(name, refusal))
            for waiter in subscribeWaiters.removeValue(forKey: name) ?? [] { waiter.resume(returning: false) }
        case .extensionReceived(let id, let from, let body):
            eventSink.yield(.extensionReceived(id: id, from: from, body: body))
        case .relayExtensionReceived(let id, let body):
            receiveRelayExtension(id, body: body)
        case .trackPublished(let name, let by, let reliability):
            if by == driver.machine.localPeer {
                for waiter in publishWaiters.removeValue(forKey: name) ?? [] { waiter.resume(returning: true) }
            } else {
                eventSink.yield(.dataTrackPublished(name, by: by, reliability: reliability))
            }
        case .trackUnpublished(let name, let by):
            if by != driver.machine.localPeer { eventSink.yield(.dataTrackUnpublished(name, by: by)) }
            remoteTracks.removeValue(forKey: TrackKey(name: name, publisher: by))?.channel.finish()
        case .trackSubscribed(let name, let publisher):
            for waiter in trackSubscribeWaiters.removeValue(forKey: TrackKey(name: name, publisher: publisher)) ?? [] { waiter.resume(returning: true) }
        case .trackMessage(let name, let from, let bytes):
            if let track = remoteTracks[TrackKey(name: name, publisher: from)] { deliver(bytes, to: track.channel) }
        case .channelsReady(let infos):
            eventSink.yield(.channelsReady(infos))
        case .channelMessage(let label, let from, let header, let bytes, let compressed):
            var body = bytes
            if compressed {
                guard let inflated = Zlib.decompress(bytes, limit: ChannelFrameHeader.maxMessageBytes) else {
                    channelMessagesRefused += 1
                    return
                }
                body = inflated
            }
            deliver(Conference.ChannelMessage(label: label, sender: from, data: header + body, headerLength: header.count), to: channelMessages)
        }
    }

    /// The conference ended: everyone waiting on the room hears no.
    private func endControlPlane() {
        sessions.resumeAllSenders()
        controlPlaneRoundEnded()
        for waiters in subscribeWaiters.values { for waiter in waiters { waiter.resume(returning: false) } }
        subscribeWaiters.removeAll()
        for waiters in publishWaiters.values { for waiter in waiters { waiter.resume(returning: false) } }
        publishWaiters.removeAll()
        for waiters in trackSubscribeWaiters.values { for waiter in waiters { waiter.resume(returning: false) } }
        trackSubscribeWaiters.removeAll()
        for track in remoteTracks.values { track.channel.finish() }
        remoteTracks.removeAll()
        channelMessages.finish()
        endInvitations()
    }

    func metricsSnapshot() -> SessionLayerObserver.Snapshot {
        .init(
            driver.machine.statistics, linkBytesSent: driver.linkBytesSent, linkBytesReceived: driver.linkBytesReceived,
            queueDelayAlerts: sessions.queueDelayAlerts, eventsDropped: eventSink.droppedCount
        )
    }

    // MARK: App operations

    func changeDestination(_ key: SessionKey, to peer: PeerID?) -> Bool { driver.machine.changeDestination(key, to: peer) }

    func subscribe(_ name: SubgroupName, dataSession: Bool) async -> Bool {
        if driver.machine.isSubscribed(name) { return true }
        guard driver.machine.isConnected else { return false }
        driver.machine.subscribe(name, dataSession: dataSession)
        wakePump()
        return await withCheckedContinuation { subscribeWaiters[name, default: []].append($0) }
    }

    func unsubscribe(_ name: SubgroupName) {
        driver.machine.unsubscribe(name)
        machineChanged()
    }

    func sendExtension(_ id: UInt8, to peer: PeerID, body: [UInt8]) -> Bool {
        defer { wakePump() }
        return driver.machine.sendExtension(id, to: peer, body: body)
    }

    /// Sends an extension message to the relay itself (invitation requests).
    func sendRelayExtension(_ id: UInt8, body: [UInt8]) -> Bool {
        defer { wakePump() }
        return driver.machine.sendRelayExtension(id, body: body)
    }

    var localPeer: PeerID { driver.machine.localPeer }

    // MARK: Data tracks

    func publishTrack(_ name: ChannelLabel, reliability: Reliability) async -> Bool {
        guard driver.machine.publishTrack(name, reliability: reliability) else { return false }
        wakePump()
        return await withCheckedContinuation { publishWaiters[name, default: []].append($0) }
    }

    func unpublishTrack(_ name: ChannelLabel) {
        driver.machine.unpublishTrack(name)
        wakePump()
    }

    func sendTrack(_ name: ChannelLabel, bytes: [UInt8], waitForRoom: Bool) async throws(ConduitError) -> Bool {
        try await enqueueRelayMessage(waitForRoom: waitForRoom) { machine, now in machine.sendTrack(name, bytes: bytes, now: now) }
    }

    func subscribeTrack(_ name: ChannelLabel, of publisher: PeerID) async -> RemoteDataTrack? {
        let key = TrackKey(name: name, publisher: publisher)
        if let existing = remoteTracks[key] { return existing }
        guard driver.machine.subscribeTrack(name, of: publisher) else { return nil }
        let track = RemoteDataTrack(name: name, publisher: publisher, bufferBytes: configuration.inboundBufferBytes)
        remoteTracks[key] = track
        wakePump()
        let confirmed = await withCheckedContinuation { trackSubscribeWaiters[key, default: []].append($0) }
        return confirmed ? track : nil
    }

    func unsubscribeTrack(_ name: ChannelLabel, of publisher: PeerID) {
        driver.machine.unsubscribeTrack(name, of: publisher)
        remoteTracks.removeValue(forKey: TrackKey(name: name, publisher: publisher))?.channel.finish()
        wakePump()
    }

    // MARK: Labeled channels

    func sendChannel(_ label: ChannelLabel, bytes: [UInt8], waitForRoom: Bool) async throws(ConduitError) -> Bool {
        let compress = driver.machine.channels[label]?.declaration.compress ?? false
        let body = compress ? Zlib.compress(bytes) : bytes
        return try await enqueueRelayMessage(waitForRoom: waitForRoom) { machine, now in
            machine.sendChannel(label, bytes: body, compressed: compress, now: now)
        }
    }

    /// A track's or channel's enqueue: true once queued. When the queue they share is full: false
    /// at once, or with `waitForRoom`, suspended until the pump has drained it to half (see
    /// ``controlPlaneRoundEnded()``) and tried again, as a session's `send` waits for its queue.
    private func enqueueRelayMessage(
        waitForRoom: Bool, _ enqueue: (inout ConferenceMachine, ConduitInstant) -> EnqueueResult
    ) async throws(ConduitError) -> Bool {
        while true {
            let current = now()
            switch enqueue(&driver.machine, current) {
            case .queued:
                machineEnqueued()
                return true
            case .queueFull:
                wakePump()
                guard waitForRoom else { return false }
                await withCheckedContinuation { relayMessageSendWaiters.append($0) }
            case .failed(let error):
                throw error
            }
        }
    }

    /// Wakes the senders the track and channel queue refused once it has room (or the conference
    /// ended: their retry then throws why).
    func controlPlaneRoundEnded() {
        guard !relayMessageSendWaiters.isEmpty, driver.machine.trackQueueHasRoom else { return }
        let waiters = relayMessageSendWaiters
        relayMessageSendWaiters.removeAll()
        for waiter in waiters { waiter.resume() }
    }

    var channels: [ChannelLabel: ChannelInfo] { driver.machine.channels }

    func leave() async {
        driver.machine.leave()
        machineChanged()
        await waitUntilLinkClosed()
    }

    func leave(timeout: Duration) async throws(ConduitError) {
        try await flushAllThenEnd(timeout: timeout, what: "the room") { await leave() }
    }

    /// A conference's session frames travel in a relay envelope.
    static var dataFramePrefix: Int { RelayEnvelope.size }

    var peers: [PeerID] { driver.machine.members.values.sorted { $0.member < $1.member }.map(\.peer) }
    var isEnded: Bool { driver.machine.isEnded }
    var statistics: ConferenceStatistics { driver.machine.statistics }

    func explain(_ reason: DataSessionFailReason, key: SessionKey) -> String {
        if let common = Self.explainCommon(reason, key: key) { return common }
        let machine = driver.machine
        if machine.isEnded { return "the conference has ended" }
        if let subgroup = key.subgroup, !machine.isSubscribed(subgroup) { return "not subscribed to subgroup \(subgroup)" }
        if let subgroup = key.subgroup { return "subgroup \(subgroup) does not carry data sessions (its dataSession attribute is false)" }
        return "this side does not support data sessions"
    }
}

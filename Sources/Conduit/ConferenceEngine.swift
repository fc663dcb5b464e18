import ConduitCore
import DequeModule
import Logging

/// Drives one `ConferenceMachine` over one link to a relay: the I/O half of a conference, in
/// the shape of ``CallEngine`` (a reader task, a pump task, timers; app calls hop in once per
/// operation, never per packet).
actor ConferenceEngine: OutboundSessionEngine, InboundDelivering {
    private var machine: ConferenceMachine
    private let link: any TransportLink
    private let configuration: ConduitConfiguration
    private let clock = ContinuousClock()
    private let origin: ContinuousClock.Instant

    private var outboundSessions: [SessionKey: OutboundDataSession] = [:]
    private var inboundSessions: [SessionKey: InboundDataSession] = [:]
    /// Deliveries waiting for room in their session (see ``InboundDelivering``).
    var inboundOverflow = InboundOverflow()
    private var sendWaiters: [SessionKey: [CheckedContinuation<Void, Never>]] = [:]
    private var subscribeWaiters: [SubgroupName: [CheckedContinuation<Bool, Never>]] = [:]
    private var publishWaiters: [ChannelLabel: [CheckedContinuation<Bool, Never>]] = [:]
    private var trackSubscribeWaiters: [TrackKey: [CheckedContinuation<Bool, Never>]] = [:]
    private var remoteTracks: [TrackKey: RemoteDataTrack] = [:]

    struct TrackKey: Hashable {
        var name: ChannelLabel
        var publisher: PeerID
    }

    /// Invitations through the relay (issue 8): see ConferenceEngine+Invitations.swift.
    let invitationEvents = EventQueue<InvitationEvent>(capacity: 8_192, makeDropped: nil)
    var invitationState = ConferenceInvitationState()

    let eventSink = EventQueue<Conference.Event>(capacity: 1_024, makeDropped: { .eventsDropped(count: $0) })
    private var connectWaiter: CheckedContinuation<Void, any Error>?
    private var closedWaiters: [CheckedContinuation<Void, Never>] = []
    private var linkIsClosed = false
    private var endReason: (RelayDisconnectReason, String)?

    private let wakeups: AsyncStream<Void>
    private let wakeSink: AsyncStream<Void>.Continuation
    private var timer: (task: Task<Void, Never>, deadline: ConduitInstant)?
    private var tasks: [Task<Void, Never>] = []

    /// Lifecycle logs and metrics (see ``ConduitObservability``).
    private var observer: SessionLayerObserver
    /// Datagram bytes through the link, counted once per batch (for metrics).
    private var linkBytesSent = 0
    private var linkBytesReceived = 0
    private var queueDelayAlerts = 0

    /// Labeled-channel messages: a data stream, backpressured like inbound sessions.
    let channelMessages: AsyncBoundedChannel<Conference.ChannelMessage>
    /// Compressed channel messages that did not inflate (corrupt, or larger than the limit).
    private(set) var channelMessagesRefused = 0

    init(
        room: RoomID, peer: PeerID, token: String, link: any TransportLink, configuration: ConduitConfiguration, channels: [ChannelDeclaration] = [],
        observability: ConduitObservability, transport: String
    ) {
        self.link = link
        self.configuration = configuration
        var observer = SessionLayerObserver(observability, kind: .conference, transport: transport, link: link)
        observer.logger[metadataKey: ConduitObservability.MetadataKey.peer] = "\(peer)"
        observer.logger[metadataKey: ConduitObservability.MetadataKey.room] = "\(room)"
        self.observer = observer
        self.origin = clock.now
        // Every frame to the relay carries a 4-byte envelope: fragments leave room for it.
        let session = configuration.callConfiguration(fragmentSize: link.capabilities.fragmentSize - RelayEnvelope.size)
        self.machine = ConferenceMachine(room: room, localPeer: peer, token: Array(token.utf8), configuration: .init(session: session, channels: channels), now: .zero)
        channelMessages = .received(capacity: configuration.inboundBufferBytes) { $0.data.count }
        (wakeups, wakeSink) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    private func now() -> ConduitInstant {
        ConduitInstant(nanoseconds: UInt64(max(0, origin.duration(to: clock.now).nanosecondsClamped)))
    }

    // MARK: Start-up

    /// Starts the loops and returns once the relay accepted the join (or throws why not).
    func establish(timeout: Duration) async throws(ConduitError) -> [PeerID] {
        observer.logger.debug("joining room")
        tasks.append(Task { await self.readLoop() })
        tasks.append(Task { await self.pumpLoop() })
        wake()
        let timeoutTask = Task {
            try? await Task.sleep(for: timeout)
            self.failConnect(ConduitError(.timedOut, "the relay did not answer the join within \(timeout)"))
        }
        defer { timeoutTask.cancel() }
        do {
            try await withCheckedThrowingContinuation { continuation in
                if machine.isConnected {
                    continuation.resume()
                } else if let endReason {
                    continuation.resume(throwing: ConduitError(.connectionFailed, "join failed: \(endReason.1)"))
                } else {
                    connectWaiter = continuation
                }
            }
        } catch {
            let failure = (error as? ConduitError) ?? ConduitError(.connectionFailed, "\(error)")
            observer.logger.info("join failed", metadata: [ConduitObservability.MetadataKey.reason: "\(failure)"])
            machine.linkClosed()
            dispatchEvents()
            await closeLink()
            throw failure
        }
        return machine.members.values.sorted { $0.member < $1.member }.map(\.peer)
    }

    private func failConnect(_ error: ConduitError) {
        connectWaiter?.resume(throwing: error)
        connectWaiter = nil
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
        var batch = DatagramBatch(reservingBytes: 256 * 1024 + 2 * 1_500, datagrams: 256)
        for await _ in wakeups {
            while true {
                batch.removeAll()
                machine.pollTransmit(now: now(), into: &batch, maxBytes: 256 * 1024)
                dispatchEvents()
                if batch.isEmpty || linkIsClosed { break }
                do { try await link.write(batch) } catch {
                    machine.linkClosed()
                    dispatchEvents()
                    break
                }
                linkBytesSent &+= batch.byteCount
            }
            exportMetrics()
            if machine.isEnded {
                await closeLink()
                break
            }
            scheduleTimer()
        }
    }

    private func wake() { wakeSink.yield() }

    /// Hands the statistics gathered since the last export to the metrics (a batch per pump
    /// round, never per message; nothing at all with the no-op factory).
    private func exportMetrics() {
        guard observer.isCounting else { return }
        observer.export(.init(machine.statistics, linkBytesSent: linkBytesSent, linkBytesReceived: linkBytesReceived, queueDelayAlerts: queueDelayAlerts, eventsDropped: eventSink.droppedCount))
        if !linkIsClosed { observer.recordQueueDelay(machine.longestQueueingDelay(now: now())) }
    }

    private func scheduleTimer() {
        guard !linkIsClosed else { return }
        let current = now()
        var due = machine.nextTimeout()
        if let transmit = machine.nextTransmit(now: current) {
            if transmit <= current {
                wake()
            } else {
                due = due.map { min($0, transmit) } ?? transmit
            }
        }
        guard let due else { return }
        if let armed = timer, armed.deadline <= due { return }
        timer?.task.cancel()
        let task = Task {
            try? await Task.sleep(for: due - self.now())
            guard !Task.isCancelled else { return }
            self.timerFired()
        }
        timer = (task, due)
    }

    private func timerFired() {
        timer = nil
        machine.handleTimeout(now: now())
        dispatchEvents()
        wake()
    }

    private func closeLink() async {
        guard !linkIsClosed else { return }
        linkIsClosed = true
        timer?.task.cancel()
        timer = nil
        // Exported before the close's suspension: whoever sees the call ended sees its metrics.
        exportMetrics()
        observer.ended()
        await link.close()
        wakeSink.finish()
        outboundSessions.removeAll()
        inboundSessions.removeAll()
        for waiter in closedWaiters { waiter.resume() }
        closedWaiters.removeAll()
    }

    // MARK: Events

    private func dispatchEvents() {
        while let event = machine.pollEvent() {
            switch event {
            case .connected(_, let peers):
                observer.logger.info("joined room", metadata: ["conduit.peers": "\(peers.map(\.peer))"])
                observer.connected()
                eventSink.yield(.connected(peers: peers.map(\.peer)))
                connectWaiter?.resume()
                connectWaiter = nil
            case .peersChanged(let joined, let left, let version):
                observer.logger.debug(
                    "room peers changed", metadata: ["conduit.joined": "\(joined.map(\.peer))", "conduit.left": "\(left.map(\.peer))", "conduit.version": "\(version)"]
                )
                eventSink.yield(.peersChanged(joined: joined.map(\.peer), left: left.map(\.peer), version: version))
            case .disconnected(let reason, let text):
                let statistics = machine.statistics
                observer.logger.info(
                    "left room",
                    metadata: [
                        ConduitObservability.MetadataKey.reason: "\(reason)", "conduit.detail": "\(text)",
                        "conduit.messagesSent": "\(statistics.messagesSent)", "conduit.messagesReceived": "\(statistics.messagesDelivered)",
                    ]
                )
                endReason = (reason, text)
                failConnect(ConduitError(.connectionFailed, "join failed: \(text)"))
                eventSink.yield(.disconnected(reason, text), essential: true)
                eventSink.finish()
                for waiters in sendWaiters.values { for waiter in waiters { waiter.resume() } }
                sendWaiters.removeAll()
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
                wake()
            case .dataSessionIncoming(let key, let type, let from):
                observer.logger.debug("data session incoming", metadata: SessionLayerObserver.metadata(key, type: type).merging(["conduit.from": "\(from)"]) { $1 })
                eventSink.yield(.dataSessionIncoming(streamID: key.streamID, subgroup: key.subgroup, type: type, from: from))
            case .senderSessionEnded(let key, let from, let reason):
                eventSink.yield(.dataSessionEnded(streamID: key.streamID, subgroup: key.subgroup, from: from, reason: reason))
            case .received(let key, let from, let delivery):
                guard let session = inboundSessions[key] else { continue }
                switch delivery {
                case .message(let bytes, let timestamp): deliver(.message(.init(bytes: bytes, timestamp: timestamp, sender: from)), to: session)
                case .fragment(let fragment): deliver(.fragment(fragment), to: session)
                }
            case .inboundClosed(let key, let reason):
                guard let session = inboundSessions[key] else { continue }
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
                if by == machine.localPeer {
                    for waiter in publishWaiters.removeValue(forKey: name) ?? [] { waiter.resume(returning: true) }
                } else {
                    eventSink.yield(.dataTrackPublished(name, by: by, reliability: reliability))
                }
            case .trackUnpublished(let name, let by):
                if by != machine.localPeer { eventSink.yield(.dataTrackUnpublished(name, by: by)) }
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
                        continue
                    }
                    body = inflated
                }
                deliver(Conference.ChannelMessage(label: label, sender: from, data: header + body, headerLength: header.count), to: channelMessages)
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
        guard reason == .none else { throw .creationFailed(reason, explain(reason, key: key)) }
        let session = OutboundDataSession(key: key, type: type, engine: self)
        outboundSessions[key] = session
        observer.logger.debug("outbound data session opened", metadata: SessionLayerObserver.metadata(key, type: type))
        wake()
        return session
    }

    func outboundSession(_ key: SessionKey) -> OutboundDataSession? { outboundSessions[key] }

    func outboundCloseReason(_ key: SessionKey) -> DataSessionCloseReason? { machine.outboundCloseReason(key) }

    func changeDestination(_ key: SessionKey, to peer: PeerID?) -> Bool { machine.changeDestination(key, to: peer) }

    func makeInbound(_ key: SessionKey, expecting type: SessionType?) throws(ConduitError) -> InboundDataSession {
        guard key.streamID.isValid else { throw .creationFailed(.invalidId, explain(.invalidId, key: key)) }
        let announced = machine.inboundType(key)
        let session = InboundDataSession(key: key, type: announced ?? type ?? .reliableMessage, bufferBytes: configuration.inboundBufferBytes)
        let previous = inboundSessions[key]
        if !machine.isInboundAccepted(key) { inboundSessions[key] = session }
        let reason = machine.makeInbound(key, expectedType: type)
        guard reason == .none else {
            inboundSessions[key] = previous
            throw .creationFailed(reason, explain(reason, key: key))
        }
        observer.logger.debug("inbound data session opened", metadata: SessionLayerObserver.metadata(key, type: session.type))
        dispatchEvents()
        return session
    }

    func inboundSession(_ key: SessionKey) -> InboundDataSession? { inboundSessions[key] }

    func unsupportInbound(_ key: SessionKey) {
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
                return true
            case .failed(let error):
                throw error
            case .queueFull:
                dispatchEvents()
                scheduleTimer()
                guard wait else { return false }
                await withCheckedContinuation { sendWaiters[key, default: []].append($0) }
            }
        }
    }

    func closeOutbound(_ key: SessionKey) {
        machine.closeOutbound(key)
        dispatchEvents()
        wake()
    }

    func subscribe(_ name: SubgroupName, dataSession: Bool) async -> Bool {
        if machine.isSubscribed(name) { return true }
        guard machine.isConnected else { return false }
        machine.subscribe(name, dataSession: dataSession)
        wake()
        return await withCheckedContinuation { subscribeWaiters[name, default: []].append($0) }
    }

    func unsubscribe(_ name: SubgroupName) {
        machine.unsubscribe(name)
        dispatchEvents()
        wake()
    }

    func sendExtension(_ id: UInt8, to peer: PeerID, body: [UInt8]) -> Bool {
        defer { wake() }
        return machine.sendExtension(id, to: peer, body: body)
    }

    /// Sends an extension message to the relay itself (invitation requests).
    func sendRelayExtension(_ id: UInt8, body: [UInt8]) -> Bool {
        defer { wake() }
        return machine.sendRelayExtension(id, body: body)
    }

    var localPeer: PeerID { machine.localPeer }

    // MARK: Data tracks

    func publishTrack(_ name: ChannelLabel, reliability: Reliability) async -> Bool {
        guard machine.publishTrack(name, reliability: reliability) else { return false }
        wake()
        return await withCheckedContinuation { publishWaiters[name, default: []].append($0) }
    }

    func unpublishTrack(_ name: ChannelLabel) {
        machine.unpublishTrack(name)
        wake()
    }

    func sendTrack(_ name: ChannelLabel, bytes: [UInt8]) throws(ConduitError) -> Bool {
        switch machine.sendTrack(name, bytes: bytes, now: now()) {
        case .queued:
            wake()
            return true
        case .queueFull:
            wake()
            return false
        case .failed(let error):
            throw error
        }
    }

    func subscribeTrack(_ name: ChannelLabel, of publisher: PeerID) async -> RemoteDataTrack? {
        let key = TrackKey(name: name, publisher: publisher)
        if let existing = remoteTracks[key] { return existing }
        guard machine.subscribeTrack(name, of: publisher) else { return nil }
        let track = RemoteDataTrack(name: name, publisher: publisher, bufferBytes: configuration.inboundBufferBytes)
        remoteTracks[key] = track
        wake()
        let confirmed = await withCheckedContinuation { trackSubscribeWaiters[key, default: []].append($0) }
        return confirmed ? track : nil
    }

    func unsubscribeTrack(_ name: ChannelLabel, of publisher: PeerID) {
        machine.unsubscribeTrack(name, of: publisher)
        remoteTracks.removeValue(forKey: TrackKey(name: name, publisher: publisher))?.channel.finish()
        wake()
    }

    // MARK: Labeled channels

    func sendChannel(_ label: ChannelLabel, bytes: [UInt8]) throws(ConduitError) -> Bool {
        let compress = machine.channels[label]?.declaration.compress ?? false
        switch machine.sendChannel(label, bytes: compress ? Zlib.compress(bytes) : bytes, compressed: compress, now: now()) {
        case .queued:
            wake()
            return true
        case .queueFull:
            wake()
            return false
        case .failed(let error):
            throw error
        }
    }

    var channels: [ChannelLabel: ChannelInfo] { machine.channels }

    func leave() async {
        machine.leave()
        dispatchEvents()
        wake()
        guard !linkIsClosed else { return }
        await withCheckedContinuation { closedWaiters.append($0) }
    }

    var peers: [PeerID] { machine.members.values.sorted { $0.member < $1.member }.map(\.peer) }
    var isEnded: Bool { machine.isEnded }
    var statistics: ConferenceStatistics { machine.statistics }

    private func explain(_ reason: DataSessionFailReason, key: SessionKey) -> String {
        switch reason {
        case .none: "created"
        case .invalidId: "stream ID \(key.streamID) is outside 100...999"
        case .alreadyExist: "a session for \(key) already exists in this direction"
        case .notIncoming: "no dataSessionIncoming event was received for \(key)"
        case .invalidType: "the session type does not match the type the sender announced for \(key)"
        case .internal:
            if machine.isEnded { "the conference has ended" }
            else if let subgroup = key.subgroup, !machine.isSubscribed(subgroup) { "not subscribed to subgroup \(subgroup)" }
            else if key.subgroup != nil { "subgroup \(key.subgroup!) does not carry data sessions (its dataSession attribute is false)" }
            else { "this side does not support data sessions" }
        }
    }
}

import DequeModule

/// The sans-IO state machine of one call between two peers over one transport link.
///
/// It follows quinn-proto's contract: the driver feeds it datagrams (``handle(batch:now:)``),
/// app commands (`make…`, ``enqueue(_:bytes:timestamp:now:)``), and the passing of time, then
/// drains its output: frames to transmit (``pollTransmit(now:into:maxBytes:)``), events to
/// dispatch (``pollEvent()``), and when to call it again (``nextDeadline(now:)``). It owns no socket,
/// reads no clock, and never blocks, so every behaviour is testable with virtual time.
public struct CallMachine: Sendable {
    /// Where the call is in its life.
    public enum Phase: Sendable, Hashable {
        /// Our hello is out; waiting for the peer's.
        case handshaking
        /// Both sides said hello.
        case connected(peer: PeerID, peerSupportsDataSessions: Bool)
        /// The call ended, with why.
        case ended(DisconnectReason)
    }

    /// This side's peer ID.
    public let localPeer: PeerID
    /// Fragment size, rate cap, queue and buffer caps.
    public private(set) var configuration: CallConfiguration
    /// Handshaking, connected or ended.
    public internal(set) var phase: Phase = .handshaking
    /// Counters of what the call received, delivered, sent and dropped.
    public internal(set) var statistics = CallStatistics()

    var outbound: [SessionKey: OutboundSessionState] = [:]
    /// Round-robin order of outbound sessions, so one busy stream cannot starve the others.
    var outboundOrder: [SessionKey] = []
    var nextOutboundIndex = 0
    var inbound: [SessionKey: InboundSessionState] = [:]
    /// Streams this side told the peer it does not support.
    var locallyUnsupported: Set<SessionKey> = []
    var reassembler: Reassembler
    var controlOut = Deque<[UInt8]>()
    var events = Deque<CallEvent>()
    /// Set when a send lands in an empty queue (see ``takeQueueHeadAdded()``).
    var queueHeadAdded = false
    var localSubgroupIDs: [SubgroupName: UInt16] = [:]
    var remoteSubgroups: [UInt16: SubgroupName] = [:]
    /// Subgroups a peer may announce; past this, its frames for new ones are dropped and counted.
    public static let maxRemoteSubgroups = 256

    /// Starts a call as `localPeer`: the hello is queued for the first ``pollTransmit(now:into:maxBytes:)``.
    public init(localPeer: PeerID, configuration: CallConfiguration = .init()) {
        precondition(configuration.fragmentSize > 0 && configuration.fragmentSize <= Int(UInt16.max), "fragment size must be 1...65535")
        self.localPeer = localPeer
        self.configuration = configuration
        self.reassembler = Reassembler(configuration: configuration.reassembly)
        controlOut.append(ControlFrame.hello(peer: localPeer, dataSessionsSupported: configuration.dataSessionsSupported).encoded)
    }

    /// Whether both sides said hello and the call has not ended.
    public var isConnected: Bool {
        if case .connected = phase { return true }
        return false
    }

    /// Whether the call ended.
    public var isEnded: Bool {
        if case .ended = phase { return true }
        return false
    }

    /// The next event for the driver, or nil when there is none.
    public mutating func pollEvent() -> CallEvent? { events.popFirst() }

    /// Whether a send landed in an empty queue since the last call: only then can
    /// ``nextTimeout()`` and ``nextTransmit(now:)`` have moved earlier because of sends, so a
    /// driver re-arms its timers after a send only when this says so (both walk every session).
    public mutating func takeQueueHeadAdded() -> Bool {
        defer { queueHeadAdded = false }
        return queueHeadAdded
    }

    // MARK: Sender side

    /// LINE Planet `makeOutboundDataSession`: `.none` on success, else why not.
    public mutating func makeOutbound(_ key: SessionKey, type: SessionType, now: ConduitInstant) -> DataSessionFailReason {
        guard key.streamID.isValid else { return .invalidId }
        guard case .connected(_, let peerSupports) = phase, peerSupports, configuration.dataSessionsSupported else {
            return .internal
        }
        guard outbound[key] == nil else { return .alreadyExist }
        outbound[key] = OutboundSessionState(type: type, configuration: configuration, now: now)
        outboundOrder.append(key)
        let subgroupID = localSubgroupID(for: key.subgroup)
        controlOut.append(ControlFrame.sessionOpen(streamID: key.streamID, subgroupID: subgroupID, subgroup: key.subgroup, type: type).encoded)
        return .none
    }

    /// The type of outbound session `key`, or nil if there is none.
    public func outboundType(_ key: SessionKey) -> SessionType? { outbound[key]?.type }

    /// Why outbound session `key` closed, or nil while it is open (or unknown).
    public func outboundCloseReason(_ key: SessionKey) -> DataSessionCloseReason? { outbound[key]?.closeReason }

    /// Offers one `send` to a session's queue. Sizes and state are checked here, so an oversize or
    /// closed send fails at the call instead of vanishing later.
    public mutating func enqueue(_ key: SessionKey, bytes: [UInt8], timestamp: UInt64, now: ConduitInstant) -> EnqueueResult {
        // Read scalars only, then mutate the dictionary entry in place: a copied-out session
        // would share its queue's storage, and appending would copy the whole queue on every send.
        guard let index = outbound.index(forKey: key) else {
            return .failed(ConduitError(.sessionClosed, "no outbound session for \(key)", closeReason: .internal))
        }
        let state = { (session: inout OutboundSessionState) in
            (type: session.type, closeReason: session.closeReason, isClosing: session.isClosing,
             queueIsEmpty: session.queue.isEmpty, queuedBytes: session.queuedBytes, nextMessageID: session.nextMessageID)
        }(&outbound.values[index])
        if let reason = state.closeReason { return .failed(.closed(reason)) }
        if state.isClosing { return .failed(.closed(.sessionEnd)) }
        guard bytes.count <= state.type.maxSendSize else {
            return .failed(ConduitError(
                .messageTooLarge,
                "\(bytes.count) bytes exceed the \(state.type.maxSendSize)-byte limit of a \(state.type) send"
            ))
        }
        if !state.queueIsEmpty, state.queuedBytes + bytes.count > configuration.maxQueuedBytesPerSession {
            outbound.values[index].senderIsWaiting = true
            updateDelay(key, now: now)
            return .queueFull
        }
        let messageID = state.nextMessageID
        let type = state.type
        let fragmenter = Fragmenter(
            streamID: key.streamID,
            sessionType: type,
            subgroupID: localSubgroupID(for: key.subgroup),
            messageID: messageID,
            totalLength: bytes.count,
            fragmentSize: configuration.fragmentSize,
            timestamp: timestamp
        )
        // The entry is changed in place through its index (no key was added or removed since).
        outbound.values[index].nextMessageID &+= 1
        outbound.values[index].queue.append(.init(bytes: bytes, fragmenter: fragmenter, enqueuedAt: now))
        outbound.values[index].queuedBytes += bytes.count
        if state.queueIsEmpty { queueHeadAdded = true }
        updateDelay(key, now: now)
        return .queued(messageID: messageID)
    }

    /// Closes an outbound session gracefully, as `RTCDataChannel.close()` does: sends are refused
    /// from now on, messages already accepted are still sent, and then the receiver's inbound
    /// session closes with `sessionEnd` after the last of them. `outboundClosed` fires at that point.
    /// (Ending the whole call, by contrast, discards what is still queued.)
    public mutating func closeOutbound(_ key: SessionKey) {
        guard let session = outbound[key], session.acceptsSends else { return }
        outbound[key]!.isClosing = true
        if session.queue.isEmpty {
            finishClosing(key)
        } else if session.senderIsWaiting {
            // A sender waiting for room must learn now that no more sends are taken.
            outbound[key]!.senderIsWaiting = false
            events.append(.sendQueueHasRoom(key))
        }
    }

    /// The closing session's queue has drained: announce the close after its last data frame.
    mutating func finishClosing(_ key: SessionKey) {
        closeOutbound(key, reason: .sessionEnd)
        if !isEnded {
            controlOut.append(ControlFrame.sessionClose(streamID: key.streamID, subgroupID: localSubgroupID(for: key.subgroup), reason: .sessionEnd).encoded)
        }
    }

    mutating func closeOutbound(_ key: SessionKey, reason: DataSessionCloseReason) {
        guard var session = outbound[key], session.isOpen else { return }
        session.closeReason = reason
        session.queue.removeAll()
        session.queuedBytes = 0
        let wasWaiting = session.senderIsWaiting
        session.senderIsWaiting = false
        outbound[key] = session
        events.append(.outboundClosed(key, reason))
        if wasWaiting { events.append(.sendQueueHasRoom(key)) }
    }

    // MARK: Receiver side

    /// LINE Planet `makeInboundDataSession`. `expectedType`, when given, must match what the
    /// sender announced (else `invalidType`).
    public mutating func makeInbound(_ key: SessionKey, expectedType: SessionType? = nil) -> DataSessionFailReason {
        guard key.streamID.isValid else { return .invalidId }
        guard isConnected else { return .internal }
        guard var session = inbound[key] else { return .notIncoming }
        guard !session.isAccepted else { return .alreadyExist }
        if let expectedType, expectedType != session.type { return .invalidType }
        session.isAccepted = true
        while let delivery = session.pending.popFirst() { emitDelivery(key, delivery) }
        session.pendingBytes = 0
        inbound[key] = session
        if let reason = session.closeReason { events.append(.inboundClosed(key, reason)) }
        return .none
    }

    /// The type of inbound session `key` as announced, or nil if none was announced.
    public func inboundType(_ key: SessionKey) -> SessionType? { inbound[key]?.type }

    /// Whether the app made inbound session `key`.
    public func isInboundAccepted(_ key: SessionKey) -> Bool { inbound[key]?.isAccepted ?? false }

    /// LINE Planet `unsupportInboundDataSession`: tells the sender this side cannot handle the
    /// stream. In a 1:1 call the sender's session closes with `unsupported`.
    public mutating func unsupportInbound(_ key: SessionKey) {
        guard key.streamID.isValid, !locallyUnsupported.contains(key) else { return }
        locallyUnsupported.insert(key)
        if let session = inbound.removeValue(forKey: key), session.isAccepted, session.closeReason == nil {
            events.append(.inboundClosed(key, .unsupported))
        }
        // A subgroup the peer has not announced has no wire ID yet: remember the refusal and
        // answer the peer's open when it comes (see `handleControl`).
        guard let subgroupID = remoteSubgroupID(for: key.subgroup) else { return }
        reassembler.discard(streamID: key.streamID, subgroupID: subgroupID)
        if !isEnded {
            controlOut.append(ControlFrame.sessionUnsupported(streamID: key.streamID, subgroupID: subgroupID).encoded)
        }
    }

    // MARK: Call lifetime

    /// Hangs up: every session closes with `sessionEnd` and a goodbye goes to the peer.
    public mutating func hangUp() {
        guard !isEnded else { return }
        controlOut.append(ControlFrame.goodbye.encoded)
        end(.localHangUp)
    }

    /// The transport closed under the call.
    public mutating func linkClosed() {
        guard !isEnded else { return }
        controlOut.removeAll()
        end(.transportClosed)
    }

    /// Ends the call. Sessions close with `sessionEnd` when the call ended as agreed (a hang-up on
    /// either side) and with `internal` when it broke under them (the transport failed without a
    /// goodbye), so an app can tell a finished exchange from a lost one.
    mutating func end(_ reason: DisconnectReason) {
        phase = .ended(reason)
        let sessionReason: DataSessionCloseReason = switch reason {
        case .localHangUp, .remoteHangUp: .sessionEnd
        case .transportClosed, .protocolError: .internal
        }
        for key in outboundOrder { closeOutbound(key, reason: sessionReason) }
        for (key, session) in inbound.sorted(by: { $0.key.streamID < $1.key.streamID }) where session.isAccepted && session.closeReason == nil {
            events.append(.inboundClosed(key, sessionReason))
        }
        inbound.removeAll()
        events.append(.disconnected(reason))
    }

    // MARK: Subgroup numbering

    mutating func localSubgroupID(for name: SubgroupName?) -> UInt16 {
        guard let name else { return 0 }
        if let id = localSubgroupIDs[name] { return id }
        let id = UInt16(truncatingIfNeeded: localSubgroupIDs.count + 1)
        localSubgroupIDs[name] = id
        return id
    }

    /// The peer's wire ID for a subgroup: 0 for the main room, nil if the peer never announced it.
    func remoteSubgroupID(for name: SubgroupName?) -> UInt16? {
        guard let name else { return 0 }
        return remoteSubgroups.first(where: { $0.value == name })?.key
    }
}

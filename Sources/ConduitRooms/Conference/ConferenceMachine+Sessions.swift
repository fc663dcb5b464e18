public import ConduitCore

extension ConferenceMachine {
    // MARK: Sender side

    /// `makeOutboundDataSession` of a conference or subgroup. A subgroup session needs this side
    /// subscribed to a subgroup whose `dataSession` attribute is true (else `internal`).
    public mutating func makeOutbound(_ key: SessionKey, type: SessionType, now: ConduitInstant) -> DataSessionFailReason {
        guard key.streamID.isValid else { return .invalidId }
        guard isConnected, configuration.session.dataSessionsSupported else { return .internal }
        var subgroupID: UInt16 = 0
        if let name = key.subgroup {
            guard let id = subgroupIDs[name], subgroupDataSession[name] == true else { return .internal }
            subgroupID = id
        }
        if let existing = outbound[key] {
            guard existing.state.closeReason != nil else { return .alreadyExist }
            // A subgroup session closed by leaving the subgroup may be made again after rejoining.
            outboundOrder.removeAll { $0 == key }
        }
        outbound[key] = ConferenceOutbound(state: OutboundSessionState(type: type, configuration: configuration.session, now: now))
        outboundOrder.append(key)
        sendRouted(to: 0, ControlFrame.sessionOpen(streamID: key.streamID, subgroupID: subgroupID, subgroup: key.subgroup, type: type).encoded)
        return .none
    }

    /// LINE Planet `changeDestination`: later messages go to `peer` only, or to everyone in the
    /// session's scope (the room, or the subgroup) when nil. False if the session is not open or
    /// the peer is not in the room.
    public mutating func changeDestination(_ key: SessionKey, to peer: PeerID?) -> Bool {
        guard outbound[key]?.state.acceptsSends == true else { return false }
        guard let peer else {
            outbound[key]!.destination = 0
            return true
        }
        guard let member = member(for: peer) else { return false }
        outbound[key]!.destination = member
        return true
    }

    /// Where an outbound session sends: a peer, or nil for everyone in scope (also for an unknown session).
    public func destination(of key: SessionKey) -> PeerID? {
        guard let member = outbound[key]?.destination, member != 0 else { return nil }
        return members[member]?.peer
    }

    /// The type of outbound session `key`, or nil if there is none.
    public func outboundType(_ key: SessionKey) -> SessionType? { outbound[key]?.state.type }

    /// Why outbound session `key` closed, or nil while it is open (or unknown).
    public func outboundCloseReason(_ key: SessionKey) -> DataSessionCloseReason? { outbound[key]?.state.closeReason }

    /// Offers one `send`: size and state are checked now, as for a 1:1 call.
    public mutating func enqueue(_ key: SessionKey, bytes: [UInt8], timestamp: UInt64, now: ConduitInstant) -> EnqueueResult {
        guard let session = outbound[key].map({ (type: $0.state.type, closeReason: $0.state.closeReason, isClosing: $0.state.isClosing,
                                                 queueIsEmpty: $0.state.queue.isEmpty, queuedBytes: $0.state.queuedBytes,
                                                 nextMessageID: $0.state.nextMessageID, destination: $0.destination) })
        else {
            return .failed(ConduitError(.sessionClosed, "no outbound session for \(key)", closeReason: .internal))
        }
        if let reason = session.closeReason { return .failed(.closed(reason)) }
        if session.isClosing { return .failed(.closed(.sessionEnd)) }
        guard bytes.count <= session.type.maxSendSize else {
            return .failed(ConduitError(.messageTooLarge, "\(bytes.count) bytes exceed the \(session.type.maxSendSize)-byte limit of a \(session.type) send"))
        }
        if !session.queueIsEmpty, session.queuedBytes + bytes.count > configuration.session.maxQueuedBytesPerSession {
            outbound[key]!.state.senderIsWaiting = true
            updateDelay(key, now: now)
            return .queueFull
        }
        let fragmenter = Fragmenter(
            streamID: key.streamID,
            sessionType: session.type,
            subgroupID: key.subgroup.flatMap { subgroupIDs[$0] } ?? 0,
            messageID: session.nextMessageID,
            totalLength: bytes.count,
            fragmentSize: configuration.session.fragmentSize,
            timestamp: timestamp
        )
        outbound[key]!.state.nextMessageID &+= 1
        outbound[key]!.state.queue.append(.init(bytes: bytes, fragmenter: fragmenter, enqueuedAt: now))
        outbound[key]!.destinations.append(session.destination)
        outbound[key]!.state.queuedBytes += bytes.count
        updateDelay(key, now: now)
        return .queued(messageID: session.nextMessageID)
    }

    /// Closes an outbound session gracefully: queued messages still go, then the close.
    public mutating func closeOutbound(_ key: SessionKey) {
        guard let session = outbound[key], session.state.acceptsSends else { return }
        outbound[key]!.state.isClosing = true
        if session.state.queue.isEmpty {
            finishClosing(key)
        } else if session.state.senderIsWaiting {
            outbound[key]!.state.senderIsWaiting = false
            events.append(.sendQueueHasRoom(key))
        }
    }

    mutating func finishClosing(_ key: SessionKey) {
        closeOutbound(key, reason: .sessionEnd)
        guard !isEnded else { return }
        let subgroupID = key.subgroup.flatMap { subgroupIDs[$0] } ?? 0
        guard key.subgroup == nil || subgroupID != 0 else { return }
        sendRouted(to: 0, ControlFrame.sessionClose(streamID: key.streamID, subgroupID: subgroupID, reason: .sessionEnd).encoded)
    }

    mutating func closeOutbound(_ key: SessionKey, reason: DataSessionCloseReason) {
        guard var session = outbound[key], session.state.isOpen else { return }
        session.state.closeReason = reason
        session.state.queue.removeAll()
        session.destinations.removeAll()
        session.state.queuedBytes = 0
        let wasWaiting = session.state.senderIsWaiting
        session.state.senderIsWaiting = false
        outbound[key] = session
        events.append(.outboundClosed(key, reason))
        if wasWaiting { events.append(.sendQueueHasRoom(key)) }
    }

    mutating func updateDelay(_ key: SessionKey, now: ConduitInstant) {
        let delay = outbound[key]!.state.queueingDelay(now: now)
        if let enabled = outbound[key]!.state.delayMonitor.update(delay: delay) {
            events.append(.tooLongQueuedData(key, enabled: enabled))
        }
    }

    // MARK: Receiver side

    /// `makeInboundDataSession`: after `dataSessionIncoming` for `key`.
    public mutating func makeInbound(_ key: SessionKey, expectedType: SessionType? = nil) -> DataSessionFailReason {
        guard key.streamID.isValid else { return .invalidId }
        guard isConnected else { return .internal }
        guard var session = inbound[key] else { return .notIncoming }
        guard !session.isAccepted else { return .alreadyExist }
        if let expectedType, expectedType != session.type { return .invalidType }
        session.isAccepted = true
        let held = session.pending
        session.pending.removeAll()
        session.pendingBytes = 0
        inbound[key] = session
        for (sender, delivery) in held { emitDelivery(key, from: sender, delivery) }
        if let reason = session.closeReason { events.append(.inboundClosed(key, reason)) }
        return .none
    }

    /// The type of inbound session `key` as announced, or nil if none was announced.
    public func inboundType(_ key: SessionKey) -> SessionType? { inbound[key]?.type }

    /// Whether the app made inbound session `key`.
    public func isInboundAccepted(_ key: SessionKey) -> Bool { inbound[key]?.isAccepted ?? false }

    /// `unsupportInboundDataSession` in a group call: this receiver stops getting the stream (the
    /// relay stops forwarding it here); the senders keep sending to everyone else.
    public mutating func unsupportInbound(_ key: SessionKey) {
        guard key.streamID.isValid, !locallyUnsupported.contains(key) else { return }
        locallyUnsupported.insert(key)
        if let session = inbound.removeValue(forKey: key), session.isAccepted, session.closeReason == nil {
            events.append(.inboundClosed(key, .unsupported))
        }
        let subgroupID: UInt16? = key.subgroup.map { subgroupIDs[$0] } ?? 0
        guard let subgroupID, isConnected else { return }
        sendRouted(to: 0, ControlFrame.sessionUnsupported(streamID: key.streamID, subgroupID: subgroupID).encoded)
    }

    mutating func sendRouted(to member: UInt16, _ inner: [UInt8]) {
        controlOut.append(RelayEnvelope.wrap(.routed, member: member, inner))
    }
}

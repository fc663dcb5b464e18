/// The send side's life: open, queue (with the checks that make a bad send fail at the call),
/// change destination, close gracefully, close now.
extension SessionLayer {
    /// Opens outbound session `key` (replacing a closed one with the same key) and queues its open.
    /// `subgroupID` is the subgroup's wire number, fixed for the session's life.
    package mutating func openOutbound(_ key: SessionKey, type: SessionType, subgroupID: UInt16, options: OutboundSessionOptions, now: ConduitInstant) {
        if outbound[key] != nil { outboundOrder.removeAll { $0 == key } }
        outbound[key] = OutboundSessionState(
            type: type, subgroupID: subgroupID, configuration: configuration, options: options, now: now,
            tag: .session(stream: key.streamID, subgroupID: subgroupID, type: type, priority: options.priority)
        )
        outboundOrder.append(key)
        sendSessionControl(
            .sessionOpen(streamID: key.streamID, subgroupID: subgroupID, subgroup: key.subgroup, type: type),
            stream: key.streamID, subgroupID: subgroupID, priority: options.priority
        )
    }

    /// The type of outbound session `key`, or nil if there is none.
    package func outboundType(_ key: SessionKey) -> SessionType? { outbound[key]?.type }

    /// Why outbound session `key` closed, or nil while it is open (or unknown).
    package func outboundCloseReason(_ key: SessionKey) -> DataSessionCloseReason? { outbound[key]?.closeReason }

    /// Where session `key`'s later messages go (the host's number; 0 for everyone in scope).
    /// False if the session does not take sends.
    package mutating func setDestination(_ key: SessionKey, _ destination: UInt16) -> Bool {
        guard outbound[key]?.acceptsSends == true else { return false }
        outbound[key]!.destination = destination
        return true
    }

    /// Where session `key`'s new messages go (0 for everyone in scope, or an unknown session).
    package func destination(of key: SessionKey) -> UInt16 { outbound[key]?.destination ?? 0 }

    /// Offers one `send` to a session's queue. Sizes and state are checked here, so an oversize or
    /// closed send fails at the call instead of vanishing later. The message keeps the session's
    /// destination as it is now, so changing it never splits a message.
    package mutating func enqueue(_ key: SessionKey, bytes: [UInt8], timestamp: UInt64, now: ConduitInstant) -> EnqueueResult {
        // Read scalars only, then mutate the dictionary entry in place: a copied-out session
        // would share its queue's storage, and appending would copy the whole queue on every send.
        guard let index = outbound.index(forKey: key) else {
            return .failed(ConduitError(.sessionClosed, "no outbound session for \(key)", closeReason: .internal))
        }
        let state = { (session: inout OutboundSessionState) in
            (type: session.type, closeReason: session.closeReason, isClosing: session.isClosing, queueIsEmpty: session.queue.isEmpty,
             queuedBytes: session.queuedBytes, nextMessageID: session.nextMessageID, subgroupID: session.subgroupID, destination: session.destination)
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
        let fragmenter = Fragmenter(
            streamID: key.streamID,
            sessionType: state.type,
            subgroupID: state.subgroupID,
            messageID: messageID,
            totalLength: bytes.count,
            fragmentSize: fragmentSize,
            timestamp: timestamp
        )
        // The entry is changed in place through its index (no key was added or removed since).
        outbound.values[index].nextMessageID &+= 1
        outbound.values[index].queue.append(.init(bytes: bytes, fragmenter: fragmenter, enqueuedAt: now, destination: state.destination))
        outbound.values[index].queuedBytes += bytes.count
        if state.queueIsEmpty { queueHeadAdded = true }
        updateDelay(key, now: now)
        return .queued(messageID: messageID)
    }

    /// Cuts messages queued from now on to `size` bytes (1...65,535; at least the configuration's
    /// `fragmentSize`): the link found that its path carries frames that large whole. Messages
    /// already queued keep the size they were cut to (a message's fragment size is in each of its
    /// data frame headers, so a receiver needs nothing more).
    package mutating func setFragmentSize(_ size: Int) {
        fragmentSize = min(Int(UInt16.max), max(configuration.fragmentSize, size))
    }

    /// Closes an outbound session gracefully, as `RTCDataChannel.close()` does: sends are refused
    /// from now on, messages already accepted are still sent, and then the close goes out after
    /// the last of them. `outboundClosed` fires at that point.
    package mutating func closeOutbound(_ key: SessionKey) {
        guard let session = outbound[key], session.acceptsSends else { return }
        outbound[key]!.isClosing = true
        if session.queue.isEmpty {
            finishClosing(key)
        } else if session.senderIsWaiting {
            // A sender waiting for room must learn now that no more sends are taken.
            outbound[key]!.senderIsWaiting = false
            events.append(Host.sendQueueHasRoom(key))
        }
    }

    /// The closing session's queue has drained: announce the close after its last data frame.
    mutating func finishClosing(_ key: SessionKey) {
        closeOutbound(key, reason: .sessionEnd)
        guard !isEnded, let session = outbound[key] else { return }
        sendSessionControl(
            .sessionClose(streamID: key.streamID, subgroupID: session.subgroupID, reason: .sessionEnd),
            stream: key.streamID, subgroupID: session.subgroupID, priority: session.tag.priority
        )
    }

    /// Closes an outbound session now, discarding what it still has queued.
    package mutating func closeOutbound(_ key: SessionKey, reason: DataSessionCloseReason) {
        guard var session = outbound[key], session.isOpen else { return }
        session.closeReason = reason
        session.discardedMessages += session.queue.count
        session.queue.removeAll()
        session.queuedBytes = 0
        let wasWaiting = session.senderIsWaiting
        session.senderIsWaiting = false
        outbound[key] = session
        events.append(Host.outboundClosed(key, reason))
        if wasWaiting { events.append(Host.sendQueueHasRoom(key)) }
    }
}

/// The receive side: announce a stream once, hold what arrives until the app accepts it (bounded),
/// accept, unsupport, reassemble per sender, deliver.
extension SessionLayer {
    /// LINE Planet `makeInboundDataSession`. `expectedType`, when given, must match what the
    /// sender announced (else `invalidType`).
    /// After the host ended, a stream announced before the end can still be made: it delivers
    /// what it held, then closes with the end's reason.
    package mutating func makeInbound(_ key: SessionKey, expectedType: SessionType?, hostIsConnected: Bool) -> DataSessionFailReason {
        guard key.streamID.isValid else { return .invalidId }
        guard hostIsConnected || (isEnded && inbound[key]?.isAccepted == false) else { return .internal }
        guard var session = inbound[key] else { return .notIncoming }
        guard !session.isAccepted else { return .alreadyExist }
        if let expectedType, expectedType != session.type { return .invalidType }
        session.isAccepted = true
        while let held = session.pending.popFirst() { emitDelivery(key, from: held.sender, held.delivery) }
        pendingBytesTotal -= session.pendingBytes
        session.pendingBytes = 0
        holdingBeyondLimit.remove(key)
        if let reason = session.closeReason, isEnded {
            // Drained after the end: nothing more can arrive, so the stream is forgotten.
            inbound[key] = nil
            events.append(Host.inboundClosed(key, reason))
            return .none
        }
        inbound[key] = session
        if let reason = session.closeReason { events.append(Host.inboundClosed(key, reason)) }
        return .none
    }

    /// Outbound session `key`'s counters and queue now, or nil if there is none.
    package func outboundStatistics(_ key: SessionKey, now: ConduitInstant) -> OutboundDataSessionStatistics? {
        outbound[key]?.statistics(now: now)
    }

    /// Announced stream `key`'s counters, or nil if it was never announced.
    package func inboundStatistics(_ key: SessionKey) -> InboundDataSessionStatistics? {
        guard var statistics = inboundStatistics[key] else { return nil }
        statistics.heldBytes = inbound[key]?.pendingBytes ?? 0
        return statistics
    }

    /// The type of inbound session `key` as announced, or nil if none was announced.
    package func inboundType(_ key: SessionKey) -> SessionType? { inbound[key]?.type }

    /// Whether the app made inbound session `key`.
    package func isInboundAccepted(_ key: SessionKey) -> Bool { inbound[key]?.isAccepted ?? false }

    /// Whether stream `key` was announced and this side did not decline it.
    package func isAnnounced(_ key: SessionKey) -> Bool { inbound[key] != nil && !locallyUnsupported.contains(key) }

    /// Whether this side declined stream `key`.
    func isUnsupported(_ key: SessionKey) -> Bool { !locallyUnsupported.isEmpty && locallyUnsupported.contains(key) }

    /// Declines stream `key` from now on: an accepted inbound session closes with `unsupported`.
    /// False if the key is invalid or was declined already (nothing to tell anyone).
    package mutating func unsupport(_ key: SessionKey) -> Bool {
        guard key.streamID.isValid, !locallyUnsupported.contains(key) else { return false }
        locallyUnsupported.insert(key)
        holdingBeyondLimit.remove(key)
        if let session = inbound.removeValue(forKey: key) {
            pendingBytesTotal -= session.pendingBytes
            if session.isAccepted, session.closeReason == nil { events.append(Host.inboundClosed(key, .unsupported)) }
        }
        return true
    }

    /// The sender closed inbound session `key`: the app hears of it if it accepted the session.
    mutating func closeInbound(_ key: SessionKey, reason: DataSessionCloseReason) {
        guard var session = inbound[key], session.closeReason == nil else { return }
        session.closeReason = reason
        inbound[key] = session
        if session.isAccepted { events.append(Host.inboundClosed(key, reason)) }
    }

    /// The peer opened a stream, or data for an unknown stream arrived first: tell the app once.
    package mutating func announce(_ key: SessionKey, type: SessionType, from sender: Host.Sender) {
        guard inbound[key] == nil, !locallyUnsupported.contains(key) else { return }
        inbound[key] = InboundSessionState(type: type)
        if inboundStatistics[key] == nil { inboundStatistics[key] = InboundDataSessionStatistics() }
        events.append(Host.incoming(key, type, from: sender))
    }

    /// Drops what `reassemblyKey`'s sender had half-sent on a stream (it closed or was declined).
    package mutating func discardReassembly(of reassemblyKey: UInt16, streamID: StreamID, subgroupID: UInt16) {
        reassemblers[reassemblyKey]?.discard(streamID: streamID, subgroupID: subgroupID)
    }

    /// One data frame of session `key` from `sender` (reassembled under `reassemblyKey`): delivered
    /// if the app accepted the session, held if not yet, dropped and counted if declined or closed.
    package mutating func receive(
        _ header: DataFrameHeader, payload: UnsafeRawBufferPointer, for key: SessionKey, from sender: Host.Sender, reassemblyKey: UInt16, now: ConduitInstant
    ) {
        if isUnsupported(key) {
            statistics.droppedUnsupported += 1
            return
        }
        // The session's state is read in place (a copy retains its queue of held deliveries).
        var index = inbound.index(forKey: key)
        if index == nil {
            announce(key, type: header.sessionType, from: sender)
            index = inbound.index(forKey: key)
        }
        let type = header.sessionType
        guard let index, let isAccepted = { (session: inout InboundSessionState<Host.Sender>) -> Bool? in
            session.closeReason == nil && session.type == type ? session.isAccepted : nil
        }(&inbound.values[index]) else {
            if let index, inbound.values[index].closeReason == nil {
                // Open, of another type: in a room, a second sender made the stream with another
                // type than the first announced (one session per stream holds one type).
                statistics.droppedWrongType += 1
                inboundStatistics[key, default: InboundDataSessionStatistics()].droppedWrongType += 1
            } else {
                statistics.droppedClosedSession += 1
                inboundStatistics[key, default: InboundDataSessionStatistics()].droppedAfterClose += 1
            }
            return
        }
        let delivery: InboundDelivery
        if type.isMessage {
            guard let message = reassemble(header, payload: payload, reassemblyKey: reassemblyKey, now: now) else { return }
            delivery = .message(bytes: message.bytes, timestamp: message.timestamp)
        } else {
            delivery = .fragment(ReceivedFragment(
                messageID: header.messageID,
                offset: Int(header.fragmentOffset),
                totalLength: Int(header.totalLength),
                fragmentSize: Int(header.fragmentSize),
                timestamp: header.timestamp,
                bytes: Array(payload),
                sender: Host.peer(of: sender)
            ))
        }
        if isAccepted {
            countReceived(key, bytes: delivery.bytes.count)
            emitDelivery(key, from: sender, delivery)
        } else {
            hold(key, from: sender, delivery)
        }
    }

    /// Feeds a message fragment to its sender's reassembler (made on first use, up to `maxSenders`).
    mutating func reassemble(_ header: DataFrameHeader, payload: UnsafeRawBufferPointer, reassemblyKey: UInt16, now: ConduitInstant) -> Reassembler.Message? {
        var index = reassemblers.index(forKey: reassemblyKey)
        if index == nil {
            guard reassemblers.count < maxSenders else {
                statistics.countSenderOverLimit()
                return nil
            }
            reassemblers[reassemblyKey] = Reassembler(configuration: configuration.reassembly)
            index = reassemblers.index(forKey: reassemblyKey)
        }
        // One hash per fragment and the reassembler changed in place: reading it back out of the
        // dictionary for its statistics copied it (a retain per buffer it holds), 3 % of a 1 KiB
        // message's CPU time in a profile of `conduit bench`.
        let (outcome, counts) = Self.ingest(header, payload: payload, now: now, into: &reassemblers.values[index!])
        statistics.noteReassembly(counts)
        guard case .complete(let message) = outcome else { return nil }
        return message
    }

    private static func ingest(_ header: DataFrameHeader, payload: UnsafeRawBufferPointer, now: ConduitInstant, into reassembler: inout Reassembler) -> (Reassembler.Outcome, Reassembler.Statistics) {
        let outcome = reassembler.ingest(header, payload: payload, now: now)
        return (outcome, reassembler.statistics)
    }

    /// Holds a delivery until the app makes the session. Past `maxPendingInboundBytes` (for the
    /// stream) or `maxPendingInboundBytesTotal` (for all of them), unreliable data is dropped and
    /// counted; reliable data is never dropped: it is held, and the session is
    /// marked so the host stops reading its link (the transport's flow control then holds the
    /// sender back) until the app makes or declines the session.
    mutating func hold(_ key: SessionKey, from sender: Host.Sender, _ delivery: InboundDelivery) {
        let size = delivery.bytes.count
        let reliable = inbound[key]!.type.isReliable
        let fits = inbound[key]!.pendingBytes + size <= configuration.maxPendingInboundBytes
            && pendingBytesTotal + size <= configuration.maxPendingInboundBytesTotal
        guard reliable || fits else {
            statistics.droppedPendingOverflow += 1
            inboundStatistics[key, default: InboundDataSessionStatistics()].droppedPendingOverflow += 1
            return
        }
        countReceived(key, bytes: size)
        inbound[key]!.pending.append((sender, delivery))
        inbound[key]!.pendingBytes += size
        pendingBytesTotal += size
        if reliable, inbound[key]!.pendingBytes >= configuration.maxPendingInboundBytes { holdingBeyondLimit.insert(key) }
    }

    private mutating func countReceived(_ key: SessionKey, bytes: Int) {
        // One hashed access per delivery (this runs for every message received).
        Self.add(bytes, to: &inboundStatistics[key, default: InboundDataSessionStatistics()])
    }

    private static func add(_ bytes: Int, to statistics: inout InboundDataSessionStatistics) {
        statistics.messagesReceived += 1
        statistics.bytesReceived += bytes
    }

    mutating func emitDelivery(_ key: SessionKey, from sender: Host.Sender, _ delivery: InboundDelivery) {
        switch delivery {
        case .message(let bytes, _):
            statistics.messagesDelivered += 1
            statistics.bytesDelivered += bytes.count
        case .fragment(let fragment):
            statistics.fragmentsDelivered += 1
            statistics.bytesDelivered += fragment.bytes.count
        }
        events.append(Host.received(key, from: sender, delivery))
    }
}

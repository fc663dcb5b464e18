extension CallMachine {
    /// Takes one datagram from the transport. Anything malformed or out of place is counted and
    /// dropped; nothing here throws or traps on peer input.
    public mutating func handle(datagram: UnsafeRawBufferPointer, now: ConduitInstant) {
        statistics.datagramsReceived += 1
        guard !isEnded else {
            statistics.droppedOutOfState += 1
            return
        }
        let kind: FrameKind
        do { kind = try FrameKind.peek(datagram) } catch {
            statistics.malformedDatagrams += 1
            return
        }
        switch kind {
        case .data:
            do {
                let (header, payload) = try DataFrameHeader.parse(datagram)
                handleData(header, payload: UnsafeRawBufferPointer(rebasing: datagram[payload]), now: now)
            } catch {
                statistics.malformedDatagrams += 1
            }
        case .control:
            do { handleControl(try ControlFrame.parse(datagram), now: now) } catch {
                statistics.malformedDatagrams += 1
            }
        }
    }

    /// Takes one datagram from the peer.
    public mutating func handle(datagram: [UInt8], now: ConduitInstant) {
        datagram.withUnsafeBytes { handle(datagram: $0, now: now) }
    }

    /// Takes every datagram of a batch.
    public mutating func handle(batch: DatagramBatch, now: ConduitInstant) {
        batch.forEachDatagram { handle(datagram: $0, now: now) }
    }

    mutating func handleControl(_ frame: ControlFrame, now: ConduitInstant) {
        if case .hello(let peer, let supported) = frame {
            if case .handshaking = phase {
                phase = .connected(peer: peer, peerSupportsDataSessions: supported)
                events.append(.connected(peer: peer, peerSupportsDataSessions: supported))
            }
            return
        }
        guard isConnected else {
            statistics.droppedOutOfState += 1
            return
        }
        switch frame {
        case .hello:
            break
        case .sessionOpen(let streamID, let subgroupID, let subgroup, let type):
            // A subgroup ID names one subgroup, and the main room is 0 and has no name.
            guard (subgroupID == 0) == (subgroup == nil) else {
                statistics.malformedDatagrams += 1
                return
            }
            if subgroupID != 0, let subgroup, remoteSubgroups[subgroupID] != subgroup {
                guard remoteSubgroups[subgroupID] == nil, remoteSubgroups.count < Self.maxRemoteSubgroups else {
                    statistics.droppedUnknownSubgroup += 1
                    return
                }
                remoteSubgroups[subgroupID] = subgroup
            }
            let key = SessionKey(streamID: streamID, subgroup: subgroup)
            if locallyUnsupported.contains(key) {
                // Declined before the sender opened it: tell the sender now.
                controlOut.append(ControlFrame.sessionUnsupported(streamID: streamID, subgroupID: subgroupID).encoded)
                return
            }
            announce(key, type: type)
        case .sessionUnsupported(let streamID, let subgroupID):
            let subgroup = localSubgroupIDs.first(where: { $0.value == subgroupID })?.key
            guard subgroupID == 0 || subgroup != nil else {
                statistics.droppedUnknownSubgroup += 1
                return
            }
            closeOutbound(SessionKey(streamID: streamID, subgroup: subgroup), reason: .unsupported)
        case .sessionClose(let streamID, let subgroupID, let reason):
            guard subgroupID == 0 || remoteSubgroups[subgroupID] != nil else {
                statistics.droppedUnknownSubgroup += 1
                return
            }
            let key = SessionKey(streamID: streamID, subgroup: remoteSubgroups[subgroupID])
            reassembler.discard(streamID: streamID, subgroupID: subgroupID)
            guard var session = inbound[key], session.closeReason == nil else { return }
            session.closeReason = reason
            inbound[key] = session
            if session.isAccepted { events.append(.inboundClosed(key, reason)) }
        case .goodbye:
            end(.remoteHangUp)
        }
    }

    /// The peer opened a stream, or data for an unknown stream arrived first: tell the app once.
    mutating func announce(_ key: SessionKey, type: SessionType) {
        guard inbound[key] == nil, !locallyUnsupported.contains(key) else { return }
        inbound[key] = InboundSessionState(type: type)
        events.append(.dataSessionIncoming(key, type))
    }

    mutating func handleData(_ header: DataFrameHeader, payload: UnsafeRawBufferPointer, now: ConduitInstant) {
        statistics.dataFramesReceived += 1
        guard isConnected else {
            statistics.droppedOutOfState += 1
            return
        }
        // Per frame: no hashing where a table is empty or the main room (subgroup 0) is meant, and
        // the session's state read in place (a copy retains its queue of held deliveries).
        let subgroup = header.subgroupID == 0 ? nil : remoteSubgroups[header.subgroupID]
        guard header.subgroupID == 0 || subgroup != nil else {
            statistics.droppedUnknownSubgroup += 1
            return
        }
        let key = SessionKey(streamID: header.streamID, subgroup: subgroup)
        if !locallyUnsupported.isEmpty, locallyUnsupported.contains(key) {
            statistics.droppedUnsupported += 1
            return
        }
        var index = inbound.index(forKey: key)
        if index == nil {
            announce(key, type: header.sessionType)
            index = inbound.index(forKey: key)
        }
        let type = header.sessionType
        guard let index, let isAccepted = { (session: inout InboundSessionState) -> Bool? in
            session.closeReason == nil && session.type == type ? session.isAccepted : nil
        }(&inbound.values[index]) else {
            statistics.droppedClosedSession += 1
            return
        }
        let delivery: InboundDelivery
        if header.sessionType.isMessage {
            let outcome = reassembler.ingest(header, payload: payload, now: now)
            statistics.reassembly = reassembler.statistics
            guard case .complete(let message) = outcome else { return }
            delivery = .message(bytes: message.bytes, timestamp: message.timestamp)
        } else {
            delivery = .fragment(ReceivedFragment(
                messageID: header.messageID,
                offset: Int(header.fragmentOffset),
                totalLength: Int(header.totalLength),
                fragmentSize: Int(header.fragmentSize),
                timestamp: header.timestamp,
                bytes: Array(payload)
            ))
        }
        if isAccepted {
            emitDelivery(key, delivery)
        } else {
            hold(key, delivery)
        }
    }

    mutating func hold(_ key: SessionKey, _ delivery: InboundDelivery) {
        let size = delivery.bytes.count
        guard inbound[key]!.pendingBytes + size <= configuration.maxPendingInboundBytes else {
            statistics.droppedPendingOverflow += 1
            return
        }
        inbound[key]!.pending.append(delivery)
        inbound[key]!.pendingBytes += size
    }

    mutating func emitDelivery(_ key: SessionKey, _ delivery: InboundDelivery) {
        switch delivery {
        case .message(let bytes, _):
            statistics.messagesDelivered += 1
            statistics.bytesDelivered += bytes.count
        case .fragment(let fragment):
            statistics.fragmentsDelivered += 1
            statistics.bytesDelivered += fragment.bytes.count
        }
        events.append(.received(key, delivery))
    }
}

public import ConduitCore

extension ConferenceMachine {
    /// One datagram from the relay. Malformed or out-of-place frames are counted and dropped.
    public mutating func handle(datagram: UnsafeRawBufferPointer, now: ConduitInstant) {
        statistics.datagramsReceived += 1
        guard !isEnded else {
            statistics.droppedOutOfState += 1
            return
        }
        switch RelayFrameKind.peek(datagram) {
        case .room?:
            do { handleRoomControl(try RoomControlFrame.parse(datagram), now: now) } catch {
                statistics.malformedDatagrams += 1
            }
        case .relayed?:
            handleRelayed(datagram, now: now)
        case .track?:
            handleTrackFrame(datagram, now: now)
        case .channel?:
            handleChannelFrame(datagram, now: now)
        case .routed?, nil:
            statistics.malformedDatagrams += 1
        }
    }

    /// Takes one datagram from the relay.
    public mutating func handle(datagram: [UInt8], now: ConduitInstant) {
        datagram.withUnsafeBytes { handle(datagram: $0, now: now) }
    }

    /// Takes a batch of datagrams from the relay.
    public mutating func handle(batch: DatagramBatch, now: ConduitInstant) {
        batch.forEachDatagram { handle(datagram: $0, now: now) }
    }

    mutating func handleRoomControl(_ frame: RoomControlFrame, now: ConduitInstant) {
        switch frame {
        case .joined(let member):
            guard joinedMember == nil else { return }
            joinedMember = member
            declareChannelsAfterJoining()
        case .channels(let infos):
            handleChannelsAnswer(infos)
        case .refused(let refusal, let text):
            controlOut.removeAll()
            end(.refused, "\(refusal): \(text)")
        case .disconnect(let reason, let text):
            controlOut.removeAll()
            end(reason, text)
        case .peers(let update):
            applyPeerList(update)
        case .subscribed(let name, let id, let dataSession):
            guard pendingSubscriptions.remove(name) != nil, subgroupNames[id] == nil else { return }
            subgroupIDs[name] = id
            subgroupNames[id] = name
            subgroupDataSession[name] = dataSession
            events.append(.subscribed(name, dataSession: dataSession))
        case .subscribeRefused(let name, let refusal):
            guard pendingSubscriptions.remove(name) != nil else { return }
            events.append(.subscribeRefused(name, refusal))
        case .unsubscribed:
            break
        case .extension(let id, let member, let body):
            if member == 0 {
                // From the relay itself (invitation replies and events).
                events.append(.relayExtensionReceived(id: id, body: body))
                return
            }
            guard let sender = members[member] else {
                statistics.droppedUnknownSender += 1
                return
            }
            events.append(.extensionReceived(id: id, from: sender.peer, body: body))
        case .trackPublished, .trackUnpublished, .trackSubscribed:
            handleTrackControl(frame)
        case .join, .snapshotRequest, .subscribe, .unsubscribe, .leave, .ping, .publishTrack, .unpublishTrack, .subscribeTrack, .unsubscribeTrack, .declareChannels:
            statistics.malformedDatagrams += 1
        }
    }

    /// Applies a peer-list frame: a snapshot replaces the list; the next version applies; a
    /// version past the next one means updates were missed, so a snapshot is asked for.
    mutating func applyPeerList(_ update: PeerListUpdate) {
        guard let me = joinedMember else {
            statistics.droppedOutOfState += 1
            return
        }
        var joined: [RoomMember] = []
        var left: [RoomMember] = []
        if update.isSnapshot {
            let incoming = Dictionary(update.joined.filter { $0.member != me }.map { ($0.member, $0) }, uniquingKeysWith: { a, _ in a })
            left = members.values.filter { incoming[$0.member] == nil }.sorted { $0.member < $1.member }
            joined = incoming.values.filter { members[$0.member] == nil }.sorted { $0.member < $1.member }
            members = incoming
            peerListVersion = update.version
            inSnapshot = true
            awaitingSnapshot = false
        } else if inSnapshot, update.version == peerListVersion {
            // The rest of a snapshot too large for one frame.
            for member in update.joined where member.member != me && members[member.member] == nil {
                members[member.member] = member
                joined.append(member)
            }
        } else if awaitingSnapshot {
            return
        } else if update.version == peerListVersion &+ 1 {
            inSnapshot = false
            peerListVersion = update.version
            for member in update.joined where member.member != me && members[member.member] == nil {
                members[member.member] = member
                joined.append(member)
            }
            for number in update.left {
                guard let member = members.removeValue(forKey: number) else { continue }
                left.append(member)
                reassemblers[number] = nil
                channelReassemblers = channelReassemblers.filter { $0.key >> 16 != UInt32(number) }
            }
        } else if linkSequenceIsAfter(update.version, peerListVersion) {
            statistics.peerListGaps += 1
            awaitingSnapshot = true
            controlOut.append(RoomControlFrame.snapshotRequest.encoded)
            return
        } else {
            return  // old news
        }
        for member in left { reassemblers[member.member] = nil }
        if case .joining = phase {
            phase = .connected(member: me)
            events.append(.connected(member: me, peers: members.values.sorted { $0.member < $1.member }))
        } else if !joined.isEmpty || !left.isEmpty {
            events.append(.peersChanged(joined: joined, left: left, version: peerListVersion))
        }
        // The relay coalesces peer lists but announces tracks at once, so a new peer's track can
        // arrive before the peer does (handleTrackControl keeps it without an event): announce it
        // now, after the peer.
        for member in joined {
            let tracks = announcedTracks.values.filter { $0.publisher == member.member }.sorted { $0.trackID < $1.trackID }
            for info in tracks { events.append(.trackPublished(info.name, by: member.peer, info.reliability)) }
        }
    }

    func linkSequenceIsAfter(_ a: UInt32, _ b: UInt32) -> Bool {
        let distance = a &- b
        return distance != 0 && distance < 1 << 31
    }

    mutating func handleRelayed(_ datagram: UnsafeRawBufferPointer, now: ConduitInstant) {
        guard isConnected else {
            statistics.droppedOutOfState += 1
            return
        }
        guard let envelope = try? RelayEnvelope.parse(datagram), envelope.kind == .relayed else {
            statistics.malformedDatagrams += 1
            return
        }
        guard let sender = members[envelope.member] else {
            statistics.droppedUnknownSender += 1
            return
        }
        let inner = UnsafeRawBufferPointer(rebasing: datagram[RelayEnvelope.size...])
        switch try? FrameKind.peek(inner) {
        case .data?:
            guard let (header, payload) = try? DataFrameHeader.parse(inner) else {
                statistics.malformedDatagrams += 1
                return
            }
            handleData(header, payload: UnsafeRawBufferPointer(rebasing: inner[payload]), from: envelope.member, peer: sender.peer, now: now)
        case .control?:
            guard let control = try? ControlFrame.parse(inner) else {
                statistics.malformedDatagrams += 1
                return
            }
            switch control {
            case .sessionOpen(let stream, let subgroupID, let name, let type):
                guard let key = sessionKey(stream, subgroupID), key.subgroup == name else { return }
                announce(key, type: type, from: sender.peer)
            case .sessionClose(let stream, let subgroupID, let reason):
                guard let key = sessionKey(stream, subgroupID) else { return }
                reassemblers[envelope.member]?.discard(streamID: stream, subgroupID: subgroupID)
                if inbound[key] != nil, !locallyUnsupported.contains(key) {
                    events.append(.senderSessionEnded(key, from: sender.peer, reason))
                }
            case .sessionUnsupported, .hello, .goodbye:
                statistics.malformedDatagrams += 1
            }
        case nil:
            statistics.malformedDatagrams += 1
        }
    }

    /// The session key for a wire subgroup ID, or nil (counted) if this side is not subscribed.
    mutating func sessionKey(_ stream: StreamID, _ subgroupID: UInt16) -> SessionKey? {
        guard subgroupID == 0 || subgroupNames[subgroupID] != nil else {
            statistics.droppedUnknownSubgroup += 1
            return nil
        }
        return SessionKey(streamID: stream, subgroup: subgroupNames[subgroupID])
    }

    mutating func announce(_ key: SessionKey, type: SessionType, from peer: PeerID) {
        guard inbound[key] == nil, !locallyUnsupported.contains(key) else { return }
        inbound[key] = ConferenceInbound(type: type)
        events.append(.dataSessionIncoming(key, type, from: peer))
    }

    mutating func handleData(_ header: DataFrameHeader, payload: UnsafeRawBufferPointer, from member: UInt16, peer: PeerID, now: ConduitInstant) {
        guard let key = sessionKey(header.streamID, header.subgroupID) else { return }
        if locallyUnsupported.contains(key) {
            statistics.droppedUnsupported += 1
            return
        }
        if inbound[key] == nil { announce(key, type: header.sessionType, from: peer) }
        guard let session = inbound[key], session.closeReason == nil, session.type == header.sessionType else {
            statistics.droppedClosedSession += 1
            return
        }
        let delivery: InboundDelivery
        if header.sessionType.isMessage {
            if reassemblers[member] == nil {
                guard reassemblers.count < configuration.maxSenders else {
                    statistics.droppedUnknownSender += 1
                    return
                }
                reassemblers[member] = Reassembler(configuration: configuration.session.reassembly)
            }
            guard case .complete(let message) = reassemblers[member]!.ingest(header, payload: payload, now: now) else { return }
            delivery = .message(bytes: message.bytes, timestamp: message.timestamp)
        } else {
            delivery = .fragment(ReceivedFragment(
                messageID: header.messageID,
                offset: Int(header.fragmentOffset),
                totalLength: Int(header.totalLength),
                fragmentSize: Int(header.fragmentSize),
                timestamp: header.timestamp,
                bytes: Array(payload),
                sender: peer
            ))
        }
        if session.isAccepted {
            emitDelivery(key, from: peer, delivery)
        } else {
            let size = delivery.bytes.count
            guard session.pendingBytes + size <= configuration.session.maxPendingInboundBytes else {
                statistics.droppedPendingOverflow += 1
                return
            }
            inbound[key]!.pending.append((peer, delivery))
            inbound[key]!.pendingBytes += size
        }
    }

    mutating func emitDelivery(_ key: SessionKey, from peer: PeerID, _ delivery: InboundDelivery) {
        switch delivery {
        case .message: statistics.messagesDelivered += 1
        case .fragment: statistics.fragmentsDelivered += 1
        }
        events.append(.received(key, from: peer, delivery))
    }
}

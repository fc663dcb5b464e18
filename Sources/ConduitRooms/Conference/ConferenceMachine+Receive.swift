public import ConduitCore
extension ConferenceMachine: DatagramHandling {
    /// One datagram from the relay. Malformed or out-of-place frames are counted and dropped.
    public mutating func handle(datagram: UnsafeRawBufferPointer, now: ConduitInstant) {
        guard sessions.admitDatagram() else { return }
        switch RelayFrameKind.peek(datagram) {
        case .room?:
            do { handleRoomControl(try RoomControlFrame.parse(datagram), now: now) } catch {
                sessions.statistics.malformedDatagrams += 1
            }
        case .relayed?:
            handleRelayed(datagram, now: now)
        case .track?:
            handleTrackFrame(datagram, now: now)
        case .channel?:
            handleChannelFrame(datagram, now: now)
        case .routed?, nil:
            sessions.statistics.malformedDatagrams += 1
        }
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
            sessions.controlOut.removeAll()
            end(.refused, "\(refusal): \(text)")
        case .disconnect(let reason, let text):
            sessions.controlOut.removeAll()
            end(reason, text)
        case .peers(let update):
            applyPeerList(update)
        case .subscribed(let name, let id, let dataSession):
            guard pendingSubscriptions.remove(name) != nil, subgroupNames[id] == nil else { return }
            subgroupIDs[name] = id
            subgroupNames[id] = name
            subgroupDataSession[name] = dataSession
            sessions.events.append(.subscribed(name, dataSession: dataSession))
        case .subscribeRefused(let name, let refusal):
            guard pendingSubscriptions.remove(name) != nil else { return }
            sessions.events.append(.subscribeRefused(name, refusal))
        case .unsubscribed:
            break
        case .extension(let id, let member, let body):
            if member == 0 {
                // From the relay itself (invitation replies and events).
                sessions.events.append(.relayExtensionReceived(id: id, body: body))
                return
            }
            guard let sender = members[member] else {
                sessions.statistics.droppedUnknownSender += 1
                return
            }
            sessions.events.append(.extensionReceived(id: id, from: sender.peer, body: body))
        case .trackPublished, .trackUnpublished, .trackSubscribed:
            handleTrackControl(frame)
        case .join, .snapshotRequest, .subscribe, .unsubscribe, .leave, .ping, .publishTrack, .unpublishTrack, .subscribeTrack, .unsubscribeTrack, .declareChannels:
            sessions.statistics.malformedDatagrams += 1
        }
    }

    /// Applies a peer-list frame: a snapshot replaces the list; the next version applies; a
    /// version past the next one means updates were missed, so a snapshot is asked for.
    mutating func applyPeerList(_ update: PeerListUpdate) {
        guard let me = joinedMember else {
            sessions.statistics.droppedOutOfState += 1
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
                sessions.reassemblers[number] = nil
                channelReassemblers = channelReassemblers.filter { $0.key >> 16 != UInt32(number) }
            }
        } else if linkSequenceIsAfter(update.version, peerListVersion) {
            sessions.statistics.peerListGaps += 1
            awaitingSnapshot = true
            sessions.controlOut.append(TaggedFrame(RoomControlFrame.snapshotRequest.encoded))
            return
        } else {
            return  // old news
        }
        for member in left { sessions.reassemblers[member.member] = nil }
        if case .joining = phase {
            phase = .connected(member: me)
            sessions.events.append(.connected(member: me, peers: members.values.sorted { $0.member < $1.member }))
        } else if !joined.isEmpty || !left.isEmpty {
            sessions.events.append(.peersChanged(joined: joined, left: left, version: peerListVersion))
        }
        // The relay coalesces peer lists but announces tracks at once, so a new peer's track can
        // arrive before the peer does (handleTrackControl keeps it without an event): announce it
        // now, after the peer.
        for member in joined {
            let tracks = announcedTracks.values.filter { $0.publisher == member.member }.sorted { $0.trackID < $1.trackID }
            for info in tracks { sessions.events.append(.trackPublished(info.name, by: member.peer, info.reliability)) }
        }
    }

    func linkSequenceIsAfter(_ a: UInt32, _ b: UInt32) -> Bool {
        let distance = a &- b
        return distance != 0 && distance < 1 << 31
    }

    mutating func handleRelayed(_ datagram: UnsafeRawBufferPointer, now: ConduitInstant) {
        guard isConnected else {
            sessions.statistics.droppedOutOfState += 1
            return
        }
        guard let envelope = try? RelayEnvelope.parse(datagram), envelope.kind == .relayed else {
            sessions.statistics.malformedDatagrams += 1
            return
        }
        guard let sender = members[envelope.member] else {
            sessions.statistics.droppedUnknownSender += 1
            return
        }
        let inner = UnsafeRawBufferPointer(rebasing: datagram[RelayEnvelope.size...])
        switch try? FrameKind.peek(inner) {
        case .data?:
            guard let (header, payload) = try? DataFrameHeader.parse(inner) else {
                sessions.statistics.malformedDatagrams += 1
                return
            }
            handleData(header, payload: UnsafeRawBufferPointer(rebasing: inner[payload]), from: envelope.member, peer: sender.peer, now: now)
        case .control?:
            guard let control = try? ControlFrame.parse(inner) else {
                sessions.statistics.malformedDatagrams += 1
                return
            }
            switch control {
            case .sessionOpen(let stream, let subgroupID, let name, let type):
                guard let key = sessionKey(stream, subgroupID), key.subgroup == name else { return }
                sessions.announce(key, type: type, from: sender.peer)
            case .sessionClose(let stream, let subgroupID, let reason):
                guard let key = sessionKey(stream, subgroupID) else { return }
                sessions.discardReassembly(of: envelope.member, streamID: stream, subgroupID: subgroupID)
                if sessions.isAnnounced(key) {
                    sessions.events.append(.senderSessionEnded(key, from: sender.peer, reason))
                }
            case .sessionUnsupported, .hello, .goodbye:
                sessions.statistics.malformedDatagrams += 1
            }
        case nil:
            sessions.statistics.malformedDatagrams += 1
        }
    }

    /// The session key for a wire subgroup ID, or nil (counted) if this side is not subscribed.
    mutating func sessionKey(_ stream: StreamID, _ subgroupID: UInt16) -> SessionKey? {
        guard subgroupID == 0 || subgroupNames[subgroupID] != nil else {
            sessions.statistics.droppedUnknownSubgroup += 1
            return nil
        }
        return SessionKey(streamID: stream, subgroup: subgroupNames[subgroupID])
    }

    mutating func handleData(_ header: DataFrameHeader, payload: UnsafeRawBufferPointer, from member: UInt16, peer: PeerID, now: ConduitInstant) {
        guard let key = sessionKey(header.streamID, header.subgroupID) else { return }
        sessions.receive(header, payload: payload, for: key, from: peer, reassemblyKey: member, now: now)
    }
}

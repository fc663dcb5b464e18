public import ConduitCore
public import ConduitRooms

extension RelayMachine {
    mutating func handleRoomControl(_ id: RelayConnectionID, _ frame: RoomControlFrame, now: ConduitInstant) {
        let phase = connections[id]!.phase
        if case .join(let room, let peer, let supported, let token) = frame {
            guard case .awaitingJoin = phase else {
                refuseFrame(.alreadyJoined)
                return
            }
            guard mayAuthorizeJoin(id, tokenBytes: token.count, now: now) else { return }
            let request = RelayJoinRequest(room: room, peer: peer, dataSessionsSupported: supported, token: token)
            connections[id]!.phase = .authorizing(request)
            actions.append(.authorize(id, request))
            return
        }
        guard case .member(let roomID, let member) = phase else {
            if case .ping = frame { return }
            refuseFrame(.notJoined)
            return
        }
        switch frame {
        case .join:
            break
        case .ping:
            break
        case .leave:
            statistics.leaves += 1
            closeConnection(id, last: RoomControlFrame.disconnect(.left, "left the room").encoded)
            removeMember(member, from: roomID, now: now)
        case .snapshotRequest:
            sendSnapshot(to: member, in: roomID)
        case .subscribe(let name, let dataSession):
            subscribe(member, to: name, dataSession: dataSession, in: roomID)
        case .unsubscribe(let name):
            unsubscribe(member, from: name, in: roomID, now: now)
        case .extension(let ext, let to, let body):
            if ext == RelayInvitations.extensionID {
                // Invitations are the relay's own business: handled here, never forwarded.
                return handleInvitationRequest(id, from: rooms[roomID]!.members[member]!.peer, body: body, now: now)
            }
            // An isolated member gets nothing more (RelayMachine+Isolation.swift).
            guard let target = rooms[roomID]!.members[to], to != member, target.origin != nil || connections[target.connection]?.isolated != true else {
                refuseFrame(.unknownDestination)
                return
            }
            if rooms[roomID]!.pendingJoined.contains(member) {
                rooms[roomID]!.flushDue = now
                flushPeerLists(now: now)
            }
            statistics.extensionsRelayed += 1
            // A member of another relay: through the room's stream (RelayMachine+ClusterExtensions.swift).
            if let origin = target.origin { return forwardExtension(ext, body: body, from: member, to: origin, in: roomID) }
            sendControl(target.connection, RoomControlFrame.extension(id: ext, member: member, body: body).encoded)
        case .publishTrack, .unpublishTrack, .subscribeTrack, .unsubscribeTrack:
            handleTrackControl(frame, member: member, room: roomID, now: now)
        case .declareChannels(let declarations):
            declareChannels(declarations, member: member, room: roomID)
        case .joined, .refused, .peers, .subscribed, .unsubscribed, .subscribeRefused, .disconnect,
             .trackPublished, .trackUnpublished, .trackSubscribed, .channels:
            // Frames only the relay sends.
            refuseFrame(.malformed)
        }
    }

    // MARK: Joining

    /// The driver verified the join's token: `grant` is what it allows. The grant must name the
    /// room and peer the client asked for (`wrongRoom`, `wrongPeer` otherwise).
    public mutating func admit(_ id: RelayConnectionID, grant: RelayGrant, now: ConduitInstant) {
        guard case .authorizing(let request)? = connections[id]?.phase else { return }
        guard grant.room == request.room else { return refuse(id, .wrongRoom, now: now) }
        guard grant.peer == request.peer else { return refuse(id, .wrongPeer, now: now) }
        if rooms[request.room] == nil {
            guard rooms.count < configuration.maxRooms else { return refuse(id, .overLimit, now: now) }
            // (With a roster, the room is made when the join's record comes back: RelayMachine+Roster.swift.)
            if usesRoster { return admitThroughRoster(id, request, grant: grant, now: now) }
            rooms[request.room] = Room()
        }
        guard rooms[request.room]!.members.count < configuration.maxMembersPerRoom,
            rooms[request.room]!.members.count < Int(UInt16.max) - 1
        else { return refuse(id, .roomFull, now: now) }
        guard !rooms[request.room]!.members.values.contains(where: { $0.peer == request.peer }) else {
            return refuse(id, .alreadyJoined, now: now)
        }
        // In a cluster with a roster, the join is answered once the roster has it (RelayMachine+Roster.swift).
        if usesRoster { return admitThroughRoster(id, request, grant: grant, now: now) }
        pendingConnections -= 1
        let member = rooms[request.room]!.allocateMember()
        rooms[request.room]!.members[member] = Member(
            connection: id,
            peer: request.peer,
            dataSessionsSupported: request.dataSessionsSupported,
            grant: grant
        )
        welcome(id, member: member, in: request.room, now: now)
    }

    /// A member that just joined: told its number and the room (peers, tracks); its peers hear of
    /// it with the next update, and the cluster's other relays with this relay's presence.
    mutating func welcome(_ id: RelayConnectionID, member: UInt16, in roomID: RoomID, now: ConduitInstant) {
        let peer = rooms[roomID]!.members[member]!.peer
        connections[id]!.phase = .member(roomID, member)
        connections[id]!.lastHeard = now
        statistics.joins += 1
        invitationMemberJoined(peer, id, now: now)
        sendControl(id, RoomControlFrame.joined(member: member).encoded)
        sendSnapshot(to: member, in: roomID)
        announceTracks(to: member, in: roomID)
        noteChange(in: roomID, joined: member, now: now)
        // The first member here asks the cluster's other relays for theirs.
        publishPresence(roomID, wantsReply: rooms[roomID]!.members.count == rooms[roomID]!.remote.count + 1)
    }

    /// The driver refused the join (or the machine did): the client is told why and let go.
    public mutating func refuse(_ id: RelayConnectionID, _ refusal: RelayRefusal, now: ConduitInstant) {
        guard let connection = connections[id] else { return }
        if case .member = connection.phase { return }
        refuseFrame(refusal)
        closeConnection(id, last: RoomControlFrame.refused(refusal, "join refused: \(refusal)").encoded)
    }

    /// Disconnects a member with `reason` (the relay's decision: slow receiver, shutdown).
    public mutating func disconnect(_ id: RelayConnectionID, _ reason: RelayDisconnectReason, _ text: String, now: ConduitInstant) {
        guard let connection = connections[id] else { return }
        closeConnection(id, last: RoomControlFrame.disconnect(reason, text).encoded)
        if case .member(let room, let member) = connection.phase { removeMember(member, from: room, now: now) }
    }

    /// Takes a member out of its room: its subgroup sessions close for the others, its peers hear
    /// it left with the next update, and an empty room is forgotten.
    mutating func removeMember(_ member: UInt16, from roomID: RoomID, now: ConduitInstant) {
        guard let state = rooms[roomID]?.members[member] else { return }
        removeTracks(of: member, in: roomID)
        removeChannels(of: member, in: roomID)
        for subgroupID in state.subscriptions.sorted() {
            closeSessions(of: member, in: subgroupID, room: roomID)
            rooms[roomID]!.subgroups[subgroupID]?.subscribers.remove(member)
        }
        rooms[roomID]!.members[member] = nil
        if let origin = state.origin { rooms[roomID]!.remote[origin] = nil } else { invitationMemberLeft(state.peer, state.connection, now: now) }
        if state.origin == nil, let ticket = state.ticket, let node = cluster?.node {
            appendRoster(.left(room: roomID, node: node, ticket: ticket))
        }
        // A member here leaving is announced to the cluster (with the empty list for the last one).
        if state.origin == nil { publishPresence(roomID, wantsReply: false) }
        // Only other relays' members left: the room is no longer hosted here.
        if rooms[roomID]!.members.count == rooms[roomID]!.remote.count {
            rooms[roomID] = nil
            pressuredRooms.remove(roomID)
            return
        }
        noteChange(in: roomID, left: member, now: now)
    }

    // MARK: Peer list

    mutating func noteChange(in roomID: RoomID, joined: UInt16? = nil, left: UInt16? = nil, now: ConduitInstant) {
        // With a roster, every change is announced as its record is applied (RelayMachine+Roster.swift).
        guard !usesRoster else { return }
        if let joined { rooms[roomID]!.pendingJoined.append(joined) }
        if let left {
            // Joined and left within one interval: the others never need to hear of it.
            if let index = rooms[roomID]!.pendingJoined.firstIndex(of: left) {
                rooms[roomID]!.pendingJoined.remove(at: index)
            } else {
                rooms[roomID]!.pendingLeft.append(left)
            }
        }
        if rooms[roomID]!.flushDue == nil {
            let due = now + configuration.peerListInterval(members: rooms[roomID]!.members.count)
            rooms[roomID]!.flushDue = due
            lowerTimeoutFloor(to: due)
        }
    }

    /// Sends every room's coalesced changes whose interval has passed.
    mutating func flushPeerLists(now: ConduitInstant) {
        for roomID in rooms.keys.sorted() {
            guard let due = rooms[roomID]!.flushDue, due <= now else { continue }
            rooms[roomID]!.flushDue = nil
            let joined = rooms[roomID]!.pendingJoined.compactMap { number in
                rooms[roomID]!.members[number].map { RoomMember(member: number, peer: $0.peer, dataSessionsSupported: $0.dataSessionsSupported) }
            }
            let left = rooms[roomID]!.pendingLeft
            rooms[roomID]!.pendingJoined.removeAll()
            rooms[roomID]!.pendingLeft.removeAll()
            guard !joined.isEmpty || !left.isEmpty else { continue }
            let frames = peerListFrames(version: &rooms[roomID]!.version, joined: joined, left: left, snapshot: false)
            for (_, member) in rooms[roomID]!.members.sorted(by: { $0.key < $1.key }) {
                // A departure must not overtake the departed member's last frames on their own
                // channels (the receiver forgets a member's partial messages when it leaves).
                let tag = left.isEmpty ? FrameTag.neutral : FrameTag(isBarrier: true)
                for frame in frames { sendControl(member.connection, frame, tag: tag) }
            }
            statistics.peerListUpdatesSent += frames.count
        }
    }

    mutating func sendSnapshot(to member: UInt16, in roomID: RoomID) {
        guard let room = rooms[roomID], let target = room.members[member] else { return }
        let everyone = room.members.sorted(by: { $0.key < $1.key }).map {
            RoomMember(member: $0.key, peer: $0.value.peer, dataSessionsSupported: $0.value.dataSessionsSupported)
        }
        var version = room.version
        for frame in peerListFrames(version: &version, joined: everyone, left: [], snapshot: true) {
            sendControl(target.connection, frame)
        }
    }

    /// Cuts a peer-list change into frames that fit a datagram. A change takes one version per
    /// frame; a snapshot keeps the room's version, its first frame resets the list and the rest
    /// add to it (same version, snapshot flag off).
    func peerListFrames(version: inout UInt32, joined: [RoomMember], left: [UInt16], snapshot: Bool) -> [[UInt8]] {
        let budget = 1_000
        var frames: [[UInt8]] = []
        var joinedRest = joined[...]
        var leftRest = left[...]
        repeat {
            var bytes = 16
            var chunkJoined: [RoomMember] = []
            while let next = joinedRest.first, chunkJoined.count < RoomControlFrame.maxPeersPerFrame,
                bytes + 4 + next.peer.rawValue.utf8.count <= budget || chunkJoined.isEmpty {
                bytes += 4 + next.peer.rawValue.utf8.count
                chunkJoined.append(next)
                joinedRest = joinedRest.dropFirst()
            }
            var chunkLeft: [UInt16] = []
            while let next = leftRest.first, chunkLeft.count < RoomControlFrame.maxPeersPerFrame, bytes + 2 <= budget {
                bytes += 2
                chunkLeft.append(next)
                leftRest = leftRest.dropFirst()
            }
            if !snapshot { version &+= 1 }
            let update = PeerListUpdate(version: version, isSnapshot: snapshot && frames.isEmpty, joined: chunkJoined, left: chunkLeft)
            frames.append(RoomControlFrame.peers(update).encoded)
        } while !joinedRest.isEmpty || !leftRest.isEmpty
        return frames
    }

    // MARK: Subgroups

    mutating func subscribe(_ member: UInt16, to name: SubgroupName, dataSession: Bool, in roomID: RoomID) {
        let state = rooms[roomID]!.members[member]!
        guard state.grant.canSubscribe, state.grant.allowedSubgroups?.contains(name) ?? true else {
            refuseFrame(.subgroupNotAllowed)
            sendControl(state.connection, RoomControlFrame.subscribeRefused(name, .subgroupNotAllowed).encoded)
            return
        }
        var subgroupID = rooms[roomID]!.subgroupIDs[name]
        if subgroupID == nil {
            guard rooms[roomID]!.subgroups.count < configuration.maxSubgroupsPerRoom else {
                refuseFrame(.overLimit)
                sendControl(state.connection, RoomControlFrame.subscribeRefused(name, .overLimit).encoded)
                return
            }
            // The first subscriber creates the subgroup and sets its dataSession attribute.
            let id = rooms[roomID]!.allocateSubgroupID()
            rooms[roomID]!.subgroups[id] = Subgroup(name: name, dataSession: dataSession)
            rooms[roomID]!.subgroupIDs[name] = id
            subgroupID = id
        }
        let id = subgroupID!
        if !state.subscriptions.contains(id) {
            guard state.subscriptions.count < configuration.maxSubscriptionsPerMember else {
                refuseFrame(.overLimit)
                sendControl(state.connection, RoomControlFrame.subscribeRefused(name, .overLimit).encoded)
                return
            }
            rooms[roomID]!.members[member]!.subscriptions.insert(id)
            rooms[roomID]!.subgroups[id]!.subscribers.insert(member)
            publishSubgroups(roomID)
        }
        sendControl(state.connection, RoomControlFrame.subscribed(name, id: id, dataSession: rooms[roomID]!.subgroups[id]!.dataSession).encoded)
    }

    mutating func unsubscribe(_ member: UInt16, from name: SubgroupName, in roomID: RoomID, now: ConduitInstant) {
        let connection = rooms[roomID]!.members[member]!.connection
        guard let id = rooms[roomID]!.subgroupIDs[name], rooms[roomID]!.members[member]!.subscriptions.contains(id) else {
            refuseFrame(.unjoinedSubgroup)
            return
        }
        // LINE Planet: a subgroup session lives while its creator stays subscribed.
        closeSessions(of: member, in: id, room: roomID)
        rooms[roomID]!.members[member]!.subscriptions.remove(id)
        rooms[roomID]!.subgroups[id]!.subscribers.remove(member)
        publishSubgroups(roomID)
        sendControl(connection, RoomControlFrame.unsubscribed(name).encoded)
    }

    /// Tells the subgroup's other members that `member`'s sessions in it ended.
    package mutating func closeSessions(of member: UInt16, in subgroupID: UInt16, room roomID: RoomID) {
        guard subgroupID != 0, let subgroup = rooms[roomID]!.subgroups[subgroupID] else { return }
        let keys = rooms[roomID]!.members[member]!.sessions.keys.filter { $0 >> 16 == UInt32(subgroupID) }.sorted()
        for key in keys {
            rooms[roomID]!.members[member]!.sessions[key] = nil
            let stream = StreamID(Int(key & 0xFFFF))
            let close = RelayEnvelope.wrap(.relayed, member: member, ControlFrame.sessionClose(streamID: stream, subgroupID: subgroupID, reason: .sessionEnd).encoded)
            for receiver in subgroup.subscribers.sorted() where receiver != member {
                if let target = rooms[roomID]!.members[receiver] {
                    sendControl(target.connection, close, tag: .session(stream: stream, subgroupID: subgroupID, type: nil))
                }
            }
        }
    }

    // MARK: Time

    /// When ``handleTimeout(now:)`` must run: the next peer-list flush, join deadline or vanish
    /// check, or a little earlier (a lower bound kept as deadlines are set, made exact when a
    /// timeout runs; firing early is harmless). Costs nothing per connection or room.
    public func nextTimeout() -> ConduitInstant? {
        var deadline = timeoutFloor
        func consider(_ instant: ConduitInstant) { deadline = deadline.map { min($0, instant) } ?? instant }
        if let due = invitations.book.nextTimeout { consider(due) }
        if let due = backpressureDeadline() { consider(due) }
        if let due = clusterDeadline() { consider(due) }
        if let due = rosterDeadline() { consider(due) }
        return deadline
    }

    mutating func lowerTimeoutFloor(to instant: ConduitInstant) {
        timeoutFloor = timeoutFloor.map { min($0, instant) } ?? instant
    }

    /// The earliest connection or room deadline (see `timeoutFloor`), exactly: one scan, after a timeout.
    func scanTimeoutFloor() -> ConduitInstant? {
        var deadline: ConduitInstant?
        func consider(_ instant: ConduitInstant) { deadline = deadline.map { min($0, instant) } ?? instant }
        let silence = cluster?.liveness.silenceTimeout
        for room in rooms.values {
            if let due = room.flushDue { consider(due) }
            guard let silence else { continue }
            // Another relay's members here are reported left once it is silent this long, and
            // frames held for the roster are dropped once the oldest has waited this long.
            for heard in room.remoteLastHeard.values { consider(heard + silence) }
            if let first = room.heldForRoster.first { consider(first.heldAt + silence) }
        }
        for (id, connection) in connections {
            if case .closing = connection.phase { continue }
            // A link the relay is not reading cannot be heard: it is not vanishing.
            if !pausedReaders.contains(id) { consider(connection.lastHeard + configuration.vanishTimeout) }
            if case .awaitingJoin = connection.phase { consider(connection.openedAt + configuration.joinTimeout) }
            if case .admitting(_, _, _, let since) = connection.phase { consider(since + configuration.joinTimeout) }
        }
        return deadline
    }

    /// Lets time pass: flushes due peer lists and removes members (and unjoined links) that went silent.
    public mutating func handleTimeout(now: ConduitInstant) {
        latestNow = max(latestNow, now)
        handleBackpressureTimeouts(now: now)
        refuseLinksPastJoinDeadline(now: now)
        for (id, connection) in connections.sorted(by: { $0.key < $1.key }) {
            guard now - connection.lastHeard >= configuration.vanishTimeout, !pausedReaders.contains(id) else { continue }
            switch connection.phase {
            case .closing: continue
            case .member: if !connection.isolated { statistics.vanished += 1 }  // else counted as isolated
            case .awaitingJoin, .authorizing, .admitting: break
            }
            disconnect(id, .vanished, "nothing heard for \(configuration.vanishTimeout)", now: now)
        }
        handleInvitationTimeouts(now: now)
        handleClusterTimeouts(now: now)
        handleRosterTimeouts(now: now)
        flushPeerLists(now: now)
        timeoutFloor = scanTimeoutFloor()
    }
}

import DequeModule
public import ConduitCore
import ConduitRooms

extension RelayConnectionID {
    /// The connection a member connected to another relay stands on here: none. Nothing is ever
    /// queued for it (`deliver` and `sendControl` skip it).
    static let clusterMember = RelayConnectionID(.max)
}

extension RelayMachine {
    /// A member of another relay: that relay and its member number there.
    struct RemoteMemberKey: Hashable, Sendable, Comparable {
        let node: RelayNodeID
        let member: UInt16
        static func < (lhs: Self, rhs: Self) -> Bool { (lhs.node, lhs.member) < (rhs.node, rhs.member) }
    }

    /// Where another relay's stream for a room stands: the last epoch and sequence taken.
    struct ClusterStreamPosition: Sendable {
        var epoch: UInt32
        var sequence: UInt64
        var dataCount: UInt64 = 0
    }

    /// The machine's side of a cluster: its node name, what it has to publish.
    struct ClusterState: Sendable {
        let node: RelayNodeID
        let liveness: RelayClusterLiveness
        var outbox = Deque<RelayClusterMessage>()
        /// Its node stream and the other relays' (RelayMachine+ClusterNodeStream.swift).
        var nodes = NodeStreamState()
        var nextEpoch: UInt32 = 1
        /// When every hosted room's presence is published again (RelayMachine+ClusterLiveness.swift).
        var nextHeartbeat: ConduitInstant
        /// Membership from the cluster's roster, when the driver has one (RelayMachine+Roster.swift).
        var roster: RosterState?
    }

    // MARK: Driver interface

    /// Makes this relay one node of a cluster: from now on members of its rooms are announced to
    /// the other relays and routed frames for their members are handed out as messages
    /// (``pollClusterMessage()``); `handleCluster(_:now:)` takes theirs (their bytes or parsed). `liveness` says how
    /// often this relay announces its members again and when another relay that fell silent is
    /// taken for dead (its members reported left). Once only.
    ///
    /// `roster`: membership comes from the cluster's roster (``handleRoster(_:sequence:delivered:now:)-([UInt8],_,_,_)``,
    /// ``pollRosterRecord()``), so member numbers and peer-list versions are the same on every
    /// relay. Taken only while no room exists here (numbers already given out would clash).
    public mutating func joinCluster(as node: RelayNodeID, liveness: RelayClusterLiveness = .init(), roster: Bool = false, now: ConduitInstant) {
        guard cluster == nil else { return }
        latestNow = max(latestNow, now)
        cluster = ClusterState(node: node, liveness: liveness, nextHeartbeat: now + liveness.heartbeatInterval)
        if roster, rooms.isEmpty { cluster!.roster = RosterState() }
        // Who is online here, and a request for every other relay's whole set.
        publishWholeOnline(wantsFull: true, now: now)
        for roomID in rooms.keys.sorted() { publishPresence(roomID, wantsReply: true) }
    }

    /// This relay's node name, once it joined a cluster.
    public var clusterNode: RelayNodeID? { cluster?.node }

    /// The next message to publish on its room's subject (``RelayClusterMessage/subject(for:)``),
    /// in order; nil when there is none.
    public mutating func pollClusterMessage() -> RelayClusterMessage? { cluster?.outbox.popFirst() }

    /// A message another relay published, on a room's subject or the node subject (as received:
    /// malformed ones are counted and dropped).
    public mutating func handleCluster(_ bytes: [UInt8], now: ConduitInstant) {
        guard cluster != nil else { return }
        if bytes.count > 1, RelayClusterNodeMessage.isNodeKind(bytes[1]) {
            guard let message = try? RelayClusterNodeMessage.parse(bytes) else {
                statistics.cluster.malformed += 1
                statistics.cluster.nodeMalformed += 1
                return
            }
            return handleClusterNode(message, now: now)
        }
        guard let message = try? RelayClusterMessage.parse(bytes) else {
            statistics.cluster.malformed += 1
            return
        }
        handleCluster(message, now: now)
    }

    /// A message from another relay: its own echoes and rooms not hosted here are ignored; a gap
    /// in the sender's stream is counted (and the room's presence asked for again).
    public mutating func handleCluster(_ message: RelayClusterMessage, now: ConduitInstant) {
        // (The node only: binding `cluster` itself copied its outbox and the rest per message.)
        guard let node = cluster?.node, message.node != node, let room = rooms.index(forKey: message.room) else { return }
        latestNow = max(latestNow, now)
        statistics.cluster.messagesReceived += 1
        // The room's entry is reached through its index until the frame is delivered: looking
        // it up by name hashed the name each time, and reading through `rooms[id]!` copied the
        // whole room; that ran for every frame crossing shards. (Nothing adds or removes a room
        // in between, which would move the index.)
        guard takeSequence(of: message, room: room) else { return }
        let previous = rooms.values[room].remoteLastHeard.updateValue(now, forKey: message.node)
        if previous.map({ $0 > now }) ?? true, let silence = cluster?.liveness.silenceTimeout {
            // A relay newly heard about this room (or a driver's `now` that went back): the
            // moment it would be dead there is a new deadline. One heard again only moves its
            // own later, which the floor allows.
            lowerTimeoutFloor(to: now + silence)
        }
        switch message.body {
        case .presence(let members, let wantsReply, let holdingBack):
            applyPresence(members, of: message.node, in: message.room, now: now)
            guard rooms[message.room] != nil else { return }
            applyPressure(holdingBack, of: message.node, in: message.room)
            if wantsReply { publishPresence(message.room, wantsReply: false) }
        case .data(let origin, let targetNode, let targetMember, let frame):
            guard targetNode == 0 || targetNode == node.rawValue else { return }
            deliverClusterFrame(frame, origin: RemoteMemberKey(node: message.node, member: origin), to: targetMember, in: message.room, now: now)
        case .subgroups(let subgroups):
            applySubgroups(subgroups, of: message.node, in: message.room)
        case .channels(let channels):
            applyChannels(channels, of: message.node, in: message.room)
        case .tracks(let published, let subscribed):
            applyTracks(published: published, subscribed: subscribed, of: message.node, in: message.room)
        case .extension(let origin, let targetNode, let targetMember, let id, let body):
            guard targetNode == node.rawValue else { return }
            deliverClusterExtension(id, body: body, origin: RemoteMemberKey(node: message.node, member: origin), to: targetMember, in: message.room, now: now)
        case .pressure(let holdingBack):
            applyPressure(holdingBack, of: message.node, in: message.room)
        }
    }

    // MARK: Publishing

    mutating func publishCluster(_ roomID: RoomID, _ body: RelayClusterMessage.Body) {
        guard let node = cluster?.node else { return }
        var isData = false
        if case .data = body { isData = true }
        // The room is looked up (its ID hashed) once and numbered in place through its index:
        // this runs for every frame that crosses.
        guard let room = rooms.index(forKey: roomID) else { return }
        let stamp = rooms.values[room].stampClusterMessage(isData: isData, nextEpoch: &cluster!.nextEpoch)
        let message = RelayClusterMessage(node: node, room: roomID, epoch: stamp.epoch, sequence: stamp.sequence, dataCount: stamp.dataCount, body: body)
        cluster!.outbox.append(message)
        statistics.cluster.messagesPublished += 1
    }

    /// Announces the room's members connected here (all of them: a lost announcement is
    /// repaired by the next one).
    mutating func publishPresence(_ roomID: RoomID, wantsReply: Bool) {
        guard cluster != nil, let room = rooms[roomID] else { return }
        let local = room.members.filter { $0.value.origin == nil }.sorted { $0.key < $1.key }.map {
            RoomMember(member: $0.key, peer: $0.value.peer, dataSessionsSupported: $0.value.dataSessionsSupported)
        }
        publishCluster(roomID, .presence(members: local, wantsReply: wantsReply, holdingBack: holdsRoomBack(roomID)))
        publishSubgroups(roomID)
        publishChannels(roomID)
        publishTracks(roomID)
    }

    /// A local member's routed frame, already delivered here: published once for the members on
    /// other relays it is for (a subgroup's frame only while a member elsewhere is subscribed).
    mutating func forwardToCluster(_ frame: [UInt8], from member: UInt16, to: UInt16, subgroupID: UInt16, in roomID: RoomID) {
        guard let room = rooms[roomID], !room.remote.isEmpty else { return }
        if to == 0 {
            guard subgroupID == 0 || hasRemoteSubscriber(subgroupID, in: roomID) else { return }
            publishCluster(roomID, .data(origin: member, targetNode: 0, targetMember: 0, frame: frame))
        } else if let origin = room.members[to]?.origin {
            publishCluster(roomID, .data(origin: member, targetNode: origin.node.rawValue, targetMember: origin.member, frame: frame))
        } else {
            return
        }
        statistics.cluster.framesForwarded += 1
    }

    // MARK: Receiving

    /// Takes the message's place in its sender's stream; false for one older than what was
    /// taken. `room` is the index of the message's room in `rooms`.
    mutating func takeSequence(of message: RelayClusterMessage, room: Dictionary<RoomID, Room>.Index) -> Bool {
        let previous = { (room: inout Room) in room.clusterInbound[message.node] }(&rooms.values[room])  // in place, not a copy of the room
        var missing: UInt64 = 0
        // Data messages of the stream before this one that never arrived.
        var dataMissing: UInt64 = 0
        let thisData: UInt64 = if case .data = message.body { 1 } else { 0 }
        if let previous, previous.epoch == message.epoch {
            guard message.sequence > previous.sequence else {
                statistics.cluster.staleDropped += 1
                return false
            }
            missing = message.sequence - previous.sequence - 1
            dataMissing = message.dataCount &- previous.dataCount &- thisData
        } else if previous != nil {
            // The room started again on that relay: its new stream counts from 1.
            missing = message.sequence &- 1
            dataMissing = message.dataCount &- thisData
        }
        // (A stream first heard here starts where it is heard: what it sent before was not for this relay.)
        rooms.values[room].clusterInbound[message.node] = ClusterStreamPosition(epoch: message.epoch, sequence: message.sequence, dataCount: message.dataCount)
        // (A count that does not add up — more than the gap holds — is a broken sender: not taken as loss.)
        if dataMissing > 0, dataMissing <= missing { reportDataLost(from: message.node, in: message.room, messages: dataMissing) }
        if missing > 0 {
            statistics.cluster.gaps += 1
            statistics.cluster.messagesLost += Int(clamping: missing)
            // The lost messages may have been announcements: every relay announces again.
            publishPresence(message.room, wantsReply: true)
        }
        return true
    }

    /// Replaces what this relay knows of `node`'s members in the room with `announced`: the
    /// departed leave, the new join (each with a member number of this relay), and local members
    /// hear of both in the next peer-list update.
    mutating func applyPresence(_ announced: [RoomMember], of node: RelayNodeID, in roomID: RoomID, now: ConduitInstant) {
        // With a roster, membership comes from its records alone.
        guard !usesRoster else { return }
        var wanted: [RemoteMemberKey: RoomMember] = [:]
        for member in announced { wanted[RemoteMemberKey(node: node, member: member.member)] = member }
        let known = rooms[roomID]!.remote.filter { $0.key.node == node }
        for (key, number) in known.sorted(by: { $0.key < $1.key }) where wanted[key]?.peer != rooms[roomID]!.members[number]?.peer {
            removeMember(number, from: roomID, now: now)
        }
        for (key, entry) in wanted.sorted(by: { $0.key < $1.key }) where rooms[roomID]!.remote[key] == nil {
            guard !rooms[roomID]!.members.values.contains(where: { $0.peer == entry.peer }) else {
                statistics.cluster.peerConflicts += 1
                continue
            }
            guard rooms[roomID]!.members.count < configuration.maxMembersPerRoom, rooms[roomID]!.members.count < Int(UInt16.max) - 1 else {
                statistics.cluster.overLimit += 1
                continue
            }
            let number = rooms[roomID]!.allocateMember()
            rooms[roomID]!.addRemote(key, as: number, entry, in: roomID)
            noteChange(in: roomID, joined: number, now: now)
        }
    }

    /// A routed frame from a member of another relay, for every member here or for one.
    mutating func deliverClusterFrame(_ frame: [UInt8], origin: RemoteMemberKey, to target: UInt16, in roomID: RoomID, now: ConduitInstant) {
        guard let sender = rooms[roomID]!.remote[origin] else {
            // With a roster, its join record may not have come yet (it travels another way).
            if usesRoster { return holdForRoster(frame, origin: origin, to: target, in: roomID, now: now) }
            statistics.cluster.unknownSender += 1
            return
        }
        // As for a local sender: its name reaches everyone before its first frame does.
        if rooms[roomID]!.pendingJoined.contains(sender) {
            rooms[roomID]!.flushDue = now
            flushPeerLists(now: now)
        }
        if Self.isChannelFrame(frame) { return deliverClusterChannelFrame(frame, from: sender, of: origin.node, in: roomID, now: now) }
        if Self.isTrackFrame(frame) { return deliverClusterTrackFrame(frame, from: sender, of: origin.node, in: roomID, now: now) }
        var restamped = frame
        guard let (tag, subgroupID) = adoptClusterFrame(&restamped, from: sender, of: origin.node, in: roomID) else { return }
        RelayEnvelope.restamp(&restamped, from: sender)
        if target != 0 {
            guard let receiver = rooms[roomID]!.members[target], receiver.origin == nil, subgroupID == 0 || receiver.subscriptions.contains(subgroupID) else {
                statistics.cluster.framesReceived += 1
                return refuseFrame(.unknownDestination)
            }
            deliverCrossing(restamped, tag: tag, to: [target], in: roomID, now: now)
        } else if subgroupID == 0 {
            // The whole room, as a local sender's frame reaches it (`handleRouted`).
            statistics.cluster.framesReceived += 1
            var slow: [RelayConnectionID] = []
            deliverToRoom(restamped, tag: tag, in: roomID, except: sender, slow: &slow, now: now)
            isolate(slow, now: now)
        } else {
            deliverCrossing(restamped, tag: tag, to: rooms[roomID]!.subgroups[subgroupID]!.subscribers.sorted(), in: roomID, now: now)
        }
    }
}

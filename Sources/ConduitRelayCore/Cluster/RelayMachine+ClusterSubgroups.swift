import ConduitCore
import ConduitRooms

// Subgroups across relays. A subgroup is the same subgroup on every relay by its name; each relay
// numbers it its own way (the number its members' frames carry). Each relay announces which of
// its members are subscribed to which subgroup (`subgroups` messages, after every presence and on
// every change); the others subscribe those members here under their own numbers, and rewrite
// the subgroup number of every subgroup frame that crosses. A member leaving a subgroup, or the
// room, ends its sessions in it on every relay: its own relay closes them for its members, each
// other relay for its own when it hears of the change (after the member's last frames, on the
// same stream).

extension RelayMachine {
    /// Announces which members here are subscribed to which of the room's subgroups (nothing
    /// when the room never had a subgroup).
    mutating func publishSubgroups(_ roomID: RoomID) {
        guard cluster != nil, let room = rooms[roomID], !room.subgroups.isEmpty else { return }
        let announced = room.subgroups.sorted { $0.key < $1.key }.compactMap { id, subgroup -> RelayClusterSubgroup? in
            let local = subgroup.subscribers.filter { room.members[$0]?.origin == nil }.sorted()
            return local.isEmpty ? nil : RelayClusterSubgroup(id: id, name: subgroup.name, dataSession: subgroup.dataSession, subscribers: local)
        }
        publishCluster(roomID, .subgroups(announced))
    }

    /// Replaces what this relay knows of `node`'s subscriptions in the room: its members join the
    /// announced subgroups here (created here if new), and leave the others (their sessions there
    /// end for the members here).
    mutating func applySubgroups(_ announced: [RelayClusterSubgroup], of node: RelayNodeID, in roomID: RoomID) {
        var numbers: [UInt16: UInt16] = [:]
        var wanted: [UInt16: Set<UInt16>] = [:]
        for subgroup in announced {
            guard let id = localSubgroup(subgroup.name, dataSession: subgroup.dataSession, in: roomID) else {
                statistics.cluster.overLimit += 1
                continue
            }
            numbers[subgroup.id] = id
            for origin in subgroup.subscribers {
                guard let number = rooms[roomID]!.remote[RemoteMemberKey(node: node, member: origin)] else {
                    noteUnknownRemoteMember(of: node, in: roomID)
                    continue
                }
                wanted[number, default: []].insert(id)
            }
        }
        rooms[roomID]!.remoteSubgroups[node] = numbers.isEmpty ? nil : numbers
        for (key, number) in rooms[roomID]!.remote.sorted(by: { $0.key < $1.key }) where key.node == node {
            let subscribed = rooms[roomID]!.members[number]!.subscriptions
            let keep = wanted[number] ?? []
            for id in subscribed.subtracting(keep).sorted() {
                closeSessions(of: number, in: id, room: roomID)
                rooms[roomID]!.members[number]!.subscriptions.remove(id)
                rooms[roomID]!.subgroups[id]?.subscribers.remove(number)
            }
            for id in keep.subtracting(subscribed).sorted() {
                rooms[roomID]!.members[number]!.subscriptions.insert(id)
                rooms[roomID]!.subgroups[id]!.subscribers.insert(number)
            }
        }
    }

    /// This relay's number for the subgroup `name`, created (with the announced attribute) if the
    /// room has no such subgroup here yet; nil when the room holds as many as it may.
    mutating func localSubgroup(_ name: SubgroupName, dataSession: Bool, in roomID: RoomID) -> UInt16? {
        if let id = rooms[roomID]!.subgroupIDs[name] { return id }
        guard rooms[roomID]!.subgroups.count < configuration.maxSubgroupsPerRoom else { return nil }
        let id = rooms[roomID]!.allocateSubgroupID()
        rooms[roomID]!.subgroups[id] = Subgroup(name: name, dataSession: dataSession)
        rooms[roomID]!.subgroupIDs[name] = id
        return id
    }

    /// Whether a member of another relay is subscribed to the subgroup here, so that its frames
    /// are worth publishing.
    func hasRemoteSubscriber(_ subgroupID: UInt16, in roomID: RoomID) -> Bool {
        guard let room = rooms[roomID], let subgroup = room.subgroups[subgroupID] else { return false }
        return subgroup.subscribers.contains { room.members[$0]?.origin != nil }
    }

    /// A frame from another relay, made this relay's: its subgroup number (at the same offset in
    /// a data frame and a session's control frame) rewritten to this relay's, its link tag
    /// computed, its session noted for the sender (so that its unsubscribing ends it here). Nil,
    /// counted, for a frame that is not a routed data or session frame, or whose subgroup or
    /// sender's subscription this relay has not heard announced.
    mutating func adoptClusterFrame(_ frame: inout [UInt8], from sender: UInt16, of node: RelayNodeID, in roomID: RoomID) -> (FrameTag, subgroupID: UInt16)? {
        guard let scope = Self.clusterFrameScope(of: frame) else {
            statistics.cluster.malformed += 1
            return nil
        }
        var subgroupID: UInt16 = 0
        if scope.subgroupID != 0 {
            guard let local = rooms[roomID]!.remoteSubgroups[node]?[scope.subgroupID],
                rooms[roomID]!.members[sender]!.subscriptions.contains(local),
                !scope.opens || scope.name == rooms[roomID]!.subgroups[local]?.name
            else {
                statistics.cluster.unknownSubgroup += 1
                return nil
            }
            subgroupID = local
            frame[RelayEnvelope.size + 6] = UInt8(local >> 8)
            frame[RelayEnvelope.size + 7] = UInt8(local & 0xFF)
        }
        let key = Self.sessionKey(stream: scope.stream, subgroupID: subgroupID)
        switch scope.session {
        case .open(let type), .data(let type):
            if rooms[roomID]!.members[sender]!.sessions[key] == nil, rooms[roomID]!.members[sender]!.sessions.count < configuration.maxSessionsPerMember {
                rooms[roomID]!.members[sender]!.sessions[key] = type
            }
        case .close:
            rooms[roomID]!.members[sender]!.sessions[key] = nil
        }
        let delivery: FrameTag
        if case .data(let type) = scope.session { delivery = FrameTag(channel: key, delivery: .for(type)) } else { delivery = FrameTag(channel: key) }
        return (delivery, subgroupID)
    }

    /// What a relayed frame is: its stream, subgroup (the sending relay's number), the subgroup's
    /// name a session open carries, and whether it opens, carries or closes the session.
    struct ClusterFrameScope {
        enum Session { case open(SessionType), data(SessionType), close }
        let stream: UInt16
        let subgroupID: UInt16
        let name: SubgroupName?
        let session: Session
        var opens: Bool { if case .open = session { true } else { false } }
    }

    static func clusterFrameScope(of frame: [UInt8]) -> ClusterFrameScope? {
        frame.withUnsafeBytes { raw -> ClusterFrameScope? in
            guard raw.count > RelayEnvelope.size, (try? RelayEnvelope.parse(raw)) != nil else { return nil }
            let inner = UnsafeRawBufferPointer(rebasing: raw[RelayEnvelope.size...])
            switch try? FrameKind.peek(inner) {
            case .data?:
                guard let (header, _) = try? DataFrameHeader.parse(inner) else { return nil }
                return ClusterFrameScope(stream: header.streamID.wireValue, subgroupID: header.subgroupID, name: nil, session: .data(header.sessionType))
            case .control?:
                switch try? ControlFrame.parse(inner) {
                case .sessionOpen(let stream, let subgroupID, let name, let type)?:
                    return ClusterFrameScope(stream: stream.wireValue, subgroupID: subgroupID, name: name, session: .open(type))
                case .sessionClose(let stream, let subgroupID, _)?:
                    return ClusterFrameScope(stream: stream.wireValue, subgroupID: subgroupID, name: nil, session: .close)
                default:
                    return nil
                }
            case nil:
                return nil
            }
        }
    }
}

extension RelayMachine {
    /// Routed data of `node`'s stream for the room never arrived (NATS core delivers at most
    /// once). Which sessions it belonged to is unknown: every reliable session of that relay's
    /// members is reported to its receivers here (`sessionClose`, reason `lostBetweenRelays`;
    /// their partial messages from that sender are discarded), so no loss goes unseen; the
    /// sessions go on.
    mutating func reportDataLost(from node: RelayNodeID, in roomID: RoomID, messages: UInt64) {
        statistics.cluster.dataLost += Int(clamping: messages)
        for (key, sender) in rooms[roomID]!.remote.sorted(by: { $0.key < $1.key }) where key.node == node {
            for (sessionKey, type) in rooms[roomID]!.members[sender]!.sessions.sorted(by: { $0.key < $1.key }) where Reliability.for(type).isFullyReliable {
                let subgroupID = UInt16(sessionKey >> 16)
                let stream = StreamID(Int(sessionKey & 0xFFFF))
                let report = RelayEnvelope.wrap(.relayed, member: sender, ControlFrame.sessionClose(streamID: stream, subgroupID: subgroupID, reason: .lostBetweenRelays).encoded)
                let receivers = subgroupID == 0 ? Array(rooms[roomID]!.members.keys) : Array(rooms[roomID]!.subgroups[subgroupID]?.subscribers ?? [])
                for number in receivers.sorted() where number != sender {
                    guard let receiver = rooms[roomID]!.members[number], receiver.origin == nil else { continue }
                    sendControl(receiver.connection, report, tag: .session(stream: stream, subgroupID: subgroupID, type: nil))
                }
                statistics.cluster.sessionsReportedLost += 1
            }
        }
    }
}

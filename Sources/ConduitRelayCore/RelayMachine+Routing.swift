import ConduitCore
import ConduitRooms

extension RelayMachine {
    /// A routed frame: authorize it against the sender's membership, rights and subscriptions,
    /// then hand one shared, restamped copy to each receiver's queue.
    mutating func handleRouted(_ id: RelayConnectionID, datagram: UnsafeRawBufferPointer, now: ConduitInstant) {
        guard case .member(let roomID, let member) = connections[id]!.phase else {
            refuseFrame(.notJoined)
            return
        }
        let envelope: RelayEnvelope
        do { envelope = try RelayEnvelope.parse(datagram) } catch {
            refuseFrame(.malformed)
            return
        }
        let inner = UnsafeRawBufferPointer(rebasing: datagram[RelayEnvelope.size...])
        let grant = rooms[roomID]!.members[member]!.grant
        let subgroupID: UInt16
        let streamKey: UInt32
        var tag = FrameTag.neutral
        switch try? FrameKind.peek(inner) {
        case .data?:
            guard let (header, _) = try? DataFrameHeader.parse(inner) else { return refuseFrame(.malformed) }
            guard grant.canPublish else { return refuseFrame(.receiveOnly) }
            subgroupID = header.subgroupID
            streamKey = Self.sessionKey(stream: header.streamID.wireValue, subgroupID: subgroupID)
            tag = FrameTag(channel: streamKey, delivery: .for(header.sessionType))
            guard authorizeScope(member, subgroupID: subgroupID, in: roomID) else { return }
            guard noteSession(member, key: streamKey, type: header.sessionType, in: roomID) else { return }
        case .control?:
            guard let control = try? ControlFrame.parse(inner) else { return refuseFrame(.malformed) }
            switch control {
            case .sessionOpen(let stream, let sub, let name, let type):
                guard grant.canPublish else { return refuseFrame(.receiveOnly) }
                guard sub == 0 || rooms[roomID]!.subgroups[sub]?.name == name else { return refuseFrame(.unjoinedSubgroup) }
                subgroupID = sub
                streamKey = Self.sessionKey(stream: stream.wireValue, subgroupID: sub)
                tag = FrameTag(channel: streamKey)
                guard authorizeScope(member, subgroupID: sub, in: roomID) else { return }
                guard noteSession(member, key: streamKey, type: type, in: roomID) else { return }
            case .sessionClose(let stream, let sub, _):
                guard grant.canPublish else { return refuseFrame(.receiveOnly) }
                subgroupID = sub
                streamKey = Self.sessionKey(stream: stream.wireValue, subgroupID: sub)
                tag = FrameTag(channel: streamKey)
                guard authorizeScope(member, subgroupID: sub, in: roomID) else { return }
                rooms[roomID]!.members[member]!.sessions[streamKey] = nil
            case .sessionUnsupported(let stream, let sub):
                // Group calls: only this receiver stops getting the stream; the senders are not told.
                let key = Self.sessionKey(stream: stream.wireValue, subgroupID: sub)
                guard rooms[roomID]!.members[member]!.unsupported.count < configuration.maxSessionsPerMember else {
                    return refuseFrame(.overLimit)
                }
                rooms[roomID]!.members[member]!.unsupported.insert(key)
                return
            case .hello, .goodbye:
                return refuseFrame(.malformed)
            }
        case nil:
            return refuseFrame(.malformed)
        }

        // A new member's first frame must not reach anyone before its name does: announce the
        // room's coalesced changes now rather than at the end of the interval.
        if !rooms[roomID]!.pendingJoined.isEmpty, rooms[roomID]!.pendingJoined.contains(member) {
            rooms[roomID]!.flushDue = now
            flushPeerLists(now: now)
        }
        let to = envelope.member
        if to != 0 {
            guard to != member, let target = rooms[roomID]!.members[to], subgroupID == 0 || target.subscriptions.contains(subgroupID) else {
                return refuseFrame(.unknownDestination)
            }
        }
        var frame = Array(datagram)
        RelayEnvelope.restamp(&frame, from: member)
        statistics.framesAccepted += 1

        var slow: [RelayConnectionID] = []
        if to != 0 {
            deliver(frame, tag: tag, to: rooms[roomID]!.members[to]!, slow: &slow, now: now)
        } else if subgroupID == 0 {
            deliverToRoom(frame, tag: tag, in: roomID, except: member, slow: &slow, now: now)
        } else {
            for number in rooms[roomID]!.subgroups[subgroupID]!.subscribers where number != member {
                guard let receiver = rooms[roomID]!.members[number] else { continue }
                deliver(frame, tag: tag, to: receiver, slow: &slow, now: now)
            }
        }
        forwardToCluster(frame, from: member, to: to, subgroupID: subgroupID, in: roomID)
        isolate(slow, now: now)
    }

    /// A sender may reach the main room, or a subgroup it is subscribed to whose `dataSession`
    /// attribute is true.
    mutating func authorizeScope(_ member: UInt16, subgroupID: UInt16, in roomID: RoomID) -> Bool {
        guard subgroupID != 0 else { return true }
        guard rooms[roomID]!.members[member]!.subscriptions.contains(subgroupID), let subgroup = rooms[roomID]!.subgroups[subgroupID] else {
            refuseFrame(.unjoinedSubgroup)
            return false
        }
        guard subgroup.dataSession else {
            refuseFrame(.subgroupWithoutDataSessions)
            return false
        }
        return true
    }

    /// Remembers the sender's session (bounded), so leaving a subgroup can close it for the others.
    mutating func noteSession(_ member: UInt16, key: UInt32, type: SessionType, in roomID: RoomID) -> Bool {
        if rooms[roomID]!.members[member]!.sessions[key] != nil { return true }
        guard rooms[roomID]!.members[member]!.sessions.count < configuration.maxSessionsPerMember else {
            refuseFrame(.overLimit)
            return false
        }
        rooms[roomID]!.members[member]!.sessions[key] = type
        return true
    }

    /// Queues `frame` for one receiver under its caps: unreliable frames past the unreliable cap
    /// are dropped and counted; a reliable frame past the hard cap marks the receiver slow (it is
    /// disconnected after this fan-out, so the loop over the room stays undisturbed). `tag` is the
    /// frame's link channel (a session's is its stream key) and delivery.
    mutating func deliver(_ frame: [UInt8], tag: FrameTag, to receiver: Member, slow: inout [RelayConnectionID], now: ConduitInstant) {
        // A member of another relay gets the frame through the cluster (`forwardToCluster`).
        guard receiver.grant.canSubscribe, receiver.origin == nil else { return }
        if !receiver.unsupported.isEmpty, receiver.unsupported.contains(tag.channel) {
            statistics.droppedUnsupported += 1
            return
        }
        queue(frame, tag: tag, for: receiver.connection, slow: &slow, now: now)
    }

    /// Queues `frame` for every member connected here that may receive, but `sender`: a frame
    /// to the whole main room. The room's list of those receivers is kept between frames (see
    /// `Room.localReceivers()`), so no member is copied out of the table per frame (iterating the
    /// members did, retaining and releasing each one's sets) and the other relays' (or shards')
    /// members, which get the frame through the cluster, are not passed over one by one.
    mutating func deliverToRoom(_ frame: [UInt8], tag: FrameTag, in roomID: RoomID, except sender: UInt16, slow: inout [RelayConnectionID], now: ConduitInstant) {
        // Through the room's index: `rooms[roomID]!.localReceivers()` moved the room out of the
        // table and back, copying it, for every frame.
        guard let room = rooms.index(forKey: roomID) else { return }
        for receiver in rooms.values[room].localReceivers() where receiver.member != sender {
            if receiver.hasUnsupported, rooms[roomID]!.members[receiver.member]?.unsupported.contains(tag.channel) == true {
                statistics.droppedUnsupported += 1
                continue
            }
            queue(frame, tag: tag, for: receiver.connection, slow: &slow, now: now)
        }
    }

    /// Queues `frame` for connection `id` under its caps (see ``deliver(_:tag:to:slow:now:)``).
    mutating func queue(_ frame: [UInt8], tag: FrameTag, for id: RelayConnectionID, slow: inout [RelayConnectionID], now: ConduitInstant) {
        // One lookup, then the entry changed in place through its index: this runs once per
        // receiver per frame, and `connections[id]!.enqueue(…)` copied the connection (its
        // queues retained and released) out of the table and back.
        // An isolated receiver gets nothing after its disconnect (RelayMachine+Isolation.swift).
        guard let index = connections.index(forKey: id), !connections.values[index].isolated else { return }
        switch connections.values[index].enqueue(frame, tag: tag, now: now, configuration: configuration) {
        case .queued(let signal, let becameFull):
            statistics.framesRelayed += 1
            statistics.bytesRelayed += frame.count
            if signal { actions.append(.transmit(id)) }
            if becameFull {
                fullReceivers.insert(id)
                if case .member(let roomID, _) = connections.values[index].phase { announcePressure(in: roomID) }
            }
        case .droppedUnreliable:
            statistics.unreliableDropped += 1
        case .slow:
            if !slow.contains(id) { slow.append(id) }
        }
    }

}

extension RelayMachine {
    /// Unreliable frames dropped for one receiver.
    public func unreliableDropped(for id: RelayConnectionID) -> Int { connections[id]?.unreliableDropped ?? 0 }
}

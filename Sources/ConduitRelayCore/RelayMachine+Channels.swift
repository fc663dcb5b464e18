import ConduitCore
import ConduitRooms

/// Sora-style labeled channels at the relay: members declare labels after joining; a label's
/// options are set by its first declarer and must agree for the others; what a member with a
/// sending direction sends goes to every other member with a receiving direction, stamped with
/// the sender.
extension RelayMachine {
    mutating func declareChannels(_ declarations: [ChannelDeclaration], member: UInt16, room roomID: RoomID) {
        let state = rooms[roomID]!.members[member]!
        var answer: [ChannelInfo] = []
        for declaration in declarations {
            if declaration.direction.sends, !state.grant.canPublish {
                refuseFrame(.receiveOnly)
                continue
            }
            if let id = rooms[roomID]!.channelIDs[declaration.label] {
                guard rooms[roomID]!.channels[id]!.declaration.agrees(with: declaration) else {
                    refuseFrame(.channelMismatch)
                    continue
                }
                rooms[roomID]!.channels[id]!.directions[member] = declaration.direction
                answer.append(ChannelInfo(channelID: id, declaration: declaration))
            } else {
                guard rooms[roomID]!.channels.count < configuration.maxSubgroupsPerRoom else {
                    refuseFrame(.overLimit)
                    continue
                }
                let id = rooms[roomID]!.allocateChannelID()
                rooms[roomID]!.channels[id] = Channel(declaration: declaration, directions: [member: declaration.direction])
                rooms[roomID]!.channelIDs[declaration.label] = id
                answer.append(ChannelInfo(channelID: id, declaration: declaration))
            }
        }
        sendControl(state.connection, RoomControlFrame.channels(answer).encoded)
        if !answer.isEmpty { publishChannels(roomID) }
    }

    mutating func removeChannels(of member: UInt16, in roomID: RoomID) {
        for id in rooms[roomID]!.channels.keys.sorted() {
            rooms[roomID]!.channels[id]!.directions[member] = nil
            if rooms[roomID]!.channels[id]!.directions.isEmpty {
                rooms[roomID]!.channelIDs[rooms[roomID]!.channels[id]!.declaration.label] = nil
                rooms[roomID]!.channels[id] = nil
            }
        }
    }

    mutating func handleChannel(_ id: RelayConnectionID, datagram: UnsafeRawBufferPointer, now: ConduitInstant) {
        guard case .member(let roomID, let member) = connections[id]!.phase else { return refuseFrame(.notJoined) }
        guard let header = try? ChannelFrameHeader.parse(datagram),
            let (inner, _) = try? DataFrameHeader.parse(UnsafeRawBufferPointer(rebasing: datagram[ChannelFrameHeader.size...])),
            inner.subgroupID == header.channelID, Int(inner.totalLength) <= ChannelFrameHeader.maxMessageBytes
        else { return refuseFrame(.malformed) }
        guard header.sender == 0 else { return refuseFrame(.forgedSender) }
        guard let channel = rooms[roomID]!.channels[header.channelID], let direction = channel.directions[member] else {
            return refuseFrame(.unknownDestination)
        }
        guard direction.sends else { return refuseFrame(.receiveOnly) }
        guard Self.agrees(header.reliability, with: channel.declaration.reliability), header.compressed == channel.declaration.compress else {
            return refuseFrame(.malformed)
        }
        var frame = Array(datagram)
        ChannelFrameHeader.stampSender(&frame, member)
        statistics.framesAccepted += 1
        var slow: [RelayConnectionID] = []
        let tag = FrameTag(channel: FrameTag.labeledChannel(header.channelID), delivery: header.reliability)
        for (number, direction) in channel.directions.sorted(by: { $0.key < $1.key }) where number != member && direction.receives {
            guard let receiver = rooms[roomID]!.members[number] else { continue }
            deliver(frame, tag: tag, to: receiver, slow: &slow, now: now)
        }
        forwardChannelToCluster(frame, from: member, channel: header.channelID, in: roomID)
        isolate(slow, now: now)
    }
}

import ConduitCore
import ConduitRooms

// Labeled channels across relays, as subgroups are (RelayMachine+ClusterSubgroups.swift): a channel
// is the same on every relay by its label, each relay numbers it its own way; each relay announces
// which of its members declared which channel with which direction (`channels` messages), the
// others give those members the directions here, and rewrite the channel number and the sender
// stamp of every channel frame that crosses (receivers' sender headers name the sender by the
// member number their own relay gave it).

extension RelayMachine {
    /// Announces which members here declared which of the room's labeled channels (nothing when
    /// the room never had one).
    mutating func publishChannels(_ roomID: RoomID) {
        guard cluster != nil, let room = rooms[roomID], !room.channels.isEmpty else { return }
        let announced = room.channels.sorted { $0.key < $1.key }.compactMap { id, channel -> RelayClusterChannel? in
            let local = channel.directions.filter { room.members[$0.key]?.origin == nil }
            return local.isEmpty ? nil : RelayClusterChannel(id: id, declaration: channel.declaration, directions: local)
        }
        publishCluster(roomID, .channels(announced))
    }

    /// Replaces what this relay knows of `node`'s channel declarations in the room: its members
    /// get the announced directions here (a channel created here if new), and lose the others.
    mutating func applyChannels(_ announced: [RelayClusterChannel], of node: RelayNodeID, in roomID: RoomID) {
        var numbers: [UInt16: UInt16] = [:]
        var wanted: [UInt16: [UInt16: ChannelDeclaration.Direction]] = [:]
        for channel in announced {
            guard let id = localChannel(channel.declaration, in: roomID) else { continue }
            numbers[channel.id] = id
            for (origin, direction) in channel.directions {
                guard let number = rooms[roomID]!.remote[RemoteMemberKey(node: node, member: origin)] else {
                    noteUnknownRemoteMember(of: node, in: roomID)
                    continue
                }
                wanted[id, default: [:]][number] = direction
            }
        }
        rooms[roomID]!.remoteChannels[node] = numbers.isEmpty ? nil : numbers
        let members = Set(rooms[roomID]!.remote.filter { $0.key.node == node }.values)
        for id in rooms[roomID]!.channels.keys.sorted() {
            for number in members { rooms[roomID]!.channels[id]!.directions[number] = wanted[id]?[number] }
            if rooms[roomID]!.channels[id]!.directions.isEmpty {
                rooms[roomID]!.channelIDs[rooms[roomID]!.channels[id]!.declaration.label] = nil
                rooms[roomID]!.channels[id] = nil
            }
        }
    }

    /// This relay's number for the channel `declaration` names, created if the room has none by
    /// that label here yet; nil, counted, when the options disagree with the channel here or the
    /// room holds as many channels as it may.
    mutating func localChannel(_ declaration: ChannelDeclaration, in roomID: RoomID) -> UInt16? {
        if let id = rooms[roomID]!.channelIDs[declaration.label] {
            guard rooms[roomID]!.channels[id]!.declaration.agrees(with: declaration) else {
                statistics.cluster.channelMismatches += 1
                return nil
            }
            return id
        }
        guard rooms[roomID]!.channels.count < configuration.maxSubgroupsPerRoom else {
            statistics.cluster.overLimit += 1
            return nil
        }
        let id = rooms[roomID]!.allocateChannelID()
        rooms[roomID]!.channels[id] = Channel(declaration: declaration, directions: [:])
        rooms[roomID]!.channelIDs[declaration.label] = id
        return id
    }

    /// A local member's channel frame, already delivered here: published once while a member of
    /// another relay receives on the channel.
    mutating func forwardChannelToCluster(_ frame: [UInt8], from member: UInt16, channel id: UInt16, in roomID: RoomID) {
        guard let room = rooms[roomID], !room.remote.isEmpty, let channel = room.channels[id],
            channel.directions.contains(where: { $0.value.receives && room.members[$0.key]?.origin != nil })
        else { return }
        publishCrossing(frame, from: member, in: roomID)
    }

    /// A channel frame from a member of another relay: renumbered for this relay (channel, and the
    /// sender its receivers' headers name), then handed to the members here receiving on it.
    mutating func deliverClusterChannelFrame(_ frame: [UInt8], from sender: UInt16, of node: RelayNodeID, in roomID: RoomID, now: ConduitInstant) {
        guard let header = crossingHeader(of: frame, headerSize: ChannelFrameHeader.size, ChannelFrameHeader.parse, number: \.channelID) else { return }
        guard let id = rooms[roomID]!.remoteChannels[node]?[header.channelID], let channel = rooms[roomID]!.channels[id],
            channel.directions[sender]?.sends == true
        else {
            statistics.cluster.unknownChannel += 1
            return
        }
        var renumbered = Self.renumbered(frame, to: id, headerSize: ChannelFrameHeader.size)
        ChannelFrameHeader.stampSender(&renumbered, sender)
        let receivers = channel.directions.filter { $0.key != sender && $0.value.receives }.keys.sorted()
        deliverCrossing(renumbered, tag: FrameTag(channel: FrameTag.labeledChannel(id), delivery: header.reliability), to: receivers, in: roomID, now: now)
    }

    /// Whether a relayed frame is a labeled channel's (its own frame kind) rather than a routed one.
    static func isChannelFrame(_ frame: [UInt8]) -> Bool {
        frame.first.map { $0 & 0x0F == RelayFrameKind.channel.rawValue } ?? false
    }
}

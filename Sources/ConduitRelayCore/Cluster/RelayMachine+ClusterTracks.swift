import ConduitCore
import ConduitRooms

// Data tracks across relays. Each relay announces the tracks its members published and the other
// relays' tracks its members subscribe to (`tracks` messages). A relay shows another relay's
// tracks to its members as tracks of its own numbering (published by the member number it gave
// the publisher); a publisher's relay sends a track's frames to the cluster only while another
// relay announced a subscriber, so a subscriber gets what is sent once its subscription is known
// there (only what is sent after subscribing, as on one relay).

extension RelayMachine {
    /// Announces the tracks published here and the other relays' tracks subscribed to here
    /// (nothing when the room never had a track).
    mutating func publishTracks(_ roomID: RoomID) {
        guard cluster != nil, let room = rooms[roomID], !room.tracks.isEmpty || room.tracksAnnounced else { return }
        let published = room.tracks.sorted { $0.key < $1.key }.compactMap { _, track in
            room.members[track.info.publisher]?.origin == nil ? track.info : nil
        }
        var subscribed: [RelayClusterTrackKey] = []
        for (node, numbers) in room.remoteTracks.sorted(by: { $0.key < $1.key }) {
            for (remote, local) in numbers.sorted(by: { $0.key < $1.key }) {
                guard let track = room.tracks[local], track.subscribers.contains(where: { room.members[$0]?.origin == nil }) else { continue }
                subscribed.append(RelayClusterTrackKey(node: node, track: remote))
            }
        }
        // Once something was announced, empty lists are announced too (the last unpublish, and
        // again with every presence, should that message be lost).
        if !published.isEmpty || !subscribed.isEmpty { rooms[roomID]!.tracksAnnounced = true }
        publishCluster(roomID, .tracks(published: published, subscribed: subscribed))
    }

    /// Replaces what this relay knows of `node`'s tracks in the room (its members here see the
    /// new ones published and the gone ones unpublished) and of which tracks of this relay it
    /// wants frames of.
    mutating func applyTracks(published: [TrackInfo], subscribed: [RelayClusterTrackKey], of node: RelayNodeID, in roomID: RoomID) {
        let known = rooms[roomID]!.remoteTracks[node] ?? [:]
        var numbers: [UInt16: UInt16] = [:]
        for info in published {
            guard let publisher = rooms[roomID]!.remote[RemoteMemberKey(node: node, member: info.publisher)] else {
                noteUnknownRemoteMember(of: node, in: roomID)
                continue
            }
            if let local = known[info.trackID], rooms[roomID]!.tracks[local]?.info.publisher == publisher {
                numbers[info.trackID] = local
                continue
            }
            guard rooms[roomID]!.tracks.count < configuration.maxSubgroupsPerRoom else {
                statistics.cluster.overLimit += 1
                continue
            }
            let local = rooms[roomID]!.allocateTrackID()
            let shown = TrackInfo(trackID: local, publisher: publisher, name: info.name, reliability: info.reliability)
            rooms[roomID]!.tracks[local] = Track(info: shown)
            numbers[info.trackID] = local
            let announcement = RoomControlFrame.trackPublished(shown).encoded
            for member in rooms[roomID]!.members.values.sorted(by: { $0.connection < $1.connection }) { sendControl(member.connection, announcement) }
        }
        for (remote, local) in known.sorted(by: { $0.key < $1.key }) where numbers[remote] == nil {
            // (Unless the number was freed and taken by another track meanwhile.)
            guard let track = rooms[roomID]!.tracks[local], rooms[roomID]!.members[track.info.publisher]?.origin?.node == node else { continue }
            unpublish(local, in: roomID)
        }
        rooms[roomID]!.remoteTracks[node] = numbers.isEmpty ? nil : numbers
        let wanted = Set(subscribed.filter { $0.node == cluster!.node }.map(\.track))
        for id in rooms[roomID]!.tracks.keys.sorted() {
            if wanted.contains(id) { rooms[roomID]!.tracks[id]!.remoteSubscribers.insert(node) } else { rooms[roomID]!.tracks[id]!.remoteSubscribers.remove(node) }
        }
    }

    /// A local publisher's track frame, already delivered here: published once while another
    /// relay has a subscriber.
    mutating func forwardTrackToCluster(_ frame: [UInt8], from member: UInt16, track id: UInt16, in roomID: RoomID) {
        guard rooms[roomID]?.tracks[id]?.remoteSubscribers.isEmpty == false else { return }
        publishCrossing(frame, from: member, in: roomID)
    }

    /// A track frame from a publisher of another relay: renumbered for this relay, then handed to
    /// the track's subscribers here.
    mutating func deliverClusterTrackFrame(_ frame: [UInt8], from sender: UInt16, of node: RelayNodeID, in roomID: RoomID, now: ConduitInstant) {
        guard let header = crossingHeader(of: frame, headerSize: TrackFrameHeader.size, TrackFrameHeader.parse, number: \.trackID) else { return }
        guard let id = rooms[roomID]!.remoteTracks[node]?[header.trackID], let track = rooms[roomID]!.tracks[id], track.info.publisher == sender else {
            statistics.cluster.unknownTrack += 1
            return
        }
        let renumbered = Self.renumbered(frame, to: id, headerSize: TrackFrameHeader.size)
        deliverCrossing(renumbered, tag: FrameTag(channel: FrameTag.trackChannel(id), delivery: header.reliability), to: track.subscribers.sorted(), in: roomID, now: now)
    }

    /// A local member's track or channel frame for the other relays, to everyone there.
    mutating func publishCrossing(_ frame: [UInt8], from member: UInt16, in roomID: RoomID) {
        publishCluster(roomID, .data(origin: member, targetNode: 0, targetMember: 0, frame: frame))
        statistics.cluster.framesForwarded += 1
    }

    /// A track or channel frame's header (`headerSize` bytes, read by `parse`), if the data frame
    /// after it is whole and carries the header's number in its subgroup field, as every such
    /// frame must; nil, counted as malformed, otherwise.
    mutating func crossingHeader<Header>(
        of frame: [UInt8], headerSize: Int, _ parse: (UnsafeRawBufferPointer) throws(WireError) -> Header, number: (Header) -> UInt16
    ) -> Header? {
        let header = frame.withUnsafeBytes { raw -> Header? in
            guard let header = try? parse(raw), raw.count > headerSize,
                let (inner, _) = try? DataFrameHeader.parse(UnsafeRawBufferPointer(rebasing: raw[headerSize...])),
                inner.subgroupID == number(header)
            else { return nil }
            return header
        }
        if header == nil { statistics.cluster.malformed += 1 }
        return header
    }

    /// A track or channel frame with this relay's number `id`: in its header (bytes 2–3) and in
    /// its inner data frame's subgroup field.
    static func renumbered(_ frame: [UInt8], to id: UInt16, headerSize: Int) -> [UInt8] {
        var renumbered = frame
        for offset in [2, headerSize + 6] {
            renumbered[offset] = UInt8(id >> 8)
            renumbered[offset + 1] = UInt8(id & 0xFF)
        }
        return renumbered
    }

    /// Queues a frame from another relay for `receivers` here (counted once), and isolates those
    /// it made too slow.
    mutating func deliverCrossing(_ frame: [UInt8], tag: FrameTag, to receivers: [UInt16], in roomID: RoomID, now: ConduitInstant) {
        statistics.cluster.framesReceived += 1
        var slow: [RelayConnectionID] = []
        for number in receivers {
            guard let receiver = rooms[roomID]!.members[number] else { continue }
            deliver(frame, tag: tag, to: receiver, slow: &slow, now: now)
        }
        isolate(slow, now: now)
    }

    /// Whether a relayed frame is a data track's (its own frame kind).
    static func isTrackFrame(_ frame: [UInt8]) -> Bool {
        frame.first.map { $0 & 0x0F == RelayFrameKind.track.rawValue } ?? false
    }
}

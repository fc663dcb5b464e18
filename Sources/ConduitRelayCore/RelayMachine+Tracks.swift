import ConduitCore
import ConduitRooms

/// Data tracks (Twilio `DataTrack`): a member publishes a named track with its reliability;
/// members subscribe to it and get what is sent from then on.
extension RelayMachine {
    mutating func handleTrackControl(_ frame: RoomControlFrame, member: UInt16, room roomID: RoomID, now: ConduitInstant) {
        let state = rooms[roomID]!.members[member]!
        switch frame {
        case .publishTrack(let name, let reliability):
            guard state.grant.canPublish else { return refuseFrame(.receiveOnly) }
            guard !rooms[roomID]!.tracks.values.contains(where: { $0.info.publisher == member && $0.info.name == name }) else {
                return refuseFrame(.alreadyJoined)
            }
            guard rooms[roomID]!.tracks.count < configuration.maxSubgroupsPerRoom else { return refuseFrame(.overLimit) }
            let id = rooms[roomID]!.allocateTrackID()
            let info = TrackInfo(trackID: id, publisher: member, name: name, reliability: reliability)
            rooms[roomID]!.tracks[id] = Track(info: info)
            statistics.tracksPublished += 1
            let announcement = RoomControlFrame.trackPublished(info).encoded
            for other in rooms[roomID]!.members.values.sorted(by: { $0.connection < $1.connection }) {
                sendControl(other.connection, announcement)
            }
            publishTracks(roomID)
        case .unpublishTrack(let id):
            guard rooms[roomID]!.tracks[id]?.info.publisher == member else { return refuseFrame(.forgedSender) }
            unpublish(id, in: roomID)
            publishTracks(roomID)
        case .subscribeTrack(let id):
            guard state.grant.canSubscribe else { return refuseFrame(.subgroupNotAllowed) }
            guard rooms[roomID]!.tracks[id] != nil else { return refuseFrame(.unknownDestination) }
            rooms[roomID]!.tracks[id]!.subscribers.insert(member)
            sendControl(state.connection, RoomControlFrame.trackSubscribed(id).encoded)
            publishTracks(roomID)
        case .unsubscribeTrack(let id):
            rooms[roomID]!.tracks[id]?.subscribers.remove(member)
            publishTracks(roomID)
        default:
            break
        }
    }

    mutating func unpublish(_ id: UInt16, in roomID: RoomID) {
        guard rooms[roomID]!.tracks.removeValue(forKey: id) != nil else { return }
        let announcement = RoomControlFrame.trackUnpublished(id).encoded
        for other in rooms[roomID]!.members.values.sorted(by: { $0.connection < $1.connection }) {
            sendControl(other.connection, announcement)
        }
    }

    /// A member that leaves takes its tracks with it and stops being a subscriber.
    mutating func removeTracks(of member: UInt16, in roomID: RoomID) {
        for (id, track) in rooms[roomID]!.tracks.sorted(by: { $0.key < $1.key }) {
            if track.info.publisher == member {
                unpublish(id, in: roomID)
            } else {
                rooms[roomID]!.tracks[id]!.subscribers.remove(member)
            }
        }
    }

    /// A frame's reliability must be its track's, except that a lifetime is the part left, at most
    /// the track's.
    static func agrees(_ frame: Reliability, with track: Reliability) -> Bool {
        guard frame.ordered == track.ordered else { return false }
        switch (frame.limit, track.limit) {
        case (.maxPacketLifeTime(let left), .maxPacketLifeTime(let whole)): return left <= whole
        default: return frame.limit == track.limit
        }
    }

    /// Tells a new member about the tracks already published.
    mutating func announceTracks(to member: UInt16, in roomID: RoomID) {
        let connection = rooms[roomID]!.members[member]!.connection
        for (_, track) in rooms[roomID]!.tracks.sorted(by: { $0.key < $1.key }) {
            sendControl(connection, RoomControlFrame.trackPublished(track.info).encoded)
        }
    }

    /// A track frame from its publisher goes to the track's current subscribers, unchanged but
    /// for the lifetime the relay subtracts when it writes the frame out.
    mutating func handleTrack(_ id: RelayConnectionID, datagram: UnsafeRawBufferPointer, now: ConduitInstant) {
        guard case .member(let roomID, let member) = connections[id]!.phase else { return refuseFrame(.notJoined) }
        guard let header = try? TrackFrameHeader.parse(datagram),
            let (inner, _) = try? DataFrameHeader.parse(UnsafeRawBufferPointer(rebasing: datagram[TrackFrameHeader.size...])),
            inner.subgroupID == header.trackID, Int(inner.totalLength) <= TrackFrameHeader.maxMessageBytes
        else { return refuseFrame(.malformed) }
        guard let track = rooms[roomID]!.tracks[header.trackID] else { return refuseFrame(.unknownDestination) }
        guard track.info.publisher == member else { return refuseFrame(.forgedSender) }
        guard Self.agrees(header.reliability, with: track.info.reliability) else { return refuseFrame(.malformed) }
        let frame = Array(datagram)
        statistics.framesAccepted += 1
        var slow: [RelayConnectionID] = []
        let tag = FrameTag(channel: FrameTag.trackChannel(header.trackID), delivery: header.reliability)
        for number in track.subscribers.sorted() where number != member {
            guard let receiver = rooms[roomID]!.members[number] else { continue }
            deliver(frame, tag: tag, to: receiver, slow: &slow, now: now)
        }
        forwardTrackToCluster(frame, from: member, track: header.trackID, in: roomID)
        isolate(slow, now: now)
    }
}

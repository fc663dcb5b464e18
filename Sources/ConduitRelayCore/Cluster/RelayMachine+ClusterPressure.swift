import ConduitCore
import ConduitRooms

// Backpressure across relays (and shards). A room is held back on a relay while one of its
// receivers there is above the high-water mark and not yet lagging (RelayMachine+Backpressure.swift).
// That relay says so to the others on the room's stream (`pressure`, and with every presence, so a
// lost one is repaired by the next); each of them then leaves its own senders in the room unread,
// exactly as for a full receiver of its own, until the relay says the pressure is gone, or dies.
// A receiver far behind still holds nobody back once it lags: it is isolated by its own relay only.

extension RelayMachine {
    /// Whether a receiver here holds `roomID`'s senders back (full, not lagging).
    func holdsRoomBack(_ roomID: RoomID) -> Bool {
        for id in fullReceivers {
            guard let receiver = connections[id], !receiver.lagging, case .member(let room, _) = receiver.phase, room == roomID else { continue }
            return true
        }
        return false
    }

    /// After a receiver of `roomID` here became full, drained, started lagging or left: tells the
    /// other relays when that changed whether the room is held back here.
    mutating func announcePressure(in roomID: RoomID) {
        guard cluster != nil, let room = rooms[roomID] else { return }
        let holding = holdsRoomBack(roomID)
        guard holding != room.pressureAnnounced else { return }
        rooms[roomID]!.pressureAnnounced = holding
        // Nobody elsewhere to tell: the next presence carries it to a relay that comes.
        guard !room.remoteLastHeard.isEmpty || !room.remote.isEmpty else { return }
        statistics.cluster.pressureAnnounced += 1
        publishCluster(roomID, .pressure(holdingBack: holding))
    }

    /// What relay `node` says of `roomID`: while it holds the room back, this relay's senders in it
    /// are not read; once no relay does (and no receiver here), they are read again.
    mutating func applyPressure(_ holding: Bool, of node: RelayNodeID, in roomID: RoomID) {
        guard rooms[roomID] != nil else { return }
        if holding {
            guard rooms[roomID]!.remotePressure.insert(node).inserted else { return }
            statistics.cluster.remotePressureApplied += 1
            pressuredRooms.insert(roomID)
        } else {
            guard rooms[roomID]!.remotePressure.remove(node) != nil else { return }
            guard rooms[roomID]!.remotePressure.isEmpty else { return }
            pressuredRooms.remove(roomID)
            resumeReaders(in: roomID)
        }
    }
}

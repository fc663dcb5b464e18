import ConduitCore

/// What a relay machine holds now, for checks that its caps hold whatever its links send (the
/// `relay-machine` fuzz target reads it after every step).
package struct RelayFootprint: Sendable, Hashable {
    /// Links the relay knows (any phase); those not joined yet (counted against
    /// `maxPendingConnections`); rooms with members.
    package var connections = 0, pendingConnections = 0, rooms = 0
    /// The most members, subgroups, tracks and labeled channels in one room.
    package var largestRoom = 0, largestSubgroups = 0, largestTracks = 0, largestChannels = 0
    /// The most subscriptions, sessions and unsupported streams of one member.
    package var largestSubscriptions = 0, largestSessions = 0, largestUnsupported = 0
    /// The most bytes queued for one link; the most changes waiting for one room's next
    /// peer-list update; actions the driver has not taken yet.
    package var largestOutbox = 0, largestPendingChanges = 0, actionsQueued = 0
}

extension RelayMachine {
    /// What the relay holds now.
    package var footprint: RelayFootprint {
        var footprint = RelayFootprint()
        footprint.connections = connections.count
        footprint.pendingConnections = pendingConnections
        footprint.rooms = rooms.count
        for room in rooms.values {
            footprint.largestRoom = max(footprint.largestRoom, room.members.count)
            footprint.largestSubgroups = max(footprint.largestSubgroups, room.subgroups.count)
            footprint.largestTracks = max(footprint.largestTracks, room.tracks.count)
            footprint.largestChannels = max(footprint.largestChannels, room.channels.count)
            footprint.largestPendingChanges = max(footprint.largestPendingChanges, room.pendingJoined.count + room.pendingLeft.count)
            for member in room.members.values {
                footprint.largestSubscriptions = max(footprint.largestSubscriptions, member.subscriptions.count)
                footprint.largestSessions = max(footprint.largestSessions, member.sessions.count)
                footprint.largestUnsupported = max(footprint.largestUnsupported, member.unsupported.count)
            }
        }
        footprint.largestOutbox = connections.values.reduce(0) { max($0, $1.outboxBytes) }
        footprint.actionsQueued = actions.count
        return footprint
    }
}

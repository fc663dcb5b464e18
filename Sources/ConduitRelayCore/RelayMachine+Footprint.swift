import ConduitCore

/// What a relay machine holds now, for checks that its caps hold whatever its links send (the
/// `relay-machine` fuzz target reads it after every step).
package struct RelayFootprint: Sendable, Hashable {
    /// Links the relay knows (any phase).
    package var connections = 0
    /// Links that have not joined yet (counted against `maxPendingConnections`).
    package var pendingConnections = 0
    /// Rooms with members.
    package var rooms = 0
    /// The most members, subgroups, tracks and labeled channels in one room.
    package var largestRoom = 0
    package var largestSubgroups = 0
    package var largestTracks = 0
    package var largestChannels = 0
    /// The most subscriptions, sessions and unsupported streams of one member.
    package var largestSubscriptions = 0
    package var largestSessions = 0
    package var largestUnsupported = 0
    /// The most bytes queued for one link.
    package var largestOutbox = 0
    /// Changes waiting to be announced in one room's next peer-list update.
    package var largestPendingChanges = 0
    /// Actions the driver has not taken yet.
    package var actionsQueued = 0
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

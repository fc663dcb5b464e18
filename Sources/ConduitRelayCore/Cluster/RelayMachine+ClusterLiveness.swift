import ConduitCore

/// How a clustered relay shows it is alive and notices when another is not.
public struct RelayClusterLiveness: Sendable, Hashable {
    /// How often the relay publishes every hosted room's presence again (also repairs a lost one).
    public var heartbeatInterval: Duration
    /// A relay heard nothing from about a room for this long is taken for dead there: its members
    /// are reported left on this relay. Several heartbeats long, so one lost message is not a death.
    public var silenceTimeout: Duration
    /// An emptied room's records leave the roster's stream this long after the record that
    /// emptied it (``RelayRosterPurge``). A relay reading the stream further behind than this
    /// (cut off from NATS that long) finds some of them gone after it read others: it then starts
    /// over, disconnecting its members (`rosterRemovedUnread`). Far longer than a working relay
    /// lags; short enough that the stream holds little more than the rooms in use.
    public var rosterCompactionDelay: Duration

    /// Heartbeats every second; a relay silent for 4 s is dead, so that its members are reported
    /// left within 5 s of its death (issue 16), the room's next peer-list update included. An
    /// emptied room's roster records go ten minutes after it emptied.
    public init(heartbeatInterval: Duration = .seconds(1), silenceTimeout: Duration = .seconds(4), rosterCompactionDelay: Duration = .seconds(600)) {
        self.heartbeatInterval = heartbeatInterval
        self.silenceTimeout = silenceTimeout
        self.rosterCompactionDelay = rosterCompactionDelay
    }
}

extension RelayMachine {
    /// The next heartbeat (when the node stream's timeouts run too). When the quietest other
    /// relay of a room would be dead is in the machine's timeout floor (``scanTimeoutFloor()``):
    /// a walk over every room after every batch cost a busy shard more than its rooms' traffic.
    func clusterDeadline() -> ConduitInstant? { cluster?.nextHeartbeat }

    /// Publishes every hosted room's presence and the node stream's heartbeat when a heartbeat is
    /// due (with the node stream's own timeouts), and reports the members of relays that fell
    /// silent as left.
    mutating func handleClusterTimeouts(now: ConduitInstant) {
        guard let cluster else { return }
        if now >= cluster.nextHeartbeat {
            self.cluster!.nextHeartbeat = now + cluster.liveness.heartbeatInterval
            handleNodeTimeouts(now: now)
            for roomID in rooms.keys.sorted() { publishPresence(roomID, wantsReply: false) }
        }
        for roomID in rooms.keys.sorted() {
            guard let room = rooms[roomID] else { continue }
            for (node, heard) in room.remoteLastHeard.sorted(by: { $0.key < $1.key }) where now - heard >= cluster.liveness.silenceTimeout {
                statistics.cluster.relaysTimedOut += 1
                rooms[roomID]!.remoteLastHeard[node] = nil
                rooms[roomID]!.clusterInbound[node] = nil
                rooms[roomID]!.remoteSubgroups[node] = nil
                rooms[roomID]!.remoteChannels[node] = nil
                // A dead relay holds nobody back.
                applyPressure(false, of: node, in: roomID)
                applyTracks(published: [], subscribed: [], of: node, in: roomID)
                applyPresence([], of: node, in: roomID, now: now)
                // With a roster: a relay whose members the roster still lists here announced the
                // room every heartbeat; silent, it is gone (noticed here without waiting for the
                // node stream's next check).
                if cluster.roster?.logs[roomID]?.members.contains(where: { $0.node == node }) == true { rosterNodeGone(node) }
            }
        }
    }
}

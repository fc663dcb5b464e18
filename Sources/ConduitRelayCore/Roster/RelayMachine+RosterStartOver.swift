import ConduitCore
import ConduitRooms

extension RelayMachine {
    /// This relay read the roster's stream anew and found records gone that it never read: they
    /// were removed as their room emptied (``RelayRosterPurge``) while it was behind or cut off
    /// for longer than `rosterCompactionDelay`, so what it holds of the roster may be stale (a
    /// member of that room who left meanwhile). It starts over, as a relay that starts now:
    /// its members are disconnected (`removedByCluster`; they may join again, here or at another
    /// relay), joins waiting for their record are refused (`clusterUnavailable`), every other
    /// relay's member leaves its rooms here, and it reads the stream again from its start.
    /// Counted: `rosterRemovedUnread`.
    mutating func startRosterOver(now: ConduitInstant) {
        statistics.cluster.rosterRemovedUnread += 1
        let waiting = Set(cluster!.roster!.pending.keys)
        for (id, connection) in connections.sorted(by: { $0.key < $1.key }) {
            switch connection.phase {
            case .member:
                disconnect(id, .removedByCluster, "this relay fell behind the cluster's roster and starts over", now: now)
            case .admitting:
                refuse(id, .clusterUnavailable, now: now)
            case .awaitingJoin, .authorizing, .closing:
                break
            }
        }
        for roomID in rooms.keys.sorted() {
            for number in rooms[roomID]?.members.keys.sorted() ?? [] where rooms[roomID]?.members[number]?.origin != nil {
                removeMember(number, from: roomID, now: now)
            }
        }
        cluster!.roster!.startedOverAtTicket = cluster!.roster!.nextTicket
        cluster!.roster!.refusedAtStartOver.formUnion(waiting)
        cluster!.roster!.pending = [:]
        cluster!.roster!.logs = [:]
        cluster!.roster!.unheard = [:]
        cluster!.roster!.lastSequence = 0
        cluster!.roster!.lastDelivered = 0
        cluster!.roster!.resyncing = true
        cluster!.roster!.resumeFrom = 1
    }
}

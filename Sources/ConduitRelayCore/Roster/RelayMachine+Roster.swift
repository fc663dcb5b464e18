import DequeModule
public import ConduitCore
import ConduitRooms

/// The roster (issue 16: "one versioned peer list, the same on every relay"). Without it, each
/// relay of a cluster numbers members and versions its peer lists itself, from the presence the
/// others announce. With it, joins and leaves are records of one ordered log (a JetStream stream,
/// ``RelayRosterRecord``) that every relay applies in the same order (``RelayRosterLog``): member
/// numbers and versions are then the same on every relay.
///
/// - A join admitted here is appended as a record and answered once the record is read back,
///   with the number the log gave it; another relay's join under the same name that came first
///   in the log wins (this one is refused `alreadyJoined`, as on every relay).
/// - A member leaving here is removed here at once (its link is gone) and appended as a record;
///   the others hear of it when the record is read back, with the log's version.
/// - A relay that fell silent is appended as `nodeGone`: its members leave everywhere at once.
/// - Frames from a member of another relay can arrive (NATS core) before its join record (the
///   roster's stream): they are held until it does, bounded and counted.
///
/// Presence still carries subgroups, channels, tracks and pressure, and shows that a relay is
/// alive; membership comes from the roster alone.
extension RelayMachine {
    /// The roster's side of a cluster.
    struct RosterState: Sendable {
        var logs: [RoomID: RelayRosterLog] = [:]
        var outbox = Deque<RelayRosterRecord>()
        var nextTicket: UInt64 = 1
        /// Joins admitted here waiting for their record, by ticket.
        var pending: [UInt64: RelayConnectionID] = [:]
        /// The stream sequence of the last record taken.
        var lastSequence: UInt64 = 0
        /// The consumer's count of the last record it delivered (when the driver passes one).
        var lastDelivered: UInt64 = 0
        /// Emptied rooms' records to remove from the stream once due (in due order), and those
        /// due, until the driver takes them.
        var scheduledPurges = Deque<(purge: RelayRosterPurge, due: ConduitInstant)>()
        var purges = Deque<RelayRosterPurge>()
        /// A record did not arrive: nothing after it is taken until the stream is read again from
        /// it (``pollRosterResume()``); the sequence to read from, until the driver takes it.
        var resyncing = false
        var resumeFrom: UInt64?
        /// Relays that wrote records but were never heard on the node stream, since when: gone
        /// unless heard within `silenceTimeout` (a relay that died before this one started).
        var unheard: [RelayNodeID: ConduitInstant] = [:]
        /// Once it started over (RelayMachine+RosterStartOver.swift): its first ticket after, and
        /// the joins it refused then (their records may still come, and must leave).
        var startedOverAtTicket: UInt64?
        var refusedAtStartOver: Set<UInt64> = []
    }

    // MARK: Driver interface

    /// Whether membership comes from the roster (``joinCluster(as:liveness:roster:now:)``).
    public var usesRoster: Bool { cluster?.roster != nil }

    /// The next roster record to append to the stream (``RelayRosterRecord/subject``), in order;
    /// nil when there is none. The driver appends them in this order, retrying one that fails.
    public mutating func pollRosterRecord() -> RelayRosterRecord? {
        guard let record = cluster?.roster?.outbox.popFirst() else { return nil }
        statistics.cluster.rosterRecordsPublished += 1
        return record
    }

    /// Records the stream no longer needs, to remove (``RelayRosterPurge``); nil when there are none.
    public mutating func pollRosterPurge() -> RelayRosterPurge? {
        cluster?.roster?.purges.popFirst()
    }

    /// The sequence to read the roster's stream from again, once: a record did not reach this
    /// relay (a sequence was skipped), so the driver reads the stream anew from the missing one.
    public mutating func pollRosterResume() -> UInt64? {
        guard let from = cluster?.roster?.resumeFrom else { return nil }
        cluster!.roster!.resumeFrom = nil
        return from
    }

    /// A record of the roster as the stream delivered it, with its stream sequence (one that does
    /// not parse is counted and skipped by every relay alike) and, from a stream whose records
    /// may be removed (``RelayRosterPurge``), the consumer's count of the messages it delivered:
    /// 1, 2, 3… for each consumer, from 1 again for a new one.
    public mutating func handleRoster(_ bytes: [UInt8], sequence: UInt64, delivered: UInt64? = nil, now: ConduitInstant) {
        guard usesRoster, takeRosterSequence(sequence, delivered: delivered, now: now) else { return }
        guard let record = try? RelayRosterRecord.parse(bytes) else {
            statistics.cluster.rosterMalformed += 1
            return
        }
        apply(record, sequence: sequence, now: now)
    }

    /// A record of the roster, with its stream sequence (and the consumer's count, as above):
    /// applied once, in order.
    public mutating func handleRoster(_ record: RelayRosterRecord, sequence: UInt64, delivered: UInt64? = nil, now: ConduitInstant) {
        guard usesRoster, takeRosterSequence(sequence, delivered: delivered, now: now) else { return }
        apply(record, sequence: sequence, now: now)
    }

    /// Takes `sequence` as the next record's if it is: one already taken is skipped (a redelivery,
    /// or the tail of a stream read again); one missing here stops everything after it until the
    /// stream is read again from the record after the last taken. With a consumer's count, a
    /// record is missing when the count does not go on by one (a jump in the stream's sequence is
    /// records removed, not lost); while reading again, only the new consumer's first record
    /// (count 1, once the driver took the request) is taken. A count back at 1 that this relay
    /// did not ask for (the client made a consumer of its own, past where it delivered, which may
    /// be past a record dropped here) is a record missing too. Without a count, the stream's own
    /// sequence must go on by one.
    private mutating func takeRosterSequence(_ sequence: UInt64, delivered: UInt64?, now: ConduitInstant) -> Bool {
        let roster = cluster!.roster!
        let last = roster.lastSequence
        let follows = delivered.map { roster.resyncing ? $0 == 1 && roster.resumeFrom == nil : $0 == roster.lastDelivered + 1 }
        if follows == true {
            cluster!.roster!.lastDelivered = delivered!
            cluster!.roster!.resyncing = false
        }
        guard sequence > last else {
            statistics.cluster.rosterSkipped += 1
            return false
        }
        // (The first record read may be past 1: a stream whose start was removed.)
        guard follows ?? (last == 0 || sequence == last + 1) else {
            if !cluster!.roster!.resyncing {
                statistics.cluster.rosterGaps += 1
                cluster!.roster!.resyncing = true
                cluster!.roster!.resumeFrom = last + 1
            }
            return false
        }
        // Read anew past records that are gone: removed before this relay read them, so it was
        // behind (or cut off) longer than `rosterCompactionDelay`, and the rooms they were about
        // may be stale here. It starts over.
        if roster.resyncing, delivered != nil, last > 0, sequence > last + 1 {
            startRosterOver(now: now)
            return false
        }
        cluster!.roster!.resyncing = false
        cluster!.roster!.lastSequence = sequence
        return true
    }

    private mutating func apply(_ record: RelayRosterRecord, sequence: UInt64, now: ConduitInstant) {
        guard let node = cluster?.node else { return }
        latestNow = max(latestNow, now)
        statistics.cluster.rosterRecordsApplied += 1
        // A relay with members in the roster that this relay has never heard (it may have died
        // before this one started) is given `silenceTimeout` to be heard.
        if record.room != nil, record.node != node, cluster!.nodes.peers[record.node] == nil, cluster!.roster!.unheard[record.node] == nil {
            cluster!.roster!.unheard[record.node] = now
        }
        if let roomID = record.room {
            let existed = cluster!.roster!.logs[roomID] != nil
            applyRoster(record.event, in: roomID, now: now)
            if existed, record.node == node { purgeIfEmptied(roomID, at: sequence, now: now) }
        } else {
            // Any relay may have written it: the one with the lowest number among those this
            // relay takes for alive purges (two that disagree purge twice, which removes nothing more).
            let purges = cluster!.nodes.peers.keys.allSatisfy { node < $0 }
            for roomID in cluster!.roster!.logs.keys.sorted() {
                applyRoster(record.event, in: roomID, now: now)
                if purges { purgeIfEmptied(roomID, at: sequence, now: now) }
            }
        }
    }

    /// The room's log emptied at `sequence`: its records up to that one are no longer needed, and
    /// go once every relay has surely read them (`rosterCompactionDelay`). One purge per room
    /// waits: a later one covers the earlier.
    private mutating func purgeIfEmptied(_ roomID: RoomID, at sequence: UInt64, now: ConduitInstant) {
        guard cluster!.roster!.logs[roomID] == nil else { return }
        let purge = RelayRosterPurge(subject: RelayRosterRecord.subject(ofRoom: roomID), before: sequence + 1)
        cluster!.roster!.scheduledPurges.removeAll { $0.purge.subject == purge.subject }
        cluster!.roster!.scheduledPurges.append((purge, now + cluster!.liveness.rosterCompactionDelay))
    }

    // MARK: Writing records

    /// A join this relay verified: appended to the roster, answered when read back.
    mutating func admitThroughRoster(_ id: RelayConnectionID, _ request: RelayJoinRequest, grant: RelayGrant, now: ConduitInstant) {
        let ticket = cluster!.roster!.nextTicket
        cluster!.roster!.nextTicket += 1
        cluster!.roster!.pending[ticket] = id
        connections[id]!.phase = .admitting(request, grant, ticket: ticket, since: now)
        lowerTimeoutFloor(to: now + configuration.joinTimeout)
        appendRoster(.joined(room: request.room, node: cluster!.node, ticket: ticket, peer: request.peer, dataSessionsSupported: request.dataSessionsSupported))
    }

    mutating func appendRoster(_ record: RelayRosterRecord) {
        cluster?.roster?.outbox.append(record)
    }

    /// A relay fell silent (or never spoke): its members leave every room, through the roster.
    mutating func rosterNodeGone(_ gone: RelayNodeID) {
        guard usesRoster, gone != cluster!.node else { return }
        cluster!.roster!.unheard[gone] = nil
        guard cluster!.roster!.logs.values.contains(where: { log in log.members.contains { $0.node == gone } }) else { return }
        appendRoster(.nodeGone(gone))
    }

    /// Relays that wrote roster records but were not heard within `silenceTimeout` of that, and
    /// joins still waiting for their record after `joinTimeout` (refused: the roster is unreachable);
    /// held frames past `silenceTimeout`; purges that fell due.
    mutating func handleRosterTimeouts(now: ConduitInstant) {
        guard let roster = cluster?.roster, let liveness = cluster?.liveness else { return }
        for (node, since) in roster.unheard.sorted(by: { $0.key < $1.key }) {
            if cluster!.nodes.peers[node] != nil {
                cluster!.roster!.unheard[node] = nil
            } else if now - since >= liveness.silenceTimeout {
                rosterNodeGone(node)
            }
        }
        for (ticket, id) in roster.pending.sorted(by: { $0.key < $1.key }) {
            guard case .admitting(_, _, _, let since)? = connections[id]?.phase, now - since >= configuration.joinTimeout else { continue }
            // Its record may still land: it is then found abandoned and a `left` follows it.
            cluster!.roster!.pending[ticket] = nil
            refuse(id, .clusterUnavailable, now: now)
        }
        expireHeldFrames(now: now)
        while let first = cluster!.roster!.scheduledPurges.first, first.due <= now {
            cluster!.roster!.purges.append(cluster!.roster!.scheduledPurges.removeFirst().purge)
        }
    }

    /// The earliest roster deadline: an unheard relay's, a waiting join's, a purge's (a held
    /// frame's is in the timeout floor, see ``scanTimeoutFloor()``).
    func rosterDeadline() -> ConduitInstant? {
        // Field by field: binding `cluster?.roster` copied the roster's tables after every batch.
        guard let silence = cluster?.liveness.silenceTimeout, let unheard = cluster?.roster?.unheard else { return nil }
        var deadline: ConduitInstant?
        func consider(_ instant: ConduitInstant) { deadline = deadline.map { min($0, instant) } ?? instant }
        for since in unheard.values { consider(since + silence) }
        if let purge = cluster?.roster?.scheduledPurges.first { consider(purge.due) }
        return deadline
    }

    // MARK: Applying records

    private mutating func applyRoster(_ event: RelayRosterLog.Event, in roomID: RoomID, now: ConduitInstant) {
        var log = cluster!.roster!.logs[roomID] ?? RelayRosterLog()
        let outcome = log.apply(event)
        cluster!.roster!.logs[roomID] = log.isEmpty ? nil : log
        switch outcome {
        case .unchanged:
            return
        case .refused(let node, let ticket):
            guard node == cluster!.node, let id = cluster!.roster!.pending.removeValue(forKey: ticket) else { return }
            statistics.cluster.rosterJoinsRefused += 1
            refuse(id, .alreadyJoined, now: now)
        case .changed(let updates, let joined, let left):
            if let joined {
                if joined.node == cluster!.node {
                    completeJoin(joined, in: roomID, log: log, updates: updates, now: now)
                } else {
                    addRemoteMember(joined, in: roomID, updates: updates, now: now)
                }
            } else {
                removeRosterMembers(left, from: roomID, updates: updates, now: now)
            }
        }
    }

    /// This relay's own join record came back: the member joins with the log's number.
    private mutating func completeJoin(_ entry: RelayRosterLog.Entry, in roomID: RoomID, log: RelayRosterLog, updates: [PeerListUpdate], now: ConduitInstant) {
        guard let id = cluster!.roster!.pending.removeValue(forKey: entry.ticket),
            case .admitting(let request, let grant, _, _)? = connections[id]?.phase
        else {
            // Answered before this relay started over: its leave is in the stream already.
            if let mark = cluster!.roster!.startedOverAtTicket, entry.ticket < mark, !cluster!.roster!.refusedAtStartOver.contains(entry.ticket) {
                return addRemoteMember(entry, in: roomID, updates: updates, now: now)
            }
            // The link closed (or its join timed out) meanwhile: it leaves the roster again.
            return abandon(entry, in: roomID, updates: updates, now: now)
        }
        // The limits a relay without a roster checks at admission, checked against the log: a
        // join refused now leaves the roster again (its peers see it come and go).
        let refusal: RelayRefusal? =
            rooms[roomID] == nil && rooms.count >= configuration.maxRooms ? .overLimit
            : log.members.count > configuration.maxMembersPerRoom ? .roomFull : nil
        if let refusal {
            refuse(id, refusal, now: now)
            return abandon(entry, in: roomID, updates: updates, now: now)
        }
        if rooms[roomID] == nil { rooms[roomID] = hostedRoom(roomID, from: log, joining: entry.number) }
        // The others hear of it with the log's version; its own snapshot carries that version.
        sendPeerListUpdates(updates, in: roomID, except: nil)
        rooms[roomID]!.version = log.version
        pendingConnections -= 1
        rooms[roomID]!.members[entry.number] = Member(
            connection: id, peer: request.peer, dataSessionsSupported: request.dataSessionsSupported, grant: grant, ticket: entry.ticket)
        welcome(id, member: entry.number, in: request.room, now: now)
    }

    /// A join of this relay's that the roster took but that will not be a member here: it leaves
    /// the roster again. Until that record is read back, the room here lists it as every other
    /// relay does (a member nothing is delivered to), so that versions stay in step everywhere.
    private mutating func abandon(_ entry: RelayRosterLog.Entry, in roomID: RoomID, updates: [PeerListUpdate], now: ConduitInstant) {
        appendRoster(.left(room: roomID, node: cluster!.node, ticket: entry.ticket))
        addRemoteMember(entry, in: roomID, updates: updates, now: now)
    }

    /// A room this relay starts hosting: every member of other relays the log holds.
    private func hostedRoom(_ roomID: RoomID, from log: RelayRosterLog, joining: UInt16) -> Room {
        var room = Room()
        // (This relay's own entries among them are joins abandoned here, waiting for their leave.)
        for entry in log.members where entry.number != joining {
            room.addRemote(RemoteMemberKey(node: entry.node, member: entry.number), as: entry.number, entry.roomMember, in: roomID)
        }
        room.version = log.version
        return room
    }

    private mutating func addRemoteMember(_ entry: RelayRosterLog.Entry, in roomID: RoomID, updates: [PeerListUpdate], now: ConduitInstant) {
        guard rooms[roomID] != nil else { return }
        let key = RemoteMemberKey(node: entry.node, member: entry.number)
        rooms[roomID]!.addRemote(key, as: entry.number, entry.roomMember, in: roomID)
        sendPeerListUpdates(updates, in: roomID, except: nil)
        releaseHeldFrames(of: key, in: roomID, now: now)
        // Its relay may have announced its subscriptions before this record came: asked again.
        if rooms[roomID]?.awaitingRoster.remove(entry.node) != nil { publishPresence(roomID, wantsReply: true) }
    }

    private mutating func removeRosterMembers(_ gone: [RelayRosterLog.Entry], from roomID: RoomID, updates: [PeerListUpdate], now: ConduitInstant) {
        for entry in gone {
            rooms[roomID]?.heldLosses[RemoteMemberKey(node: entry.node, member: entry.number)] = nil
            guard let member = rooms[roomID]?.members[entry.number] else { continue }
            if member.origin != nil {
                removeMember(entry.number, from: roomID, now: now)
            } else if member.ticket == entry.ticket {
                // Still connected here, yet gone from the roster (the others took this relay for
                // dead): the member is told, and may join again.
                disconnect(member.connection, .removedByCluster, "the cluster took this relay for gone", now: now)
            }
        }
        guard rooms[roomID] != nil else { return }
        sendPeerListUpdates(updates, in: roomID, except: nil)
    }

    /// Sends each update (one version each) to the room's members here, and keeps the room's
    /// version with them.
    private mutating func sendPeerListUpdates(_ updates: [PeerListUpdate], in roomID: RoomID, except excluded: UInt16?) {
        guard !updates.isEmpty, let room = rooms[roomID] else { return }
        let receivers = room.members.filter { $0.value.origin == nil && $0.key != excluded }.sorted { $0.key < $1.key }
        for update in updates {
            let frame = RoomControlFrame.peers(update).encoded
            // A departure must not overtake the departed member's last frames on their own channels.
            let tag = update.left.isEmpty ? FrameTag.neutral : FrameTag(isBarrier: true)
            for (_, member) in receivers { sendControl(member.connection, frame, tag: tag) }
            statistics.peerListUpdatesSent += 1
            rooms[roomID]!.version = update.version
        }
    }
}

extension RelayMachine {
    /// An announcement (subgroups, channels, tracks) named a member of `node` not known here:
    /// counted; with a roster, that relay is asked again once one of its members' records comes.
    mutating func noteUnknownRemoteMember(of node: RelayNodeID, in roomID: RoomID) {
        statistics.cluster.unknownSender += 1
        if usesRoster { rooms[roomID]!.awaitingRoster.insert(node) }
    }
}

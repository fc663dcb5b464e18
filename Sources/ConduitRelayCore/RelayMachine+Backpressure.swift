public import ConduitCore

// Backpressure through the relay: a room moves at the pace its receivers take.
//
//   receiver queue  ──► above receiverHighWater ──► the room's senders are not read
//        │                 (fullSince = now)          (mayRead == false; their links'
//        │                                             flow control suspends their `send`)
//        ├──► back under half of it ──► the senders are read again (.resumeReading)
//        ├──► still above after laggingAfter, while most of the room's other receivers
//        │        were not above it at all meanwhile ──► lagging: holds nobody back, counted
//        │    (most of them were too: the room as a whole is slow, a loaded machine or a
//        │     sender faster than everyone; nobody is behind the others, the clock restarts)
//        └──► past maxQueuedBytesPerReceiver, or nothing taken from its queue for isolateAfter
//             since it went above the mark (lagging or not: a room whose receivers all stopped
//             reading does not hold its senders for good) ──► isolated: disconnected as
//             slowReceiver, with the reason (one that keeps taking is behind by a bounded
//             amount, not stopped)
//
// So one stalled receiver holds its room for at most `laggingAfter`, and reliable data is
// never dropped at the relay to make room: it waits in the senders' own queues.
extension RelayMachine {
    /// Whether the driver should read `id`'s link now. False while a receiver of the same room
    /// (not lagging) is above the high-water mark: the driver then leaves the link unread until
    /// a `.resumeReading(id)` action, so the sender's transport pushes back on its `send`.
    /// Links that have not joined, and members that may not publish, are always read.
    public mutating func mayRead(_ id: RelayConnectionID, now: ConduitInstant) -> Bool {
        guard !isHeldBack(id, now: now) else {
            if pausedReaders.insert(id).inserted { statistics.sendersPaused += 1 }
            return false
        }
        return true
    }

    /// Whether `id` waits for a `.resumeReading(id)` (``mayRead(_:now:)`` said no since).
    public func isReadPaused(_ id: RelayConnectionID) -> Bool { pausedReaders.contains(id) }

    func isHeldBack(_ id: RelayConnectionID, now: ConduitInstant) -> Bool {
        guard !fullReceivers.isEmpty || !pressuredRooms.isEmpty, case .member(let roomID, let member)? = connections[id]?.phase,
            rooms[roomID]?.members[member]?.grant.canPublish == true
        else { return false }
        // Another relay of the cluster holds the room back (RelayMachine+ClusterPressure.swift).
        if rooms[roomID]!.remotePressure.isEmpty == false { return true }
        for other in fullReceivers where other != id {
            guard let receiver = connections[other], !receiver.lagging, case .member(let otherRoom, _) = receiver.phase, otherRoom == roomID else {
                continue
            }
            return true
        }
        return false
    }

    /// After the queue of the connection at `index` (`id`) was written out: once under half the
    /// mark, it holds nobody back.
    mutating func noteDrained(_ id: RelayConnectionID, at index: [RelayConnectionID: Connection].Index) {
        // Read in place: this runs after every write, and `connections[id]?.fullSince` copied
        // the connection (its queues retained and released) and hashed its ID.
        let lowWater = configuration.receiverHighWater / 2
        let drained = { (connection: inout Connection) in
            connection.fullSince != nil && connection.outboxBytes <= lowWater
        }(&connections.values[index])
        guard drained else { return }
        connections[id]!.fullSince = nil
        connections[id]!.aboveMarkSince = nil
        connections[id]!.fullEndedAt = latestNow
        connections[id]!.lagging = false
        fullReceivers.remove(id)
        if case .member(let roomID, _) = connections[id]!.phase {
            resumeReaders(in: roomID)
            announcePressure(in: roomID)
        }
    }

    /// `id` is closing or gone: it no longer holds anyone back, nor waits to be read.
    mutating func forgetBackpressure(_ id: RelayConnectionID, phase: Connection.Phase) {
        pausedReaders.remove(id)
        stopHoldingBack(id, phase: phase)
    }

    /// `id` is no receiver any more (closing, gone or isolated): it holds nobody back. Whether
    /// it waits to be read as a sender is left as it is.
    mutating func stopHoldingBack(_ id: RelayConnectionID, phase: Connection.Phase) {
        guard fullReceivers.remove(id) != nil else { return }
        connections[id]?.fullSince = nil
        connections[id]?.aboveMarkSince = nil
        connections[id]?.lagging = false
        if case .member(let roomID, _) = phase {
            resumeReaders(in: roomID)
            announcePressure(in: roomID)
        }
    }

    /// Hands back every paused sender of `roomID` that nothing holds back any more.
    mutating func resumeReaders(in roomID: RoomID) {
        for id in pausedReaders.sorted() {
            guard case .member(let room, _)? = connections[id]?.phase, room == roomID, !isHeldBack(id, now: latestNow) else { continue }
            pausedReaders.remove(id)
            // It could not be heard while unread: the vanish check starts again from here.
            connections[id]!.lastHeard = max(connections[id]!.lastHeard, latestNow)
            lowerTimeoutFloor(to: connections[id]!.lastHeard + configuration.vanishTimeout)
            actions.append(.resumeReading(id))
        }
    }

    /// The next moment a full receiver starts lagging or is isolated.
    func backpressureDeadline() -> ConduitInstant? {
        var deadline: ConduitInstant?
        for id in fullReceivers {
            guard let connection = connections[id], let since = connection.fullSince else { continue }
            var due = isolationClock(connection, fullSince: since) + configuration.isolateAfter
            if !connection.lagging { due = min(due, since + min(configuration.laggingAfter, configuration.isolateAfter)) }
            deadline = deadline.map { min($0, due) } ?? due
        }
        return deadline
    }

    mutating func handleBackpressureTimeouts(now: ConduitInstant) {
        var isolated: [RelayConnectionID] = []
        for id in fullReceivers.sorted() {
            guard let since = connections[id]?.fullSince else { continue }
            if now - isolationClock(connections[id]!, fullSince: since) >= configuration.isolateAfter {
                // Stopped: nothing taken for isolateAfter, whatever the rest of the room does.
                isolated.append(id)
            } else if connections[id]!.lagging {
                continue
            } else if now - since >= configuration.isolateAfter {
                isolated.append(id)
            } else if now - since >= configuration.laggingAfter, !connections[id]!.lagging {
                guard isBehindTheOthers(id, since: since) else {
                    // Not behind the others: the room is held at the pace they all take.
                    connections[id]!.fullSince = now
                    continue
                }
                connections[id]!.lagging = true
                statistics.laggingReceivers += 1
                if case .member(let roomID, _) = connections[id]!.phase {
                    resumeReaders(in: roomID)
                    announcePressure(in: roomID)
                }
            }
        }
        for id in isolated {
            isolateSlowReceiver(id, "fell behind the room: over \(configuration.receiverHighWater) bytes queued and nothing taken for \(configuration.isolateAfter)", now: now)
        }
    }

    /// Where a full receiver's isolateAfter counts from: when it last took something from its
    /// queue, or when it went above the mark if later.
    func isolationClock(_ connection: Connection, fullSince: ConduitInstant) -> ConduitInstant {
        let above = connection.aboveMarkSince ?? fullSince
        return max(above, connection.lastTaken ?? above)
    }

    /// Whether `id`, full since `since`, fell behind the others of its room here: fewer than half
    /// of the room's other receivers on this relay were above the mark at any time since then.
    /// (The "a receiver that falls far behind the others": with twenty receivers equally
    /// starved on a loaded machine, an absolute pace let seven to nine of them lag, and the room
    /// then ran ahead of them until one was isolated.) Alone in its room, it is behind.
    func isBehindTheOthers(_ id: RelayConnectionID, since: ConduitInstant) -> Bool {
        guard case .member(let roomID, let member)? = connections[id]?.phase, let room = rooms[roomID] else { return true }
        var others = 0
        var fullToo = 0
        for (number, other) in room.members where number != member && other.origin == nil && other.grant.canSubscribe {
            guard let connection = connections[other.connection], !connection.isolated else { continue }
            others += 1
            if connection.fullSince != nil || (connection.fullEndedAt.map { $0 >= since } ?? false) { fullToo += 1 }
        }
        return others == 0 || fullToo * 2 < others
    }

    /// Receivers whose reliable queue reached its cap during one fan-out: isolated after it, so
    /// the loop over the room stays undisturbed.
    mutating func isolate(_ slow: [RelayConnectionID], now: ConduitInstant) {
        for connection in slow {
            isolateSlowReceiver(connection, "reliable data queued past \(configuration.maxQueuedBytesPerReceiver) bytes", now: now)
        }
    }
}

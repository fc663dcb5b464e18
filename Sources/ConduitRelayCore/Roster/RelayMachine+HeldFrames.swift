import ConduitCore
import ConduitRooms

/// Frames ahead of their sender's roster record (RelayMachine+Roster.swift). Frames from a member
/// of another relay travel over NATS core, its `joined` record over the roster's stream: the
/// frames can come first. They are held until the record does, bounded (4,096 frames or 4 MiB a
/// room, for at most `silenceTimeout`) and counted (`heldForRoster`, `heldDropped`). A reliable
/// session that lost frames so is reported to its receivers once its sender's record comes, as
/// frames lost between relays are (`sessionClose`, `lostBetweenRelays`).
extension RelayMachine {
    /// A routed frame from a member of another relay not yet in the roster here.
    struct HeldFrame: Sendable {
        let origin: RemoteMemberKey
        let target: UInt16
        let frame: [UInt8]
        let heldAt: ConduitInstant
    }

    /// What is known of a reliable session whose held frames were dropped: its type and subgroup
    /// name, and whom its frames were for (0: everyone it reaches), from the frames dropped.
    struct HeldLoss: Sendable {
        var type: SessionType
        var subgroup: SubgroupName?
        var targets: Set<UInt16> = []
        let since: ConduitInstant
    }

    /// Frames held per room for members whose join record has not arrived.
    static let maxHeldFrames = 4_096
    static let maxHeldBytes = 4 << 20
    /// Sessions per room whose held frames were dropped, kept to be reported (beyond this, the
    /// drops are only counted).
    static let maxHeldLosses = 4_096

    /// Holds a frame from a member of another relay the roster has not brought yet (bounded: the
    /// oldest goes when full, counted).
    mutating func holdForRoster(_ frame: [UInt8], origin: RemoteMemberKey, to target: UInt16, in roomID: RoomID, now: ConduitInstant) {
        statistics.cluster.heldForRoster += 1
        if rooms[roomID]!.heldForRoster.isEmpty, let silence = cluster?.liveness.silenceTimeout {
            lowerTimeoutFloor(to: now + silence)  // the room's oldest held frame expires then
        }
        rooms[roomID]!.heldForRoster.append(HeldFrame(origin: origin, target: target, frame: frame, heldAt: now))
        rooms[roomID]!.heldBytes += frame.count
        while rooms[roomID]!.heldForRoster.count > Self.maxHeldFrames || rooms[roomID]!.heldBytes > Self.maxHeldBytes {
            dropOldestHeld(in: roomID, now: now)
        }
    }

    /// `origin`'s record came: its held frames are delivered in order. A session that lost frames
    /// is reported after the frames kept, so that its receivers know it (opened first when none of
    /// its frames was kept), but before a kept frame that closes it (so the report never closes
    /// a session opened again after).
    mutating func releaseHeldFrames(of origin: RemoteMemberKey, in roomID: RoomID, now: ConduitInstant) {
        guard rooms[roomID] != nil else { return }
        var losses = rooms[roomID]!.heldLosses.removeValue(forKey: origin) ?? [:]
        var held: [HeldFrame] = []
        if rooms[roomID]!.heldForRoster.contains(where: { $0.origin == origin }) {
            held = rooms[roomID]!.heldForRoster.filter { $0.origin == origin }
            rooms[roomID]!.heldForRoster.removeAll { $0.origin == origin }
            rooms[roomID]!.heldBytes = rooms[roomID]!.heldForRoster.reduce(0) { $0 + $1.frame.count }
        }
        var seen: Set<UInt32> = []
        for frame in held {
            guard rooms[roomID] != nil else { return }
            if let scope = Self.clusterFrameScope(of: frame.frame) {
                let session = Self.sessionKey(stream: scope.stream, subgroupID: scope.subgroupID)
                if case .close = scope.session, let loss = losses.removeValue(forKey: session) {
                    reportHeldLoss(session, loss, of: origin, in: roomID, known: seen.contains(session), now: now)
                }
                seen.insert(session)
            }
            guard rooms[roomID] != nil else { return }
            deliverClusterFrame(frame.frame, origin: origin, to: frame.target, in: roomID, now: now)
        }
        for (session, loss) in losses.sorted(by: { $0.key < $1.key }) {
            guard rooms[roomID] != nil else { return }
            reportHeldLoss(session, loss, of: origin, in: roomID, known: seen.contains(session), now: now)
        }
    }

    /// Frames whose sender's record did not come within `silenceTimeout` are dropped (counted);
    /// losses kept longer than a join can wait for its record are forgotten (their sender never
    /// came: only counted).
    mutating func expireHeldFrames(now: ConduitInstant) {
        guard let timeout = cluster?.liveness.silenceTimeout else { return }
        let forgetAfter = timeout + configuration.joinTimeout
        for roomID in rooms.keys.sorted() {
            while let first = rooms[roomID]!.heldForRoster.first, now - first.heldAt >= timeout { dropOldestHeld(in: roomID, now: now) }
            guard !rooms[roomID]!.heldLosses.isEmpty else { continue }
            rooms[roomID]!.heldLosses = rooms[roomID]!.heldLosses.compactMapValues { sessions in
                let kept = sessions.filter { now - $0.value.since < forgetAfter }
                return kept.isEmpty ? nil : kept
            }
        }
    }

    private mutating func dropOldestHeld(in roomID: RoomID, now: ConduitInstant) {
        guard let dropped = rooms[roomID]!.heldForRoster.popFirst() else { return }
        rooms[roomID]!.heldBytes -= dropped.frame.count
        statistics.cluster.heldDropped += 1
        noteHeldLoss(dropped, in: roomID, now: now)
    }

    /// A dropped frame of a reliable session (opening or carrying it, or closing one that already
    /// lost frames): the session is kept, to be reported once its sender's record comes.
    private mutating func noteHeldLoss(_ dropped: HeldFrame, in roomID: RoomID, now: ConduitInstant) {
        guard let scope = Self.clusterFrameScope(of: dropped.frame) else { return }
        let session = Self.sessionKey(stream: scope.stream, subgroupID: scope.subgroupID)
        var loss = rooms[roomID]!.heldLosses[dropped.origin]?[session]
        switch scope.session {
        case .open(let type), .data(let type):
            guard Reliability.for(type).isFullyReliable else { return }
            if loss == nil {
                guard rooms[roomID]!.heldLosses.values.reduce(0, { $0 + $1.count }) < Self.maxHeldLosses else { return }
                loss = HeldLoss(type: type, since: now)
            }
        case .close:
            // (A departing member's close often comes after its leave record: not a loss then.)
            guard loss != nil else { return }
        }
        loss!.subgroup = loss!.subgroup ?? scope.name
        loss!.targets.insert(dropped.target)
        rooms[roomID]!.heldLosses[dropped.origin, default: [:]][session] = loss
    }

    /// Reports one session that lost held frames to its receivers, as frames lost between relays
    /// are (``reportDataLost(from:in:messages:)``), through the way the sender's own frames go (its
    /// relay's subgroup numbers, adopted here): opened first unless `known` (a kept frame of it
    /// came first), then closed with `lostBetweenRelays`.
    private mutating func reportHeldLoss(_ session: UInt32, _ loss: HeldLoss, of origin: RemoteMemberKey, in roomID: RoomID, known: Bool, now: ConduitInstant) {
        let stream = StreamID(Int(session & 0xFFFF))
        let subgroupID = UInt16(session >> 16)
        var frames: [ControlFrame] = []
        if !known, subgroupID == 0 || loss.subgroup != nil {
            frames.append(.sessionOpen(streamID: stream, subgroupID: subgroupID, subgroup: loss.subgroup, type: loss.type))
        }
        frames.append(.sessionClose(streamID: stream, subgroupID: subgroupID, reason: .lostBetweenRelays))
        let targets: [UInt16] = loss.targets.contains(0) ? [0] : loss.targets.sorted()
        for target in targets {
            for frame in frames {
                guard rooms[roomID] != nil else { return }
                deliverClusterFrame(RelayEnvelope.wrap(.routed, member: origin.member, frame.encoded), origin: origin, to: target, in: roomID, now: now)
            }
        }
        statistics.cluster.sessionsReportedLost += 1
    }
}

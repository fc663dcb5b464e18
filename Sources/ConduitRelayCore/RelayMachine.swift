import DequeModule
public import ConduitCore
import ConduitRooms

/// The sans-IO relay: rooms, membership, subgroups, routing, authorization and per-receiver
/// queues, for every link the driver hands it.
///
/// The contract is quinn-proto's: the driver feeds datagrams per connection
/// (``handle(_:batch:now:)``), link closures and the passing of time; it drains actions
/// (``pollAction()``: authorize a join, write a connection's outbox, close a link) and asks when
/// to call again (``nextTimeout()``). Tokens are verified by the driver (the core has no crypto):
/// a join becomes an `.authorize` action and waits for ``admit(_:grant:now:)`` or ``refuse(_:_:now:)``.
///
/// Forwarding is one copy: the upstream frame is copied once, its envelope rewritten in place
/// (`RelayEnvelope/restamp(_:from:)`), and that one array is shared by every receiver's queue.
public struct RelayMachine: Sendable {
    /// Room caps, peer-list coalescing, per-receiver queue limits and invitation limits.
    public let configuration: RelayConfiguration
    /// Counters of joins, refusals by reason, frames relayed and dropped.
    public internal(set) var statistics = RelayStatistics()

    var connections: [RelayConnectionID: Connection] = [:]
    var rooms: [RoomID: Room] = [:]
    var actions = Deque<RelayAction>()
    var pendingConnections = 0
    /// Links in the order they opened, for evicting the oldest unjoined one (entries of links
    /// that joined or closed since are skipped and compacted away; see RelayMachine+Admission.swift).
    var pendingOrder = Deque<RelayConnectionID>()
    /// Paces join attempts (`maxJoinAttemptsPerSecond`).
    var joinLimiter: EventRateLimiter
    /// Connections whose queue is above the high-water mark, and senders left unread because of
    /// them (see RelayMachine+Backpressure.swift).
    var fullReceivers: Set<RelayConnectionID> = []
    var pausedReaders: Set<RelayConnectionID> = []
    /// Rooms another relay of the cluster holds back (RelayMachine+ClusterPressure.swift): with
    /// `fullReceivers`, what makes reading a sender cost more than one check.
    var pressuredRooms: Set<RoomID> = []
    /// The latest `now` the driver passed in (a resumed reader counts as heard then).
    var latestNow = ConduitInstant.zero
    /// No connection's vanish or join deadline, no room's peer-list flush and, in a cluster, no
    /// room's silent-relay or held-frame deadline is earlier (nil: none is pending). A lower bound kept without a scan, because ``nextTimeout()`` runs after every
    /// batch: those deadlines only move later, except where ``lowerTimeoutFloor(to:)`` is called,
    /// and ``handleTimeout(now:)`` makes it exact again. A stale bound only wakes the timer early.
    var timeoutFloor: ConduitInstant?
    /// Invitations among the peers joined to this relay (extension 1): see ``RelayInvitations``.
    public internal(set) var invitations: RelayInvitations
    /// The relay's side of a cluster (issue 16), once it joined one: see RelayMachine+Cluster.swift.
    var cluster: ClusterState?

    /// Makes a relay with no connections and no rooms.
    /// - Parameters:
    ///   - configuration: room caps, peer-list coalescing, per-receiver queue limits, invitation limits.
    ///   - invitationKey: makes invitation IDs unpredictable; tests pass a fixed one.
    public init(configuration: RelayConfiguration = .init(), invitationKey: UInt64 = .random(in: .min ... .max)) {
        self.configuration = configuration
        self.joinLimiter = EventRateLimiter(perSecond: configuration.maxJoinAttemptsPerSecond, now: .zero)
        self.invitations = RelayInvitations(configuration: configuration.invitations, key: invitationKey)
    }

    /// The next thing the driver must do, or nil when there is none.
    public mutating func pollAction() -> RelayAction? { actions.popFirst() }

    // MARK: Connections

    /// A new link: it has `joinTimeout` to join. When `maxPendingConnections` links are waiting
    /// already, the oldest of them is refused and closed to make room (counted as
    /// ``RelayStatistics/pendingEvicted``). Returns false (and the driver should close the link)
    /// only if none could be (a zero cap).
    public mutating func connectionOpened(_ id: RelayConnectionID, now: ConduitInstant) -> Bool {
        guard connections[id] == nil else { return true }
        latestNow = max(latestNow, now)
        if pendingConnections >= configuration.maxPendingConnections {
            guard evictOldestPending(now: now) else { return false }
        }
        pendingConnections += 1
        connections[id] = Connection(lastHeard: now, openedAt: now)
        lowerTimeoutFloor(to: now + min(configuration.joinTimeout, configuration.vanishTimeout))
        notePending(id)
        return true
    }

    /// The link closed under the relay: the member (if any) leaves the room; its peers hear of it
    /// with the next peer-list update.
    public mutating func connectionClosed(_ id: RelayConnectionID, now: ConduitInstant) {
        guard let connection = connections.removeValue(forKey: id) else { return }
        latestNow = max(latestNow, now)
        forgetBackpressure(id, phase: connection.phase)
        switch connection.phase {
        case .awaitingJoin, .authorizing, .admitting: pendingConnections -= 1
        case .member(let room, let member): removeMember(member, from: room, now: now)
        case .closing: break
        }
    }

    /// Frames waiting to be written to `id`, in order, up to `maxBytes` (at least one). With
    /// `now`, a data-track frame's remaining lifetime is reduced by the time the relay held it,
    /// and a frame whose lifetime ran out here is dropped (``RelayStatistics/expiredInRelay``).
    @discardableResult
    public mutating func pollTransmit(_ id: RelayConnectionID, into batch: inout DatagramBatch, maxBytes: Int = 256 * 1024, now: ConduitInstant? = nil) -> Int {
        // One lookup, then the entry drained in place through its index: reading
        // `connections[id]!.outbox.first` and the like per frame copied the whole connection out
        // of the table (retaining and releasing its queues) and hashed its ID each time, a third
        // of a relay's CPU.
        guard let index = connections.index(forKey: id) else { return 0 }
        let (count, expired) = connections.values[index].drain(into: &batch, maxBytes: maxBytes, now: now)
        statistics.expiredInRelay += expired
        if let now { latestNow = max(latestNow, now) }
        if count + expired > 0 { connections.values[index].lastTaken = latestNow }
        noteDrained(id, at: index)
        return count
    }

    /// Bytes queued for `id` (for tests and metrics).
    public func queuedBytes(_ id: RelayConnectionID) -> Int { connections[id]?.outboxBytes ?? 0 }

    /// The member number of a connection that joined.
    public func member(of id: RelayConnectionID) -> UInt16? {
        if case .member(_, let member)? = connections[id]?.phase { return member }
        return nil
    }

    /// The peers in a room, by member number.
    public func members(of room: RoomID) -> [UInt16: PeerID] {
        rooms[room]?.members.mapValues(\.peer) ?? [:]
    }

    /// Rooms with at least one member.
    public var roomCount: Int { rooms.count }

    // MARK: Input

    /// One datagram from connection `id`. Everything malformed or unauthorized is refused and
    /// counted; nothing here traps on peer input.
    public mutating func handle(_ id: RelayConnectionID, datagram: UnsafeRawBufferPointer, now: ConduitInstant) {
        // One lookup for both, in place: this runs for every datagram.
        guard let index = connections.index(forKey: id) else { return }
        let isolatedMember = { (connection: inout Connection) -> Bool in
            connection.lastHeard = now
            guard connection.isolated, case .member = connection.phase else { return false }
            return true
        }(&connections.values[index])
        if isolatedMember { statistics.framesAfterIsolation += 1 }
        latestNow = max(latestNow, now)
        switch RelayFrameKind.peek(datagram) {
        case .routed?:
            handleRouted(id, datagram: datagram, now: now)
        case .relayed?:
            // Only the relay stamps senders. A client sending this is claiming to be someone.
            refuseFrame(.forgedSender)
        case .track?:
            handleTrack(id, datagram: datagram, now: now)
        case .channel?:
            handleChannel(id, datagram: datagram, now: now)
        case .room?:
            do { handleRoomControl(id, try RoomControlFrame.parse(datagram), now: now) } catch {
                // A join that does not parse is answered at once; the client is not left to time out.
                if !refuseUnparsableJoin(id, datagram, now: now) { refuseFrame(.malformed) }
            }
        case nil:
            refuseFrame(.malformed)
        }
    }

    /// Takes one datagram from connection `id`.
    public mutating func handle(_ id: RelayConnectionID, datagram: [UInt8], now: ConduitInstant) {
        datagram.withUnsafeBytes { handle(id, datagram: $0, now: now) }
    }

    /// Takes a batch of datagrams from connection `id`.
    public mutating func handle(_ id: RelayConnectionID, batch: DatagramBatch, now: ConduitInstant) {
        batch.forEachDatagram { handle(id, datagram: $0, now: now) }
    }

    /// Takes the datagrams of `batch` from index `start` on, in order, until a receiver of the
    /// sender's room fills (backpressure, see ``mayRead(_:now:)``): returns the index of the first
    /// datagram not taken, `batch.count` when all were. The driver keeps the rest and hands it in
    /// again from that index after `.resumeReading(id)`, so one large read cannot push every
    /// receiver past its cap at once. `end` (at most `batch.count`) stops it earlier: a driver
    /// whose frames cross to other relays or shards hands a large read in parts, so that what
    /// they receive before this relay hears of their pressure stays bounded.
    public mutating func handle(_ id: RelayConnectionID, batch: DatagramBatch, from start: Int, to end: Int? = nil, now: ConduitInstant) -> Int {
        let end = min(end ?? batch.count, batch.count)
        var index = start
        while index < end {
            batch.withDatagram(index) { handle(id, datagram: $0, now: now) }
            index += 1
            if index < batch.count, !mayRead(id, now: now) { break }
        }
        return index
    }

    mutating func refuseFrame(_ refusal: RelayRefusal) {
        statistics.refusals[refusal, default: 0] += 1
    }

    // MARK: Output helpers

    /// Queues a control frame for `id`, outside the data caps (control is small and rare). Room
    /// control rides the link's control channel; a session's control frame passes its session's tag.
    mutating func sendControl(_ id: RelayConnectionID, _ frame: [UInt8], tag: FrameTag = .neutral) {
        // An isolated member's last frame was its disconnect.
        guard connections[id] != nil, !connections[id]!.isolated else { return }
        connections[id]!.outbox.append(frame)
        connections[id]!.queuedAt.append(.zero)
        connections[id]!.tags.append(tag)
        connections[id]!.outboxBytes += frame.count
        signal(id)
    }

    mutating func signal(_ id: RelayConnectionID) {
        guard !connections[id]!.transmitSignalled else { return }
        connections[id]!.transmitSignalled = true
        actions.append(.transmit(id))
    }

    /// Ends a connection: `frame` is the last thing it gets, then the driver closes the link.
    mutating func closeConnection(_ id: RelayConnectionID, last frame: [UInt8]) {
        guard connections[id] != nil else { return }
        if case .awaitingJoin = connections[id]!.phase { pendingConnections -= 1 }
        if case .authorizing = connections[id]!.phase { pendingConnections -= 1 }
        if case .admitting = connections[id]!.phase { pendingConnections -= 1 }
        let heldBack = pausedReaders.contains(id)
        forgetBackpressure(id, phase: connections[id]!.phase)
        if connections[id]!.isolated {
            // Its close was asked for already, after its reason (RelayMachine+Isolation.swift),
            // which may still be queued. Its link was to be read to the end; a reader held back
            // for that is let go, as nothing it reads goes on now.
            connections[id]!.phase = .closing
            if heldBack { actions.append(.resumeReading(id)) }
            return
        }
        connections[id]!.phase = .closing
        connections[id]!.clearOutbox()
        sendControl(id, frame)
        actions.append(.close(id))
    }
}

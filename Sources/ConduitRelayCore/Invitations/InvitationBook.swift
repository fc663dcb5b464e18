import DequeModule
public import ConduitCore
public import ConduitRooms

/// The relay's table of invitations (Tencent-style signaling, `seeds/004`), sans-IO: requests and
/// `now` go in; events for peers come out of ``takeDeliveries()``; refusals are thrown as
/// `InvitationError`. No clock, no I/O, no Foundation.
///
/// ## States and events
///
/// An invitation is **open** until every invitee has settled, then **ended** (a tombstone, kept
/// for a bounded window so late answers learn "ended" rather than "unknown"), then **forgotten**.
/// Each invitee is `pending`, then exactly one of `accepted`, `rejected`, `timedOut`, `left` or
/// `cancelled`:
///
/// ```
///                  invite(inviter, invitees, data, timeout, onlineUserOnly)
///                     |  newInvitation -> each invitee
///                     v
///  +----------------------------- OPEN ----------------------------------+
///  |  invitee: pending --accept--------> accepted   inviteeAccepted  (1) |
///  |           pending --reject--------> rejected   inviteeRejected  (1) |
///  |           pending --deadline------> timedOut   invitationTimeout(2) |
///  |           pending --leaves relay--> left       invitationTimeout(1) |
///  +------+-------------------------------------------------+------------+
///         | last pending invitee settles                    | inviter cancels, or leaves the relay:
///         v                                                 v pending -> cancelled, invitationCancelled (3)
///  ENDED(settled)                                    ENDED(cancelled)
///         |                                                 |
///         +---- tombstone: tombstoneLifetime or maxTombstones, whichever comes first
///                                   v
///                               forgotten  (answers get unknownInvitation)
/// ```
///
/// Who is told: (1) everyone involved still on the relay except the actor: the inviter, then the
/// invitees in list order (for a call, that is the caller). (2) everyone involved, the timed-out
/// invitees included ("both the caller and callee will receive the timeout notification"), with
/// the list of invitees that timed out. (3) every invitee still on the relay, the ones that
/// already answered included: the invitation process ends for them too.
///
/// ## Rules for answers (decided here, since the seed leaves them open)
///
/// - Only an invitee answers, only the inviter cancels. A peer that is not a party gets
///   `unknownInvitation` for any ID, live or ended: outsiders cannot answer, and cannot probe.
/// - Idempotent: the same answer again (accept after accept, reject after reject, cancel after
///   one's own cancel) succeeds without a new event, even after the invitation ended; the data
///   of the first answer stands. The other answer is refused with `alreadyAnswered`.
/// - An invitee whose part is over without its answer (timed out, left, cancelled), and any
///   answer to an ended invitation it did not give, is refused with `invitationEnded`.
/// - Deadlines: an answer is in time while `now < deadline`. Every call first settles the
///   deadline of the invitation it touches, so an answer at exactly the deadline is late: the
///   timeout events are queued, then the answer is refused. ``handleTimeouts(now:)`` settles
///   the rest.
/// - Cancel is allowed while the invitation is open, even after some invitees accepted (the
///   seed: the caller cancels "before [...] processed"; an open invitation still has someone to
///   process it). Pending invitees become `cancelled`; accepted ones keep their answer.
///
/// ## Bounds
///
/// Invitees per invitation, custom data size, open invitations per inviter and in total, and
/// tombstones (count and lifetime) are all capped by ``Configuration``. Ended invitations leave
/// every index; the deadline heap is compacted when stale entries outnumber live ones.
///
/// ## Hosting it
///
/// ```swift
/// let receipt = try book.invite(from: peer, request, now: now, isOnline: relay.isOnline)
/// for delivery in book.takeDeliveries() { relay.send(delivery.event, to: delivery.to) }
/// ```
public struct InvitationBook: Sendable {
    /// Caps on the book's tables, and how long ended invitations are remembered.
    public struct Configuration: Hashable, Sendable {
        /// The most invitees one invitation may name.
        public var maxInviteesPerInvitation = 200
        /// Bytes of custom data per request (invite, answer or cancel).
        public var maxCustomDataBytes = 4 << 10
        /// The most open invitations one inviter may have.
        public var maxOpenInvitationsPerInviter = 64
        /// The most open invitations in the book.
        public var maxOpenInvitations = 100_000
        /// The most ended invitations remembered (so late answers hear `invitationEnded`).
        public var maxTombstones = 16_384
        /// How long an ended invitation is remembered.
        public var tombstoneLifetime: Duration = .seconds(60)

        /// The defaults: 200 invitees, 64 per inviter, 100,000 open, 16,384 remembered for 60 s.
        public init() {}
    }

    /// The caps this book enforces.
    public let configuration: Configuration
    var open: [InvitationID: Invitation] = [:]
    var tombstones: [InvitationID: Invitation] = [:]
    /// Tombstones in the order they were made, with when each is forgotten.
    var tombstoneOrder: Deque<(id: InvitationID, expires: ConduitInstant)> = []
    /// Open invitations each peer is a party of (as inviter or invitee): `peerLeft` in O(its own).
    var byPeer: [PeerID: Set<InvitationID>] = [:]
    var openCountByInviter: [PeerID: Int] = [:]
    var deadlines = LinkDeadlineHeap()
    var ids: InvitationIDGenerator
    var nextSequence: UInt64 = 0
    var outbox: [InvitationDelivery] = []
    /// Invitations that ended since ``takeEnded()`` was last called, oldest first (at most
    /// `maxOpenInvitations`: no more can end between two calls of a host that calls it after every
    /// operation, as the relay does; a host that never calls it loses the oldest).
    var endedSinceTaken = Deque<InvitationID>()

    /// Makes an empty book.
    /// - Parameters:
    ///   - configuration: caps on invitees, open invitations and custom data, and how long ended ones are remembered.
    ///   - idKey: a secret that makes invitation IDs unpredictable; a relay passes a
    ///     random value (`UInt64.random(in: .min ... .max)`), tests a fixed one.
    public init(configuration: Configuration = Configuration(), idKey: UInt64) {
        self.configuration = configuration
        self.ids = InvitationIDGenerator(key: idKey)
    }

    // MARK: - Introspection

    /// Open invitations.
    public var openCount: Int { open.count }
    /// Ended invitations still remembered.
    public var tombstoneCount: Int { tombstones.count }
    /// Peers that are a party of at least one open invitation.
    public var trackedPeerCount: Int { byPeer.count }
    /// Entries in the deadline heap, stale ones included (bounded by compaction).
    public var deadlineEntryCount: Int { deadlines.count }
    /// Deliveries waiting for ``takeDeliveries()``.
    public var pendingDeliveryCount: Int { outbox.count }

    /// The invitation, open or ended and still remembered. For tests, tools and the relay's logs.
    public func invitation(_ id: InvitationID) -> Invitation? { open[id] ?? tombstones[id] }

    /// The earliest time ``handleTimeouts(now:)`` has work: an invitation deadline or a tombstone
    /// to forget. May be early (a deadline of an invitation that already ended); never late.
    public var nextTimeout: ConduitInstant? {
        let tomb = tombstoneOrder.first?.expires
        guard let deadline = deadlines.first?.deadline else { return tomb }
        return tomb.map { min($0, deadline) } ?? deadline
    }

    /// The events produced since the last call, in order. The host sends each to its peer.
    public mutating func takeDeliveries() -> [InvitationDelivery] {
        var taken: [InvitationDelivery] = []
        swap(&taken, &outbox)
        return taken
    }

    /// The invitations that ended since the last call, in the order they ended (a clustered
    /// relay tells the relays that forwarded their events).
    public mutating func takeEnded() -> [InvitationID] {
        defer { endedSinceTaken.removeAll() }
        return Array(endedSinceTaken)
    }

    // MARK: - Invite

    /// Opens an invitation from `inviter` and queues `newInvitation` for each invitee.
    /// - Parameters:
    ///   - inviter: the peer that invites, as its token proved.
    ///   - request: the invitees, group, custom data, timeout and `onlineUserOnly`.
    ///   - now: the current time, from which the deadline runs.
    ///   - isOnline: consulted only with `onlineUserOnly`.
    @discardableResult
    public mutating func invite(
        from inviter: PeerID,
        _ request: InvitationRequest,
        now: ConduitInstant,
        isOnline: (PeerID) -> Bool = { _ in true }
    ) throws(InvitationError) -> InvitationReceipt {
        try checkData(request.data)
        guard !request.invitees.isEmpty else { throw InvitationError(.emptyInviteeList, "invite names no invitee") }
        guard request.invitees.count <= configuration.maxInviteesPerInvitation else {
            throw InvitationError(
                .tooManyInvitees,
                "invite names \(request.invitees.count) invitees; at most \(configuration.maxInviteesPerInvitation) are allowed")
        }
        try checkDistinct(request.invitees, inviter: inviter)
        var invitees = request.invitees
        var skipped: [PeerID] = []
        if request.onlineUserOnly {
            skipped = invitees.filter { !isOnline($0) }
            if !skipped.isEmpty { invitees.removeAll { !isOnline($0) } }
            guard !invitees.isEmpty else { throw InvitationError(.inviteesOffline, "no invitee is online") }
        }
        let mine = openCountByInviter[inviter, default: 0]
        guard mine < configuration.maxOpenInvitationsPerInviter else {
            throw InvitationError(
                .tooManyInvitations, "\(inviter) has \(mine) open invitations; at most \(configuration.maxOpenInvitationsPerInviter) are allowed")
        }
        guard open.count < configuration.maxOpenInvitations else {
            throw InvitationError(.tableFull, "the relay holds \(open.count) open invitations, its limit")
        }

        let id = ids.next()
        let deadline = request.timeoutSeconds == 0 ? nil : now + .seconds(request.timeoutSeconds)
        let invitation = Invitation(id: id, inviter: inviter, request: request, invitees: invitees, deadline: deadline, sequence: nextSequence)
        nextSequence &+= 1
        open[id] = invitation
        openCountByInviter[inviter] = mine + 1
        byPeer[inviter, default: []].insert(id)
        for peer in invitees { byPeer[peer, default: []].insert(id) }
        if let deadline { deadlines.push(deadline, id.rawValue) }

        let new = NewInvitation(
            id: id, inviter: inviter, groupID: request.groupID, invitees: invitees, data: request.data,
            timeoutSeconds: request.timeoutSeconds)
        for peer in invitees { outbox.append(InvitationDelivery(to: peer, event: .newInvitation(new))) }
        return InvitationReceipt(id: id, skippedOffline: skipped)
    }

    /// No duplicate and not the inviter. Short lists (calls, small groups) are checked pairwise,
    /// which allocates nothing; long ones with a set.
    func checkDistinct(_ invitees: [PeerID], inviter: PeerID) throws(InvitationError) {
        guard !invitees.contains(inviter) else { throw InvitationError(.invalidInviteeList, "a peer cannot invite itself") }
        if invitees.count <= 16 {
            for i in invitees.indices {
                for j in invitees.indices where j > i && invitees[j] == invitees[i] {
                    throw InvitationError(.invalidInviteeList, "\(invitees[i]) is named twice")
                }
            }
            return
        }
        var seen = Set<PeerID>(minimumCapacity: invitees.count)
        for peer in invitees where !seen.insert(peer).inserted {
            throw InvitationError(.invalidInviteeList, "\(peer) is named twice")
        }
    }

    func checkData(_ data: [UInt8]) throws(InvitationError) {
        guard data.count <= configuration.maxCustomDataBytes else {
            throw InvitationError(
                .customDataTooLarge, "custom data is \(data.count) bytes; at most \(configuration.maxCustomDataBytes) are allowed")
        }
    }
}

public import ConduitCore
public import ConduitRooms

/// One room's membership as the cluster's roster orders it (issue 16: "one versioned peer list,
/// the same on every relay"). Every relay applies the same records in the same order (a JetStream
/// stream: its sequence orders them), so every relay derives the same member numbers and the same
/// peer-list versions from them, whichever relay a member is connected to.
///
/// Deterministic and sans-IO: no clock, no randomness; the same records give the same updates.
/// A record that changes nothing (a second `left` for one member, a `nodeGone` for a relay with
/// no members here, a join under a name already in the room) takes no version, so relays that
/// saw a duplicate still agree.
public struct RelayRosterLog: Sendable, Hashable {
    /// What a record says about one room.
    public enum Event: Sendable, Hashable {
        /// `peer` joined at relay `node`, which numbered the join `ticket` (unique per relay).
        case joined(node: RelayNodeID, ticket: UInt64, peer: PeerID, dataSessionsSupported: Bool)
        /// The member joined at relay `node` under `ticket` left.
        case left(node: RelayNodeID, ticket: UInt64)
        /// Relay `node` is gone (killed, or silent past the presence timeout): all its members left.
        case nodeGone(RelayNodeID)
    }

    /// A member as the roster knows it: the room-wide number every relay uses, and where it is.
    public struct Entry: Sendable, Hashable {
        /// Its member number, the same on every relay.
        public let number: UInt16
        /// The relay it is connected to.
        public let node: RelayNodeID
        /// That relay's number for the join.
        public let ticket: UInt64
        /// Its name.
        public let peer: PeerID
        /// Whether it takes data sessions.
        public let dataSessionsSupported: Bool

        /// As a peer list names it.
        public var roomMember: RoomMember { RoomMember(member: number, peer: peer, dataSessionsSupported: dataSessionsSupported) }
    }

    /// What applying a record did.
    public enum Outcome: Sendable, Hashable {
        /// The list changed: `updates` (one version each, cut to fit a frame), the member that
        /// joined, or the members that left.
        case changed(updates: [PeerListUpdate], joined: Entry?, left: [Entry])
        /// A join under a name already in the room (the first join in the roster wins), or with
        /// every member number taken: refused, here as on every relay.
        case refused(node: RelayNodeID, ticket: UInt64)
        /// Nothing changed (a repeated record, or one about nobody in the room).
        case unchanged
    }

    private struct Key: Hashable, Sendable {
        let node: RelayNodeID
        let ticket: UInt64
    }

    /// The room's peer-list version: one per update frame.
    public private(set) var version: UInt32 = 0
    private var entries: [Key: Entry] = [:]
    private var numbers: [UInt16: Key] = [:]
    private var peers: Set<PeerID> = []
    /// The next room-wide number to try: numbers are handed out in turn, so a number that was
    /// just freed is not given to the next joiner (a late frame of the one who left could be taken
    /// for the newcomer's), and wrap past 65,535.
    private var nextNumber: UInt16 = 1

    /// An empty room.
    public init() {}

    /// Whether nobody is in the room.
    public var isEmpty: Bool { entries.isEmpty }

    /// The members, by room-wide number.
    public var members: [Entry] { numbers.keys.sorted().map { entries[numbers[$0]!]! } }

    /// The member relay `node` admitted under `ticket`, if it is in the room.
    public func entry(node: RelayNodeID, ticket: UInt64) -> Entry? { entries[Key(node: node, ticket: ticket)] }

    /// Applies the next record about the room.
    public mutating func apply(_ event: Event) -> Outcome {
        switch event {
        case .joined(let node, let ticket, let peer, let supported):
            let key = Key(node: node, ticket: ticket)
            guard entries[key] == nil else { return .unchanged }
            guard !peers.contains(peer), let number = freeNumber() else { return .refused(node: node, ticket: ticket) }
            let entry = Entry(number: number, node: node, ticket: ticket, peer: peer, dataSessionsSupported: supported)
            entries[key] = entry
            numbers[number] = key
            peers.insert(peer)
            version &+= 1
            return .changed(updates: [PeerListUpdate(version: version, isSnapshot: false, joined: [entry.roomMember], left: [])], joined: entry, left: [])
        case .left(let node, let ticket):
            guard let entry = remove(Key(node: node, ticket: ticket)) else { return .unchanged }
            return .changed(updates: leftUpdates([entry]), joined: nil, left: [entry])
        case .nodeGone(let node):
            let gone = entries.values.filter { $0.node == node }.sorted { $0.number < $1.number }
            guard !gone.isEmpty else { return .unchanged }
            for entry in gone { _ = remove(Key(node: entry.node, ticket: entry.ticket)) }
            return .changed(updates: leftUpdates(gone), joined: nil, left: gone)
        }
    }

    /// The whole list at the current version, for a member that joins (or a client that saw a gap).
    public var snapshot: PeerListUpdate {
        PeerListUpdate(version: version, isSnapshot: true, joined: members.map(\.roomMember), left: [])
    }

    private mutating func remove(_ key: Key) -> Entry? {
        guard let entry = entries.removeValue(forKey: key) else { return nil }
        numbers[entry.number] = nil
        peers.remove(entry.peer)
        return entry
    }

    /// Departures as frames carry them: at most `maxPeersPerFrame` each, a version each (so a
    /// relay's frames and its versions match on every relay).
    private mutating func leftUpdates(_ gone: [Entry]) -> [PeerListUpdate] {
        stride(from: 0, to: gone.count, by: RoomControlFrame.maxPeersPerFrame).map { start in
            version &+= 1
            let chunk = gone[start..<min(gone.count, start + RoomControlFrame.maxPeersPerFrame)]
            return PeerListUpdate(version: version, isSnapshot: false, joined: [], left: chunk.map(\.number))
        }
    }

    /// The first number not in use from `nextNumber` on, wrapping (0 is never a member's number:
    /// it means "everyone"); nil when all are taken.
    private mutating func freeNumber() -> UInt16? {
        guard numbers.count < Int(UInt16.max) else { return nil }
        var candidate = nextNumber
        while numbers[candidate] != nil || candidate == 0 { candidate &+= 1 }
        nextNumber = candidate &+ 1
        return candidate
    }
}

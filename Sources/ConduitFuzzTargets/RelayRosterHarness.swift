import ConduitCore
import ConduitRelayCore
import ConduitRooms

extension FuzzTargets {
    /// The cluster's roster (`docs/wire-format.md`, "Relay roster"): the input is a run of
    /// records, each one byte of length then its bytes, read back from the stream in that order.
    /// A record that parses re-encodes to the same bytes. Two relays in roster mode take them all:
    /// one hosting the room with a member of its own (joined through the roster), one hosting
    /// nothing, reading a stream with holes (purged records) and its consumer's count. Both account
    /// for every record (applied or malformed), the hosting relay's room is exactly the members a
    /// reference ``RelayRosterLog`` holds (numbers included) while its member is in, a purge
    /// follows only the record that emptied its room, and what either would append parses again.
    static let relayRoster = FuzzTarget(
        name: "relay-roster",
        summary: "RelayRosterRecord parse/encode (canonical); RelayMachine.handleRoster in roster mode, hosting a room or not: every record accounted for (holes in the stream's sequence too), the hosted room equals a reference RelayRosterLog, purges only after the emptying record, appended records parse"
    ) { (input) throws(FuzzFailure) in
        let check = Invariants(target: "relay-roster")
        var chunks: [[UInt8]] = []
        var rest = input[...]
        while let length = rest.first, chunks.count < 64 {
            rest = rest.dropFirst()
            chunks.append(Array(rest.prefix(Int(length))))
            rest = rest.dropFirst(Int(length))
        }
        var hosting = rosterRelay
        var idle = RelayMachine()
        idle.joinCluster(as: idleNode, roster: true, now: .zero)
        var reference = RelayRosterLog()
        _ = reference.apply(.joined(node: rosterNode, ticket: 1, peer: rosterPeer, dataSessionsSupported: true))
        // What each relay's rooms are (the hosting one's and the idle one's), and which rooms'
        // subjects each record emptied there, to check purges against.
        var rooms: [[RoomID: RelayRosterLog]] = [[clusterRoom: reference], [:]]
        var emptied: [[Int: Set<String>]] = [[:], [:]]
        var accepted = false
        var memberIn = true
        let now = ConduitInstant(nanoseconds: 2_000_000_000)
        for (index, chunk) in chunks.enumerated() {
            if let record = try? RelayRosterRecord.parse(chunk) {
                try check.requireSameBytes(record.encoded, chunk, "roster record \(record)")
                accepted = true
                if record.room == nil || record.room == clusterRoom { _ = reference.apply(record.event) }
                if reference.entry(node: rosterNode, ticket: 1) == nil { memberIn = false }
                for (side, node) in [rosterNode, idleNode].enumerated() {
                    for roomID in record.room.map({ [$0] }) ?? rooms[side].keys.sorted() {
                        guard var log = rooms[side][roomID] ?? (record.room == nil ? nil : RelayRosterLog()) else { continue }
                        let existed = rooms[side][roomID] != nil
                        _ = log.apply(record.event)
                        rooms[side][roomID] = log.isEmpty ? nil : log
                        // A room record's writer purges; after a nodeGone, a relay that knows no other.
                        if existed, log.isEmpty, record.room == nil || record.node == node {
                            emptied[side][index, default: []].insert(RelayRosterRecord.subject(ofRoom: roomID))
                        }
                    }
                }
            }
            // Sequence 1 was the member's own join.
            hosting.handleRoster(chunk, sequence: UInt64(index + 2), now: now)
            if memberIn {
                let expected = Dictionary(uniqueKeysWithValues: reference.members.map { ($0.number, $0.peer) })
                try check.require(hosting.members(of: clusterRoom) == expected, "the hosted room is \(hosting.members(of: clusterRoom)), the roster says \(expected)")
            }
        }
        try feedIdle(&idle, chunks, now: now, check)
        let resets = chunks.filter(\.isEmpty).count
        for relay in resets == 0 ? [hosting, idle] : [hosting] {
            let statistics = relay.statistics.cluster
            try check.require(statistics.rosterRecordsApplied + statistics.rosterMalformed == chunks.count + (relay.clusterNode == rosterNode ? 1 : 0),
                              "\(chunks.count) records, \(statistics.rosterRecordsApplied) applied and \(statistics.rosterMalformed) malformed")
        }
        try check.require(idle.statistics.cluster.rosterRemovedUnread <= resets, "the idle relay started over \(idle.statistics.cluster.rosterRemovedUnread) times for \(resets) new consumers")
        for var relay in [hosting, idle] {
            relay.handleTimeout(now: now + .seconds(30))
            while let record = relay.pollRosterRecord() {
                try check.require((try? RelayRosterRecord.parse(record.encoded)) == record, "the relay would append \(record), which does not parse back")
            }
            // Purges fall due `rosterCompactionDelay` (ten minutes) after the record that
            // emptied their room, and only after one that did.
            relay.handleTimeout(now: now + .seconds(601))
            let side = relay.clusterNode == rosterNode ? 0 : 1
            while let purge = relay.pollRosterPurge() {
                let at = purge.before - 1
                let index = side == 1 ? (at >= 2 && at % 2 == 0 ? Int((at - 2) / 2) : -1) : Int(at) - 2
                try check.require(emptied[side][index]?.contains(purge.subject) == true, "a purge \(purge) after the record at \(at), which emptied \(emptied[side][index] ?? [])")
            }
        }
        return accepted
    }

    /// The idle relay reads the stream at sequences 2, 4, 6… (holes: purged records) with its
    /// consumer's count. An empty chunk is no record there but, the first time it is passed, a
    /// consumer its client makes anew (its count starts again at 1, unasked): the relay then reads
    /// anew as it asks, finds the hole, and starts over from the stream's start. It must get to
    /// the end.
    private static func feedIdle(_ idle: inout RelayMachine, _ chunks: [[UInt8]], now: ConduitInstant, _ check: Invariants) throws(FuzzFailure) {
        var position = 0
        var delivered: UInt64 = 0
        var reset: Set<Int> = []
        var feeds = 0
        let limit = chunks.count * 2 * (chunks.filter(\.isEmpty).count + 2)
        while position < chunks.count, feeds <= limit {
            feeds += 1
            let chunk = chunks[position]
            position += 1
            if chunk.isEmpty {
                if reset.insert(position - 1).inserted { delivered = 0 }
                continue
            }
            delivered += 1
            idle.handleRoster(chunk, sequence: UInt64(position - 1) * 2 + 2, delivered: delivered, now: now)
            if let from = idle.pollRosterResume() {
                position = from <= 2 ? 0 : Int((from - 1) / 2)
                delivered = 0
            }
        }
        try check.require(position == chunks.count, "the idle relay did not read to the stream's end in \(feeds) deliveries")
    }

    static let rosterNode = RelayNodeID(0x1111)
    static let idleNode = RelayNodeID(0x2222)
    static let rosterPeer: PeerID = "alice"

    /// A relay in roster mode hosting the room: alice joined through it, her join's record read
    /// back as the stream's first. Built once; each input works on a copy.
    private static let rosterRelay: RelayMachine = {
        var relay = RelayMachine()
        relay.joinCluster(as: rosterNode, roster: true, now: .zero)
        let id = RelayConnectionID(1)
        let now = ConduitInstant(nanoseconds: 1_000_000_000)
        _ = relay.connectionOpened(id, now: now)
        relay.handle(id, datagram: RoomControlFrame.join(room: clusterRoom, peer: rosterPeer, dataSessionsSupported: true, token: [1]).encoded, now: now)
        while let action = relay.pollAction() {
            if case .authorize(let id, _) = action {
                relay.admit(id, grant: RelayGrant(room: clusterRoom, peer: rosterPeer, canPublish: true, canSubscribe: true), now: now)
            }
        }
        guard let record = relay.pollRosterRecord() else { fatalError("relay-roster: the join was not appended") }
        relay.handleRoster(record.encoded, sequence: 1, now: now)
        guard relay.members(of: clusterRoom) == [1: rosterPeer] else { fatalError("relay-roster: the join did not complete") }
        while relay.pollAction() != nil {}
        return relay
    }()
}

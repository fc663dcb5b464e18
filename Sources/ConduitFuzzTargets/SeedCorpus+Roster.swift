import ConduitCore
import ConduitRelayCore

extension SeedCorpus {
    /// Runs of roster records (each a length byte, then the record) as the stream would deliver
    /// them to the `relay-roster` target's relays: joins at other relays, a name taken, leaves, a
    /// relay gone, this relay's own member removed, a join of its own it no longer waits for,
    /// another room, one emptied and made again (a purge), a consumer made anew (an empty
    /// entry: the idle relay reads past a hole and starts over), and a record that does not parse.
    static func rosterPrograms() -> [[UInt8]] {
        let room = RoomProgramRun.room
        let other = RelayNodeID(0x2222), third = RelayNodeID(0x3333), own = FuzzTargets.rosterNode
        func program(_ records: [RelayRosterRecord], malformed: [UInt8]? = nil, newConsumerAt: Int? = nil) -> [UInt8] {
            var entries = records.map(\.encoded) + (malformed.map { [$0] } ?? [])
            if let newConsumerAt { entries.insert([], at: newConsumerAt) }
            var bytes: [UInt8] = []
            for record in entries {
                bytes.append(UInt8(record.count))
                bytes += record
            }
            return bytes
        }
        return [
            program([
                .joined(room: room, node: other, ticket: 1, peer: "carol", dataSessionsSupported: true),
                .joined(room: room, node: third, ticket: 1, peer: "dave", dataSessionsSupported: false),
                .left(room: room, node: other, ticket: 1),
                .nodeGone(third),
            ]),
            program([
                .joined(room: room, node: other, ticket: 7, peer: "alice", dataSessionsSupported: true),
                .joined(room: "elsewhere", node: other, ticket: 8, peer: "erin", dataSessionsSupported: true),
                .joined(room: room, node: own, ticket: 2, peer: "frank", dataSessionsSupported: true),
            ]),
            program([
                .joined(room: room, node: other, ticket: 1, peer: "carol", dataSessionsSupported: true),
                .left(room: room, node: own, ticket: 1),
            ], malformed: [1, 9, 0, 0, 0, 0, 0, 0, 0x22, 0x22]),
            program([.nodeGone(own), .nodeGone(other)]),
            program([
                .joined(room: "elsewhere", node: FuzzTargets.idleNode, ticket: 1, peer: "erin", dataSessionsSupported: true),
                .joined(room: "elsewhere", node: own, ticket: 2, peer: "gus", dataSessionsSupported: true),
                .left(room: "elsewhere", node: FuzzTargets.idleNode, ticket: 1),
                .left(room: "elsewhere", node: own, ticket: 2),
                .joined(room: "elsewhere", node: other, ticket: 3, peer: "erin", dataSessionsSupported: true),
                .joined(room: room, node: other, ticket: 4, peer: "carol", dataSessionsSupported: true),
            ], newConsumerAt: 4),
        ]
    }
}

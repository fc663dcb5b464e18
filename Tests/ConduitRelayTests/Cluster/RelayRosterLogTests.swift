import ConduitCore
import ConduitImpairment
import ConduitRelayCore
import ConduitRooms
import Testing

/// One room's membership as the cluster's roster orders it: relays that apply the same records
/// agree on every number and version (issue 16, one versioned peer list).
@Suite struct RelayRosterLogTests {
    let a = RelayNodeID(0xA)
    let b = RelayNodeID(0xB)

    func joined(_ node: RelayNodeID, _ ticket: UInt64, _ peer: PeerID) -> RelayRosterLog.Event {
        .joined(node: node, ticket: ticket, peer: peer, dataSessionsSupported: true)
    }

    func member(_ number: UInt16, _ peer: PeerID) -> RoomMember { RoomMember(member: number, peer: peer, dataSessionsSupported: true) }

    /// The updates of an outcome (none when it changed nothing).
    func updates(_ outcome: RelayRosterLog.Outcome) -> [PeerListUpdate] {
        if case .changed(let updates, _, _) = outcome { return updates }
        return []
    }

    @Test func membersAreNumberedInRosterOrderWhateverTheirRelay() {
        var log = RelayRosterLog()
        #expect(updates(log.apply(joined(b, 7, "alice"))) == [PeerListUpdate(version: 1, isSnapshot: false, joined: [member(1, "alice")], left: [])])
        #expect(updates(log.apply(joined(a, 7, "bob"))) == [PeerListUpdate(version: 2, isSnapshot: false, joined: [member(2, "bob")], left: [])])
        #expect(log.entry(node: b, ticket: 7)?.number == 1)
        #expect(log.entry(node: a, ticket: 7)?.number == 2)
        #expect(updates(log.apply(.left(node: b, ticket: 7))) == [PeerListUpdate(version: 3, isSnapshot: false, joined: [], left: [1])])
        // The freed number is not given to the next joiner.
        #expect(updates(log.apply(joined(a, 8, "carol"))).first?.joined.map(\.member) == [3])
        #expect(log.snapshot == PeerListUpdate(version: 4, isSnapshot: true, joined: [member(2, "bob"), member(3, "carol")], left: []))
    }

    @Test func whatChangesNothingTakesNoVersion() {
        var log = RelayRosterLog()
        _ = log.apply(joined(a, 1, "alice"))
        #expect(log.apply(joined(a, 1, "alice")) == .unchanged)  // the same record twice
        #expect(log.apply(.left(node: b, ticket: 1)) == .unchanged)  // never joined
        #expect(log.apply(.nodeGone(b)) == .unchanged)  // no members there
        #expect(log.version == 1)
    }

    @Test func aSecondJoinUnderATakenNameIsRefusedWithoutAVersion() {
        var log = RelayRosterLog()
        _ = log.apply(joined(a, 1, "alice"))
        #expect(log.apply(joined(b, 1, "alice")) == .refused(node: b, ticket: 1))
        #expect(log.version == 1)
        // Once she left, the name is free again.
        _ = log.apply(.left(node: a, ticket: 1))
        #expect(updates(log.apply(joined(b, 2, "alice"))).first?.version == 3)
    }

    @Test func aGoneRelaysMembersLeaveInOneVersionPerFrame() {
        var log = RelayRosterLog()
        _ = log.apply(joined(a, 1, "alice"))
        _ = log.apply(joined(b, 1, "bob"))
        _ = log.apply(joined(a, 2, "carol"))
        #expect(updates(log.apply(.nodeGone(a))) == [PeerListUpdate(version: 4, isSnapshot: false, joined: [], left: [1, 3])])
        #expect(log.members.map(\.peer) == ["bob"])
        // More than a frame holds: one version per frame, the same on every relay.
        var big = RelayRosterLog()
        for ticket in 1...300 as ClosedRange<UInt64> { _ = big.apply(joined(a, ticket, try! PeerID("p\(ticket)"))) }
        let gone = updates(big.apply(.nodeGone(a)))
        #expect(gone.map(\.version) == [301, 302])
        #expect(gone.map(\.left.count) == [RoomControlFrame.maxPeersPerFrame, 300 - RoomControlFrame.maxPeersPerFrame])
        #expect(big.isEmpty)
    }

    /// Two relays, one roster: each applies every record in order; a third starts late from the
    /// beginning. All three end with the same members, numbers and version, and the first two
    /// sent the same updates, numbered without a gap.
    @Test(arguments: [1, 2, 3, 42] as [UInt64])
    func relaysThatApplyOneRosterAgree(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        var events: [RelayRosterLog.Event] = []
        for _ in 0..<400 {
            let node = RelayNodeID(UInt64(random.below(3) + 1))
            let ticket = UInt64(random.below(20))
            switch random.below(10) {
            case 0: events.append(.nodeGone(node))
            case 1...4: events.append(.left(node: node, ticket: ticket))
            default: events.append(joined(node, ticket, try PeerID("peer-\(random.below(30))")))
            }
        }
        var first = RelayRosterLog(), second = RelayRosterLog(), late = RelayRosterLog()
        var firstUpdates: [PeerListUpdate] = [], secondUpdates: [PeerListUpdate] = []
        for event in events {
            firstUpdates += updates(first.apply(event))
            secondUpdates += updates(second.apply(event))
        }
        for event in events { _ = late.apply(event) }
        #expect(firstUpdates == secondUpdates)
        #expect(firstUpdates.map(\.version) == Array(1...UInt32(firstUpdates.count)))
        #expect(first == second && second == late)
        #expect(first.snapshot == late.snapshot)
        // Numbers and names are unique.
        #expect(Set(first.members.map(\.number)).count == first.members.count)
        #expect(Set(first.members.map(\.peer)).count == first.members.count)
    }
}

import ConduitCore
import ConduitRooms
import ConduitRelayCore
import Testing

/// Relays of one cluster with a roster (RelayMachine+Roster.swift): one order of joins and leaves,
/// so one versioned peer list, numbers included, on every relay. Sans-IO, the roster's stream
/// carried in memory (``ClusterHarness``), on virtual time.
@Suite struct ClusterRosterTests {
    let main = SessionKey(streamID: 100)

    /// What every relay's room looks like: its members by number.
    func rooms(_ h: ClusterHarness, _ room: RoomID = "room") -> [[UInt16: PeerID]] {
        h.relays.map { $0.relay.members(of: room) }
    }

    /// Each client's view: its peer-list version, and everyone in the room by number (itself
    /// included, as the relay lists it).
    func views(_ h: ClusterHarness) -> [String: (version: UInt32, members: [UInt16: PeerID])] {
        var views: [String: (UInt32, [UInt16: PeerID])] = [:]
        for relay in h.relays {
            for (name, client) in relay.clients where !client.closed {
                var members = client.machine.members.mapValues(\.peer)
                if let me = client.machine.localMember { members[me] = PeerID(stringLiteral: name) }
                views[name] = (client.machine.peerListVersion, members)
            }
        }
        return views
    }

    @Test func membersJoiningAtThreeRelaysGetOneNumberingAndOneVersionEverywhere() {
        var h = ClusterHarness(relayCount: 3, roster: true)
        for (index, name) in ["alice", "bob", "carol", "dave", "erin", "frank"].enumerated() { h.join(name, at: index % 3) }
        h.advance(by: .seconds(1))
        let lists = rooms(h)
        #expect(lists[0].count == 6)
        #expect(lists[1] == lists[0] && lists[2] == lists[0], "\(lists)")
        // Numbers in the order the roster took the joins.
        #expect(lists[0].keys.sorted() == [1, 2, 3, 4, 5, 6])
        #expect(lists[0][1] == "alice" && lists[0][6] == "frank")
        let views = views(h)
        #expect(views.count == 6)
        for (name, view) in views {
            #expect(view.version == 6, "\(name) at version \(view.version)")
            #expect(view.members == lists[0], "\(name) sees \(view.members)")
        }
        for relay in h.relays {
            #expect(relay.relay.statistics.cluster.rosterRecordsApplied == 6)
            for client in relay.clients.values { #expect(client.machine.statistics.peerListGaps == 0) }
        }
    }

    @Test func leavesAndALateRelayKeepTheSameVersions() {
        var h = ClusterHarness(relayCount: 2, roster: true)
        h.join("alice", at: 0)
        h.join("bob", at: 1)
        h.join("carol", at: 1)
        h.relays[1].clients["bob"]!.machine.leave()
        h.relays[1].pump()
        h.carry()
        h.advance(by: .seconds(1))
        // Relay 1 forgot bob at once (his link is gone); the roster's record told everyone after.
        #expect(rooms(h)[0] == [1: "alice", 3: "carol"])
        #expect(rooms(h)[1] == rooms(h)[0])
        #expect(views(h)["alice"]!.version == 4)
        #expect(views(h)["carol"]!.version == 4)
        // A relay started now reads the roster from its start: the same room, the same version for
        // the member who joins there.
        h.addRelay()
        h.join("dave", at: 2)
        h.advance(by: .seconds(1))
        #expect(rooms(h)[2] == [1: "alice", 3: "carol", 4: "dave"])
        #expect(rooms(h)[0] == rooms(h)[2] && rooms(h)[1] == rooms(h)[2])
        for (name, view) in views(h) { #expect(view.version == 5, "\(name) at \(view.version)") }
    }

    @Test func theSamePeerJoiningAtTwoRelaysAtOnceIsAdmittedOnceTheFirstInTheRosterWins() {
        var h = ClusterHarness(relayCount: 2, roster: true)
        h.join("alice", at: 1)
        // Both joins are verified before either relay reads the roster again; relay 0's record
        // is appended first (the harness carries relay 0's records first).
        h.rosterPaused = [0, 1]
        h.relays[1].join("bob")
        h.relays[0].join("bob")
        h.carry()
        h.rosterPaused = []
        h.carry()
        h.advance(by: .seconds(1))
        #expect(rooms(h)[0] == [1: "alice", 2: "bob"])
        #expect(rooms(h)[1] == rooms(h)[0])
        // Relay 0's bob is in; relay 1's is refused, saying why.
        #expect(h.relays[0].clients["bob"]!.machine.localMember == 2)
        let refused = h.relays[1].clients["bob"]!.events.contains { if case .disconnected(.refused, _) = $0 { true } else { false } }
        #expect(refused, "\(h.relays[1].clients["bob"]!.events)")
        #expect(h.relays[1].relay.statistics.refusals[.alreadyJoined] == 1)
        #expect(h.relays[1].relay.statistics.cluster.rosterJoinsRefused == 1)
        #expect(views(h)["alice"]!.version == 2)
    }

    @Test func framesThatOutrunTheirSendersRecordAreHeldThenDeliveredInOrder() {
        var h = ClusterHarness(relayCount: 2, roster: true)
        h.join("bob", at: 1)
        h.advance(by: .seconds(1))
        // Relay 1 stops reading the roster: alice's record reaches it after her frames.
        h.rosterPaused = [1]
        h.join("alice", at: 0)
        #expect(h.relays[0].clients["alice"]!.machine.makeOutbound(main, type: .reliableMessage, now: h.relays[0].now) == .none)
        h.relays[0].pump()
        for index in 0..<5 {
            h.relays[0].send("alice", main, "m\(index)")
            h.carry()
        }
        #expect(h.relays[1].relay.statistics.cluster.heldForRoster > 0)
        #expect(h.relays[1].messages("bob", main).isEmpty)
        h.rosterPaused = []
        h.carry()
        h.relays[1].acceptAll("bob")
        h.carry()
        #expect(h.relays[1].messages("bob", main).map(\.1) == (0..<5).map { "m\($0)" })
        #expect(h.relays[1].messages("bob", main).allSatisfy { $0.0 == "alice" })
        #expect(h.relays[1].relay.statistics.cluster.heldDropped == 0)
        #expect(h.relays[1].relay.statistics.cluster.unknownSender == 0)
    }

    /// bob at relay 1; alice joins at relay 0 while relay 1 reads no roster, opens a reliable
    /// session and sends `text`: relay 1 holds her frames.
    func aliceSendsBeforeHerRecordReachesRelay1(_ text: String) -> ClusterHarness {
        var h = ClusterHarness(relayCount: 2, roster: true)
        h.join("bob", at: 1)
        h.rosterPaused = [1]
        h.join("alice", at: 0)
        #expect(h.relays[0].clients["alice"]!.machine.makeOutbound(main, type: .reliableMessage, now: h.relays[0].now) == .none)
        h.relays[0].pump()
        h.relays[0].send("alice", main, text)
        h.carry()
        return h
    }

    @Test func framesWhoseSenderNeverComesAreDroppedAndCountedThenReportedLostIfItDoes() {
        var h = aliceSendsBeforeHerRecordReachesRelay1("lost")
        let held = h.relays[1].relay.statistics.cluster.heldForRoster
        #expect(held > 0)
        h.advance(by: .seconds(5))
        #expect(h.relays[1].relay.statistics.cluster.heldDropped == held)
        _ = h.relays[1].take("bob")
        // Her record comes after all: bob learns of her session, and that it lost data.
        h.rosterPaused = []
        h.carry()
        let atBob = h.relays[1].clients["bob"]!.events
        #expect(atBob.contains(.senderSessionEnded(main, from: "alice", .lostBetweenRelays)), "\(atBob)")
        #expect(h.relays[1].relay.statistics.cluster.sessionsReportedLost == 1)
        // What she sends next arrives.
        h.relays[1].acceptAll("bob")
        _ = h.relays[1].take("bob")
        h.relays[0].send("alice", main, "after")
        h.carry()
        #expect(h.relays[1].messages("bob", main).map(\.1) == ["after"])
    }

    @Test func aSessionPartlyDroppedWhileHeldIsReportedLostAfterWhatWasKept() {
        var h = aliceSendsBeforeHerRecordReachesRelay1("early")
        h.advance(by: .milliseconds(2_500))
        let early = h.relays[1].relay.statistics.cluster.heldForRoster
        h.relays[0].send("alice", main, "late")
        h.carry()
        // The early frames outstay `silenceTimeout` (4 s); the late ones are still held.
        h.advance(by: .seconds(2))
        #expect(h.relays[1].relay.statistics.cluster.heldDropped == early)
        #expect(h.relays[1].relay.statistics.cluster.heldForRoster > early)
        h.rosterPaused = []
        h.carry()
        let atBob = h.relays[1].take("bob")
        let incoming = atBob.firstIndex { if case .dataSessionIncoming(main, _, from: "alice") = $0 { true } else { false } }
        let report = atBob.firstIndex(of: .senderSessionEnded(main, from: "alice", .lostBetweenRelays))
        #expect(incoming != nil && report != nil && incoming! < report!, "\(atBob)")
        #expect(h.relays[1].relay.statistics.cluster.sessionsReportedLost == 1)
        #expect(h.relays[1].relay.statistics.cluster.unknownSender == 0)
    }

    @Test func aRecordThatDoesNotReachARelayIsReadAgainNothingIsAppliedOutOfOrder() {
        var h = ClusterHarness(relayCount: 2, roster: true)
        h.join("alice", at: 0)
        h.join("bob", at: 1)
        // carol's join (record 3) is lost on its way to relay 1 once; dave's (4) arrives first.
        h.rosterLost = [1: [3]]
        h.join("carol", at: 0)
        h.join("dave", at: 0)
        h.advance(by: .seconds(1))
        #expect(rooms(h)[1] == rooms(h)[0] && rooms(h)[0].count == 4, "\(rooms(h))")
        #expect(views(h)["bob"]!.version == 4)
        let statistics = h.relays[1].relay.statistics.cluster
        #expect(statistics.rosterGaps == 1)
        #expect(statistics.rosterRecordsApplied == 4)
        #expect(h.relays[1].clients["bob"]!.machine.statistics.peerListGaps == 0)
    }

    @Test func aConsumerTheClientMadeAnewIsNotTrustedPastARecordDroppedHere() {
        var h = ClusterHarness(relayCount: 2, roster: true)
        h.join("alice", at: 0)
        h.join("bob", at: 1)
        // carol's join (record 3) is dropped at relay 1; then its client makes a consumer of its
        // own from record 4 on (its count starts again at 1, as after a reconnection).
        h.rosterLost = [1: [3]]
        h.rosterReset = [1: [4]]
        h.join("carol", at: 0)
        h.join("dave", at: 0)
        h.advance(by: .seconds(1))
        #expect(rooms(h)[1] == rooms(h)[0] && rooms(h)[0].count == 4, "\(rooms(h))")
        let statistics = h.relays[1].relay.statistics.cluster
        #expect(statistics.rosterGaps == 1)
        #expect(statistics.rosterRecordsApplied == 4)
        #expect(statistics.rosterRemovedUnread == 0)
    }

    @Test func aRelayBehindLongerThanTheCompactionDelayStartsOverAndAgreesAgain() {
        var h = ClusterHarness(relayCount: 2, roster: true, liveness: RelayClusterLiveness(rosterCompactionDelay: .seconds(2)))
        h.join("alice", at: 0)
        h.join("bob", at: 1)
        // Relay 1 reads carol's join into another room, then stops reading while she leaves it
        // empty and the room's records go: without starting over, relay 1 would keep her there.
        h.join("carol", at: 0, room: "other")
        h.rosterPaused = [1]
        h.relays[0].clients["carol"]!.machine.leave()
        h.relays[0].pump()
        h.carry()
        h.advance(by: .seconds(3))
        #expect(h.roster.map { $0 != nil } == [true, true, false, false])
        // Relay 1 reads again through a consumer its client made anew, finds records gone that
        // it never read, and starts over: bob is told, and the roster is read from its start.
        h.join("dave", at: 0)
        h.rosterReset = [1: [5]]
        h.rosterPaused = []
        h.carry()
        let statistics = h.relays[1].relay.statistics.cluster
        #expect(statistics.rosterRemovedUnread == 1)
        let removed = h.relays[1].clients["bob"]!.events.contains { if case .disconnected(.removedByCluster, _) = $0 { true } else { false } }
        #expect(removed, "\(h.relays[1].clients["bob"]!.events)")
        #expect(rooms(h)[0] == [1: "alice", 3: "dave"])
        // bob joins again: one numbering and one version on both relays.
        h.join("bob", at: 1)
        h.advance(by: .seconds(1))
        #expect(rooms(h)[0] == [1: "alice", 3: "dave", 4: "bob"])
        #expect(rooms(h)[1] == rooms(h)[0], "\(rooms(h))")
        #expect(views(h)["bob"]!.version == views(h)["alice"]!.version)
        // The other room, made again at relay 1, starts at number 1 as it does everywhere.
        h.join("erin", at: 1, room: "other")
        #expect(rooms(h, "other")[1] == [1: "erin"])
        #expect(views(h)["erin"]!.version == 1)
        #expect(h.relays[1].relay.statistics.cluster.rosterRemovedUnread == 1)
    }

    @Test func aSilentRelaysMembersLeaveEverywhereInOneVersion() {
        var h = ClusterHarness(relayCount: 3, roster: true)
        h.join("alice", at: 0)
        h.join("bob", at: 1)
        h.join("carol", at: 2)
        h.join("dave", at: 2)
        h.advance(by: .seconds(1))
        h.deadRelays = [2]
        h.advance(by: .seconds(5))
        #expect(rooms(h)[0] == [1: "alice", 2: "bob"])
        #expect(rooms(h)[1] == rooms(h)[0])
        // carol and dave left in one record: one version.
        #expect(views(h)["alice"]!.version == 5)
        #expect(views(h)["bob"]!.version == 5)
        // Both survivors took relay 2 for gone; the second record changed nothing.
        #expect(h.relays[0].relay.statistics.cluster.rosterRecordsApplied == h.relays[1].relay.statistics.cluster.rosterRecordsApplied)
    }

    @Test func aRelayThatDiedBeforeThisOneStartedLeavesTheRosterOnceNeverHeard() {
        var h = ClusterHarness(relayCount: 1, roster: true)
        // The stream holds a member of a relay long dead (no node stream, no nodeGone for it).
        h.roster.append(RelayRosterRecord.joined(room: "room", node: RelayNodeID(0xDEAD), ticket: 1, peer: "ghost", dataSessionsSupported: true).encoded)
        h.join("alice", at: 0)
        #expect(rooms(h)[0] == [1: "ghost", 2: "alice"])
        h.advance(by: .seconds(3))
        #expect(rooms(h)[0].count == 2)
        h.advance(by: .seconds(2))
        #expect(rooms(h)[0] == [2: "alice"])
        #expect(views(h)["alice"]!.version == 3)
        #expect(h.roster.count == 3)  // the ghost's join, alice's, one nodeGone
    }

    @Test func aJoinTheRosterNeverTakesIsRefusedAndLeavesIfItsRecordLandsLater() {
        var h = ClusterHarness(relayCount: 2, roster: true, liveness: RelayClusterLiveness(rosterCompactionDelay: .seconds(60)))
        h.rosterPaused = [0, 1]
        h.join("alice", at: 0)
        h.advance(by: .seconds(16))
        let refused = h.relays[0].clients["alice"]!.events.contains { if case .disconnected(.refused, _) = $0 { true } else { false } }
        #expect(refused, "\(h.relays[0].clients["alice"]!.events)")
        #expect(h.relays[0].relay.statistics.refusals[.clusterUnavailable] == 1)
        h.rosterPaused = []
        h.carry()
        // Her record landed after all: relay 0 appended her leave, and nobody is in the room.
        #expect(h.roster.count == 2)
        #expect(rooms(h)[0].isEmpty && rooms(h)[1].isEmpty)
        // The room is empty again: both records leave the stream a minute later.
        h.advance(by: .seconds(59))
        #expect(h.roster.allSatisfy { $0 != nil })
        h.advance(by: .seconds(2))
        #expect(h.roster.allSatisfy { $0 == nil })
    }

    @Test func anEmptiedRoomsRecordsLeaveTheStreamAndARelayStartedLaterAgrees() {
        var h = ClusterHarness(relayCount: 2, roster: true, liveness: RelayClusterLiveness(rosterCompactionDelay: .seconds(60)))
        h.join("alice", at: 0)
        h.join("bob", at: 1)
        h.join("carol", at: 0, room: "other")
        for (name, relay) in [("alice", 0), ("bob", 1)] {
            h.relays[relay].clients[name]!.machine.leave()
            h.relays[relay].pump()
            h.carry()
        }
        // Bob's leave (record 5, appended by relay 1) emptied the room: a minute later, relay 1
        // asks once for the room's records up to it to go; the other room's record stays.
        h.advance(by: .seconds(59))
        #expect(h.rosterPurges.isEmpty)
        h.advance(by: .seconds(2))
        #expect(h.rosterPurges == [RelayRosterPurge(subject: RelayRosterRecord.subject(ofRoom: "room"), before: 6)])
        #expect(h.roster.map { $0 != nil } == [false, false, true, false, false])
        // The room made again starts at number 1 and version 1 on the relays that lived through
        // it, and on one started now, which reads a stream with holes in its sequence.
        h.join("dave", at: 1)
        h.addRelay()
        h.join("erin", at: 2)
        h.advance(by: .seconds(1))
        let lists = rooms(h)
        #expect(lists[1] == [1: "dave", 2: "erin"])
        #expect(lists[2] == lists[1], "\(lists)")
        #expect(views(h)["dave"]!.version == 2 && views(h)["erin"]!.version == 2)
        for relay in h.relays {
            #expect(relay.relay.statistics.cluster.rosterGaps == 0)
            #expect(relay.relay.statistics.cluster.rosterMalformed == 0)
        }
    }

    @Test func rosterRecordsRoundTripAndRefuseWhatIsMalformed() throws {
        let records: [RelayRosterRecord] = [
            .joined(room: "room", node: RelayNodeID(7), ticket: 9, peer: "alice", dataSessionsSupported: true),
            .joined(room: "r", node: RelayNodeID(.max), ticket: .max, peer: "b", dataSessionsSupported: false),
            .left(room: "room", node: RelayNodeID(7), ticket: 9),
            .nodeGone(RelayNodeID(7)),
        ]
        for record in records { #expect(try RelayRosterRecord.parse(record.encoded) == record) }
        let joined = records[0].encoded
        for length in 0..<joined.count { #expect(throws: WireError.self) { try RelayRosterRecord.parse(Array(joined.prefix(length))) } }
        #expect(throws: WireError.self) { try RelayRosterRecord.parse(joined + [0]) }
        var badKind = joined
        badKind[1] = 9
        #expect(throws: WireError.self) { try RelayRosterRecord.parse(badKind) }
        // Names that are not UTF-8 are refused, not mapped to U+FFFD (the fuzzer's first finding:
        // "sta\xEEdup" parsed as "sta\u{FFFD}dup", another room's name). Cluster messages alike.
        var notUTF8 = joined
        notUTF8[notUTF8.firstIndex(of: UInt8(ascii: "o"))!] = 0xEE
        #expect(throws: WireError.self) { try RelayRosterRecord.parse(notUTF8) }
        var presence = RelayClusterMessage(node: RelayNodeID(7), room: "room", epoch: 1, sequence: 1, body: .presence(
            members: [RoomMember(member: 1, peer: "carol", dataSessionsSupported: true)], wantsReply: false)).encoded
        presence[presence.count - 2] = 0xFF
        #expect(throws: WireError.self) { try RelayClusterMessage.parse(presence) }
        var nodeZero = records[3].encoded
        for index in 2..<10 { nodeZero[index] = 0 }
        #expect(throws: WireError.self) { try RelayRosterRecord.parse(nodeZero) }
    }
}

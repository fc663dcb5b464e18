import ConduitCore
import ConduitRooms
import ConduitRelayCore
import ConduitRelay
import Testing

/// Two relay machines of one cluster, their cluster messages carried in memory (as NATS would,
/// in order, or with chosen messages lost): rooms spanning relays, sans-IO and on virtual time.
struct ClusterHarness {
    var relays: [RoomHarness]
    let nodes: [RelayNodeID]
    /// Room messages published so far, in order, and which of them were lost on the way.
    var published = 0
    var lose: Set<Int> = []
    /// Node messages (online status, invitations) published so far, and which of them were lost.
    var publishedNode = 0
    var loseNode: Set<Int> = []
    /// Every node message whose body matches is lost on the way (a link that keeps losing them).
    var loseNodeWhere: (@Sendable (RelayClusterNodeMessage) -> Bool)?
    /// Relays whose messages no longer arrive anywhere (dead without a word).
    var deadRelays: Set<Int> = []

    /// The roster's stream (RelayMachine+Roster.swift), when the relays have one: every record
    /// appended so far, in order (nil: removed by a purge, as JetStream removes them); how far
    /// each relay has read it, and how many records its consumer delivered (from 1 again when it
    /// reads anew, as a new JetStream consumer counts); relays that stopped reading it; purges.
    var roster: [[UInt8]?] = []
    var rosterRead: [Int]
    var rosterDelivered: [UInt64]
    var rosterPurges: [RelayRosterPurge] = []
    var rosterPaused: Set<Int> = []
    /// Records (by sequence) that do not reach a relay the first time it reads them (its buffer
    /// overflowed): it reads the stream again from there when it asks to.
    var rosterLost: [Int: Set<Int>] = [:]
    /// Records (by sequence) before which a relay's client makes a consumer of its own (as libnats
    /// does after a reconnection): the count starts again at 1 there, unasked.
    var rosterReset: [Int: Set<Int>] = [:]
    let liveness: RelayClusterLiveness

    init(configuration: RelayConfiguration = .init(), relayCount: Int = 2, roster: Bool = false, liveness: RelayClusterLiveness = .init()) {
        nodes = (0..<relayCount).map { RelayNodeID(UInt64(0xA + $0)) }
        relays = (0..<relayCount).map { _ in RoomHarness(configuration: configuration) }
        rosterRead = Array(repeating: 0, count: relayCount)
        rosterDelivered = Array(repeating: 0, count: relayCount)
        self.liveness = liveness
        for index in relays.indices { relays[index].relay.joinCluster(as: nodes[index], liveness: liveness, roster: roster, now: relays[index].now) }
    }

    /// A relay that starts later (same clock as the others), in the cluster from now on: with a
    /// roster, it reads the whole stream from its start.
    mutating func addRelay(configuration: RelayConfiguration = .init(), roster: Bool = true) {
        var relay = RoomHarness(configuration: configuration)
        relay.now = relays[0].now
        relay.relay.joinCluster(as: RelayNodeID(UInt64(0xA + relays.count)), liveness: liveness, roster: roster, now: relay.now)
        relays.append(relay)
        rosterRead.append(0)
        rosterDelivered.append(0)
        carry()
    }

    /// Carries every published message to the other relay (unless lost), and pumps, until quiet
    /// (pumping may publish more: a receiver drained, a member left).
    mutating func carry() {
        var moved = true
        while moved {
            moved = deliverPublished()
            for index in relays.indices { relays[index].pump() }
            if deliverPublished() { moved = true }
        }
    }

    /// Hands every message published so far to the other relays (unless lost); true if there was one.
    private mutating func deliverPublished() -> Bool {
        var moved = false
        for from in relays.indices {
            while let message = relays[from].relay.pollClusterMessage() {
                moved = true
                published += 1
                guard !lose.contains(published), !deadRelays.contains(from) else { continue }
                let bytes = message.encoded
                for to in relays.indices where to != from { relays[to].relay.handleCluster(bytes, now: relays[to].now) }
            }
            while let record = relays[from].relay.pollRosterRecord() {
                moved = true
                if !deadRelays.contains(from) { roster.append(record.encoded) }
            }
            while let purge = relays[from].relay.pollRosterPurge() {
                guard !deadRelays.contains(from) else { continue }
                rosterPurges.append(purge)
                for index in roster.indices.prefix(Int(purge.before) - 1) {
                    if let bytes = roster[index], (try? RelayRosterRecord.parse(bytes))?.subject == purge.subject { roster[index] = nil }
                }
            }
            while let message = relays[from].relay.pollClusterNodeMessage() {
                moved = true
                publishedNode += 1
                guard !loseNode.contains(publishedNode), !deadRelays.contains(from), loseNodeWhere?(message) != true else { continue }
                let bytes = message.encoded
                for to in relays.indices where to != from { relays[to].relay.handleCluster(bytes, now: relays[to].now) }
            }
        }
        // Every relay reads the roster in the stream's order, its own records included.
        for to in relays.indices where !rosterPaused.contains(to) && !deadRelays.contains(to) {
            while rosterRead[to] < roster.count {
                rosterRead[to] += 1
                moved = true
                guard let bytes = roster[rosterRead[to] - 1] else { continue }
                if rosterReset[to]?.remove(rosterRead[to]) != nil { rosterDelivered[to] = 0 }
                rosterDelivered[to] += 1
                if rosterLost[to]?.remove(rosterRead[to]) != nil { continue }
                relays[to].relay.handleRoster(bytes, sequence: UInt64(rosterRead[to]), delivered: rosterDelivered[to], now: relays[to].now)
            }
            if let from = relays[to].relay.pollRosterResume() {
                rosterRead[to] = Int(from) - 1
                rosterDelivered[to] = 0
                moved = true
            }
        }
        return moved
    }

    mutating func advance(by duration: Duration) {
        let end = relays[0].now + duration
        while relays[0].now < end {
            for index in relays.indices { relays[index].advance(by: .milliseconds(10)) }
            carry()
        }
    }

    mutating func join(_ name: String, at relay: Int, room: RoomID = "room") {
        relays[relay].join(name, room: room)
        carry()
    }

    func peers(_ name: String, at relay: Int) -> [PeerID] {
        relays[relay].clients[name]!.machine.members.values.map(\.peer).sorted()
    }
}

@Suite struct ClusterMachineTests {
    let main = SessionKey(streamID: 100)

    /// alice on relay 0; bob and carol on relay 1; everyone has seen everyone.
    func spanning() -> ClusterHarness {
        var h = ClusterHarness()
        h.join("alice", at: 0)
        h.join("bob", at: 1)
        h.join("carol", at: 1)
        h.advance(by: .seconds(1))
        for relay in 0...1 { for name in h.relays[relay].clients.keys { _ = h.relays[relay].take(name) } }
        return h
    }

    @Test func membersOnOtherRelaysAppearAsPeersAndBothRelaysListTheSameRoom() {
        let h = spanning()
        #expect(h.peers("alice", at: 0) == ["bob", "carol"])
        #expect(h.peers("bob", at: 1) == ["alice", "carol"])
        #expect(h.peers("carol", at: 1) == ["alice", "bob"])
        #expect(Set(h.relays[0].relay.members(of: "room").values) == ["alice", "bob", "carol"])
        #expect(Set(h.relays[1].relay.members(of: "room").values) == ["alice", "bob", "carol"])
        for relay in 0...1 { #expect(h.relays[relay].relay.statistics.cluster.messagesLost == 0) }
    }

    @Test func dataCrossesRelaysToEveryoneOrToOnePeerInOrder() {
        var h = spanning()
        #expect(h.relays[0].clients["alice"]!.machine.makeOutbound(main, type: .reliableMessage, now: h.relays[0].now) == .none)
        h.relays[0].pump()
        h.carry()
        #expect(h.relays[1].clients["bob"]!.events == [.dataSessionIncoming(main, .reliableMessage, from: "alice")])
        h.relays[1].acceptAll("bob")
        h.relays[1].acceptAll("carol")
        for index in 0..<20 {
            h.relays[0].send("alice", main, "all \(index)")
            h.carry()
        }
        #expect(h.relays[0].clients["alice"]!.machine.changeDestination(main, to: "carol") == true)
        h.relays[0].send("alice", main, "to carol")
        h.carry()
        let all = (0..<20).map { "all \($0)" }
        #expect(h.relays[1].messages("bob", main).map(\.1) == all)
        #expect(h.relays[1].messages("carol", main).map(\.1) == all + ["to carol"])
        #expect(h.relays[1].messages("carol", main).allSatisfy { $0.0 == "alice" })
        #expect(h.relays[0].relay.statistics.cluster.framesForwarded >= 21)
        #expect(h.relays[1].relay.statistics.cluster.messagesLost == 0)
    }

    @Test func aLeaveOnOneRelayReachesThePeerListsOfTheOther() {
        var h = spanning()
        h.relays[1].clients["bob"]!.machine.leave()
        h.relays[1].pump()
        h.carry()
        h.advance(by: .seconds(1))
        #expect(h.peers("alice", at: 0) == ["carol"])
        #expect(Set(h.relays[0].relay.members(of: "room").values) == ["alice", "carol"])
        // The last member of relay 1 leaves: relay 0 forgets every member of relay 1.
        h.relays[1].clients["carol"]!.machine.leave()
        h.relays[1].pump()
        h.carry()
        h.advance(by: .seconds(1))
        #expect(h.peers("alice", at: 0) == [])
        #expect(h.relays[1].relay.roomCount == 0)
    }

    @Test func aMessageLostBetweenRelaysIsCountedNeverSilent() {
        var h = spanning()
        #expect(h.relays[0].clients["alice"]!.machine.makeOutbound(main, type: .reliableMessage, now: h.relays[0].now) == .none)
        h.relays[0].pump()
        h.carry()
        h.relays[1].acceptAll("bob")
        h.relays[0].send("alice", main, "one")
        h.carry()
        // The next message relay 0 publishes is lost on the way.
        h.lose = [h.published + 1]
        h.relays[0].send("alice", main, "two")
        h.carry()
        #expect(h.relays[1].relay.statistics.cluster.gaps == 0)  // not seen until the next one arrives
        h.relays[0].send("alice", main, "three")
        h.carry()
        let statistics = h.relays[1].relay.statistics.cluster
        #expect(statistics.gaps == 1)
        #expect(statistics.messagesLost == 1)
        // It was data: the receivers of alice's reliable session there are told, with the reason,
        // before what follows; the session goes on.
        #expect(statistics.dataLost == 1)
        #expect(statistics.sessionsReportedLost == 1)
        let atBob = h.relays[1].take("bob")
        let report = atBob.firstIndex(of: .senderSessionEnded(main, from: "alice", .lostBetweenRelays))
        let three = atBob.firstIndex { if case .received(main, "alice", .message(let bytes, _)) = $0 { bytes == Array("three".utf8) } else { false } }
        #expect(report != nil && three != nil && report! < three!, "\(atBob)")
        h.relays[0].send("alice", main, "four")
        h.carry()
        #expect(h.relays[1].messages("bob", main).map(\.1) == ["four"])
        // Peer lists still agree (the gap asked every relay to announce again).
        #expect(h.peers("bob", at: 1) == ["alice", "carol"])
    }

    @Test func aLostAnnouncementIsRepairedByTheNextMessage() {
        var h = ClusterHarness()
        h.join("alice", at: 0)
        h.join("bob", at: 1)
        h.advance(by: .seconds(1))
        // carol's arrival on relay 1 is announced, and the announcement lost.
        h.lose = [h.published + 1]
        h.join("carol", at: 1)
        #expect(!h.relays[0].relay.members(of: "room").values.contains("carol"))
        // bob's next frame shows relay 0 the gap; the repair brings carol in.
        #expect(h.relays[1].clients["bob"]!.machine.makeOutbound(main, type: .reliableMessage, now: h.relays[1].now) == .none)
        h.relays[1].pump()
        h.carry()
        h.advance(by: .seconds(1))
        #expect(h.peers("alice", at: 0) == ["bob", "carol"])
        #expect(h.relays[0].relay.statistics.cluster.gaps == 1)
        // An announcement, not data: repaired, nothing reported to anyone.
        #expect(h.relays[0].relay.statistics.cluster.dataLost == 0)
        #expect(h.relays[0].relay.statistics.cluster.sessionsReportedLost == 0)
    }

    @Test func aRelayThatFallsSilentHasItsMembersReportedLeftWithinTheTimeout() {
        var h = spanning()
        // Quiet for 10 s, heartbeats flowing: nobody is taken for dead.
        h.advance(by: .seconds(10))
        #expect(h.peers("alice", at: 0) == ["bob", "carol"])
        #expect(h.relays[0].relay.statistics.cluster.relaysTimedOut == 0)
        // Relay 1 dies without a word: from now on nothing it publishes arrives.
        h.deadRelays = [1]
        h.advance(by: .seconds(3))
        #expect(h.peers("alice", at: 0) == ["bob", "carol"])
        // 4 s of silence, counted from the last heartbeat heard: reported within 5 s of the death.
        h.advance(by: .seconds(2))
        #expect(h.peers("alice", at: 0) == [])
        #expect(h.relays[0].relay.statistics.cluster.relaysTimedOut == 1)
        #expect(h.relays[0].take("alice").contains { if case .peersChanged(_, let left, _) = $0 { left.count == 2 } else { false } })
    }

    /// A driver wakes the machine only at `nextTimeout()` (`RelayServer` arms one timer with it).
    /// Heartbeats an hour apart leave the silence of another relay the only reason to wake: its
    /// deadline must be among the machine's (kept in the timeout floor, not found by a walk over
    /// every room after every batch), or its members would never be reported left.
    @Test func aSilentRelaysDeadlineWakesTheRelayWithHeartbeatsFarApart() {
        let silence = Duration.seconds(4)
        var h = ClusterHarness(liveness: RelayClusterLiveness(heartbeatInterval: .seconds(3_600), silenceTimeout: silence))
        h.join("alice", at: 0)
        h.join("bob", at: 1)
        let heard = h.relays[0].now
        #expect(h.relays[0].relay.members(of: "room").values.sorted() == ["alice", "bob"])
        h.deadRelays = [1]
        var wakeUps = 0
        while let due = h.relays[0].relay.nextTimeout(), due < heard + silence, wakeUps < 1_000 {
            h.relays[0].now = max(h.relays[0].now, due)
            h.relays[0].relay.handleTimeout(now: h.relays[0].now)
            h.relays[0].pump()
            wakeUps += 1
        }
        // Every earlier deadline handled (each time the floor was made exact again): relay 1's is next.
        let due = h.relays[0].relay.nextTimeout()
        #expect(due == heard + silence)
        h.relays[0].now = due ?? h.relays[0].now
        h.relays[0].relay.handleTimeout(now: h.relays[0].now)
        h.relays[0].pump()
        #expect(h.relays[0].relay.statistics.cluster.relaysTimedOut == 1)
        #expect(h.relays[0].relay.members(of: "room").values.sorted() == ["alice"])
    }

    /// The same deadline when the relay is first heard while nothing else is due soon (the floor
    /// exact and later): hearing it must lower the floor itself, since no scan comes before it.
    @Test func aRelayFirstHeardLowersTheDeadlineItself() {
        let silence = Duration.seconds(4)
        var h = RoomHarness()
        h.relay.joinCluster(as: RelayNodeID(0xA), liveness: RelayClusterLiveness(heartbeatInterval: .seconds(3_600), silenceTimeout: silence), now: h.now)
        h.join("alice")
        h.advance(by: .seconds(2))  // alice's join settled; every timeout since made the floor exact
        let quiet = h.relay.nextTimeout()
        #expect(quiet.map { $0 > h.now + silence } == true, "nothing due within the silence timeout yet: \(String(describing: quiet))")
        // Another relay's first word about the room: an announcement with nobody in it (no
        // peer-list change, so no other deadline comes with it).
        let hello = RelayClusterMessage(node: RelayNodeID(0xB), room: "room", epoch: 1, sequence: 1, body: .presence(members: [], wantsReply: false))
        h.relay.handleCluster(hello.encoded, now: h.now)
        let heard = h.now
        #expect(h.relay.nextTimeout() == heard + silence)
        h.now = heard + silence
        h.relay.handleTimeout(now: h.now)
        #expect(h.relay.statistics.cluster.relaysTimedOut == 1)
    }

    @Test func garbageAndEchoesFromTheClusterAreDroppedAndCounted() {
        var h = spanning()
        let before = h.relays[0].relay.statistics.cluster
        h.relays[0].relay.handleCluster([], now: h.relays[0].now)
        h.relays[0].relay.handleCluster([1, 9, 0, 0], now: h.relays[0].now)
        h.relays[0].relay.handleCluster(Array(repeating: 0xFF, count: 64), now: h.relays[0].now)
        // Its own message coming back (NATS echoes to the publisher's subscription): ignored.
        let echo = RelayClusterMessage(node: h.nodes[0], room: "room", epoch: 1, sequence: 99, body: .presence(members: [], wantsReply: false))
        h.relays[0].relay.handleCluster(echo.encoded, now: h.relays[0].now)
        // A frame from a member nobody announced.
        let stranger = RelayClusterMessage(node: h.nodes[1], room: "room", epoch: 1, sequence: 1_000, body: .data(origin: 77, targetNode: 0, targetMember: 0, frame: [0x13, 0, 0, 77, 0]))
        h.relays[0].relay.handleCluster(stranger.encoded, now: h.relays[0].now)
        let after = h.relays[0].relay.statistics.cluster
        #expect(after.malformed == before.malformed + 3)
        #expect(after.unknownSender == before.unknownSender + 1)
        #expect(h.peers("alice", at: 0) == ["bob", "carol"])
    }

    @Test func clusterMessagesRoundTripAndRefuseTruncation() throws {
        let messages = [
            RelayClusterMessage(node: RelayNodeID(42), room: "room/ä", epoch: 3, sequence: 9, body: .presence(members: [
                RoomMember(member: 1, peer: "alice", dataSessionsSupported: true),
                RoomMember(member: 700, peer: "bob", dataSessionsSupported: false),
            ], wantsReply: true)),
            RelayClusterMessage(node: RelayNodeID(.max), room: "r", epoch: 1, sequence: .max, body: .data(origin: 5, targetNode: 42, targetMember: 7, frame: [1, 2, 3])),
        ]
        for message in messages {
            let bytes = message.encoded
            #expect(try RelayClusterMessage.parse(bytes) == message)
            // (A data message's frame is its rest: any cut before the frame is truncation.)
            let fixed: Int
            if case .data(_, _, _, let frame) = message.body { fixed = bytes.count - frame.count } else { fixed = bytes.count }
            for cut in 0..<fixed {
                #expect(throws: WireError.self) { try RelayClusterMessage.parse(Array(bytes[..<cut])) }
            }
        }
        #expect(RelayClusterMessage.subject(for: "ab") == "conduit.relay.room.6162")
    }
}

import ConduitCore
import ConduitRooms
import ConduitRelayCore
import Testing

/// The room's rules across relays (issue 16 item 3), on two relay machines and virtual time.
@Suite struct ClusterRoomRulesTests {
    let main = SessionKey(streamID: 100)

    /// alice on relay 0 sending on `main`; bob on relay 1 receiving it.
    func aliceSendingToBob() -> ClusterHarness {
        var h = ClusterHarness()
        h.join("alice", at: 0)
        h.join("bob", at: 1)
        h.advance(by: .seconds(1))
        #expect(h.relays[0].clients["alice"]!.machine.makeOutbound(main, type: .reliableMessage, now: h.relays[0].now) == .none)
        h.relays[0].pump()
        h.carry()
        h.relays[1].acceptAll("bob")
        h.relays[0].send("alice", main, "before")
        h.carry()
        #expect(h.relays[1].messages("bob", main).map(\.1) == ["before"])
        return h
    }

    @Test func aLateJoinerOnAnotherRelayHearsOfTheSessionFromItsDataAndGetsOnlyWhatFollows() {
        var h = aliceSendingToBob()
        h.join("carol", at: 1)
        h.advance(by: .seconds(1))
        #expect(!h.relays[1].clients["carol"]!.events.contains { if case .dataSessionIncoming = $0 { true } else { false } })
        h.relays[0].send("alice", main, "after")
        h.carry()
        #expect(h.relays[1].clients["carol"]!.events.contains(.dataSessionIncoming(main, .reliableMessage, from: "alice")))
        h.relays[1].acceptAll("carol")
        h.relays[0].send("alice", main, "later")
        h.carry()
        let carol = h.relays[1].messages("carol", main)
        #expect(carol.map(\.1) == ["after", "later"])
        #expect(carol.allSatisfy { $0.0 == "alice" })
        #expect(h.relays[1].messages("bob", main).map(\.1) == ["before", "after", "later"])
    }

    @Test func aReceiverOnAnotherRelayUnsupportsAStreamForItselfOnly() {
        var h = aliceSendingToBob()
        h.join("carol", at: 1)
        h.advance(by: .seconds(1))
        h.relays[0].send("alice", main, "one")
        h.carry()
        h.relays[1].acceptAll("carol")
        h.relays[1].clients["bob"]!.machine.unsupportInbound(main)
        h.relays[1].pump()
        h.carry()
        let droppedBefore = h.relays[1].relay.statistics.droppedUnsupported
        h.relays[0].send("alice", main, "two")
        h.carry()
        #expect(h.relays[1].messages("bob", main).map(\.1) == ["before", "one"])
        #expect(h.relays[1].messages("carol", main).map(\.1) == ["one", "two"])
        #expect(h.relays[1].relay.statistics.droppedUnsupported == droppedBefore + 1, "dropped at bob's relay, counted")
        // The sender is not told: alice's session still runs.
        #expect(!h.relays[0].clients["alice"]!.events.contains { if case .outboundClosed = $0 { true } else { false } })
    }

    /// alice on relay 0; bob and carol on relay 1; alice and bob subscribed to "team", carol not;
    /// alice's session in it open and bob's inbound made.
    func aTeamAcrossRelays(_ team: SessionKey) -> ClusterHarness {
        var h = ClusterHarness()
        h.join("alice", at: 0)
        h.join("bob", at: 1)
        h.join("carol", at: 1)
        h.advance(by: .seconds(1))
        h.relays[0].clients["alice"]!.machine.subscribe("team", dataSession: true)
        h.relays[1].clients["bob"]!.machine.subscribe("team", dataSession: true)
        for relay in 0...1 { h.relays[relay].pump() }
        h.carry()
        #expect(h.relays[0].clients["alice"]!.machine.makeOutbound(team, type: .reliableMessage, now: h.relays[0].now) == .none)
        #expect(h.relays[0].clients["alice"]!.machine.makeOutbound(main, type: .reliableMessage, now: h.relays[0].now) == .none)
        h.relays[0].pump()
        h.carry()
        h.relays[1].acceptAll("bob")
        h.relays[1].acceptAll("carol")
        return h
    }

    @Test func subgroupDataCrossesRelaysToItsSubscribersOnly() {
        let team = SessionKey(streamID: 100, subgroup: "team")
        var h = aTeamAcrossRelays(team)
        h.relays[0].send("alice", team, "team only")
        h.relays[0].send("alice", main, "everyone")
        h.carry()
        // The same stream ID, two sessions; each relay numbers "team" its own way.
        #expect(h.relays[1].messages("bob", team).map(\.1) == ["team only"])
        #expect(h.relays[1].messages("bob", team).allSatisfy { $0.0 == "alice" })
        #expect(h.relays[1].messages("bob", main).map(\.1) == ["everyone"])
        #expect(h.relays[1].messages("carol", team).isEmpty)
        #expect(h.relays[1].messages("carol", main).map(\.1) == ["everyone"])
        // bob answers in the subgroup: it reaches alice on the other relay.
        #expect(h.relays[1].clients["bob"]!.machine.makeOutbound(team, type: .reliableMessage, now: h.relays[1].now) == .none)
        h.relays[1].pump()
        h.carry()
        h.relays[0].acceptAll("alice")
        h.relays[1].send("bob", team, "reply")
        h.carry()
        #expect(h.relays[0].messages("alice", team).map(\.1) == ["reply"])
        // One peer of the subgroup on the other relay; a peer outside it is refused there.
        #expect(h.relays[0].clients["alice"]!.machine.changeDestination(team, to: "bob") == true)
        h.relays[0].send("alice", team, "to bob")
        h.carry()
        #expect(h.relays[1].messages("bob", team).map(\.1) == ["team only", "to bob"])
        #expect(h.relays[0].clients["alice"]!.machine.changeDestination(team, to: "carol") == true)
        h.relays[0].send("alice", team, "leak?")
        h.carry()
        #expect(h.relays[1].messages("carol", team).isEmpty)
        #expect(h.relays[0].relay.statistics.refusals(.unknownDestination) == 1)
        for relay in 0...1 {
            #expect(h.relays[relay].relay.statistics.cluster.unknownSubgroup == 0)
            #expect(h.relays[relay].relay.statistics.cluster.messagesLost == 0)
        }
    }

    @Test func aSubgroupSessionEndsOnEveryRelayWhenItsCreatorUnsubscribesOrLeaves() {
        let team = SessionKey(streamID: 200, subgroup: "team")
        var h = aTeamAcrossRelays(team)
        h.relays[0].send("alice", team, "before")
        h.carry()
        _ = h.relays[1].take("bob")
        h.relays[0].clients["alice"]!.machine.unsubscribe("team")
        h.relays[0].pump()
        h.carry()
        #expect(h.relays[0].take("alice").contains(.outboundClosed(team, .sessionEnd)))
        #expect(h.relays[1].take("bob") == [.senderSessionEnded(team, from: "alice", .sessionEnd)])
        // bob's own session in the subgroup lives until he leaves the room: alice, subscribed
        // again, hears it end when he goes.
        h.relays[0].clients["alice"]!.machine.subscribe("team", dataSession: true)
        h.relays[0].pump()
        h.carry()
        #expect(h.relays[1].clients["bob"]!.machine.makeOutbound(team, type: .reliableMessage, now: h.relays[1].now) == .none)
        h.relays[1].pump()
        h.carry()
        h.relays[0].acceptAll("alice")
        h.relays[1].send("bob", team, "still here")
        h.carry()
        #expect(h.relays[0].messages("alice", team).map(\.1) == ["still here"])
        _ = h.relays[0].take("alice")
        h.relays[1].clients["bob"]!.machine.leave()
        h.relays[1].pump()
        h.carry()
        h.advance(by: .seconds(1))
        #expect(h.relays[0].take("alice").contains(.senderSessionEnded(team, from: "bob", .sessionEnd)))
    }

    @Test func subgroupAnnouncementsRoundTrip() throws {
        let message = RelayClusterMessage(node: RelayNodeID(9), room: "room", epoch: 2, sequence: 5, body: .subgroups([
            RelayClusterSubgroup(id: 3, name: "team", dataSession: true, subscribers: [1, 4]),
            RelayClusterSubgroup(id: 700, name: "ops", dataSession: false, subscribers: []),
        ]))
        let bytes = message.encoded
        #expect(try RelayClusterMessage.parse(bytes) == message)
        for cut in 0..<bytes.count {
            #expect(throws: WireError.self) { try RelayClusterMessage.parse(Array(bytes[..<cut])) }
        }
        #expect(throws: WireError.self) { try RelayClusterMessage.parse(bytes + [0]) }
    }
}

import ConduitCore
import ConduitRooms
import ConduitRelayCore
import ConduitRelay
import Testing

/// Room behaviour on the sans-IO machines: membership, peer lists, routing, subgroups, late
/// joiners, per-receiver unsupport and slow receivers.
@Suite struct RoomMachineTests {
    let main = SessionKey(streamID: 100)

    func joined(_ names: [String], configuration: RelayConfiguration = .init()) -> RoomHarness {
        var h = RoomHarness(configuration: configuration)
        for name in names { h.join(name) }
        h.advance(by: .seconds(1))
        for name in names { _ = h.take(name) }
        return h
    }

    func peers(_ h: RoomHarness, _ name: String) -> [PeerID] {
        h.clients[name]!.machine.members.values.map(\.peer).sorted()
    }

    @Test func joiningConnectsAndEveryoneLearnsThePeerList() {
        var h = RoomHarness()
        h.join("alice")
        let taken1 = h.take("alice")
        #expect(taken1 == [.connected(member: 1, peers: [])])
        h.join("bob")
        let taken2 = h.take("bob")
        #expect(taken2 == [.connected(member: 2, peers: [RoomMember(member: 1, peer: "alice", dataSessionsSupported: true)])])
        // alice hears of bob once the coalescing interval passed, with the next version.
        let taken3 = h.take("alice")
        #expect(taken3.isEmpty)
        h.advance(by: .milliseconds(200))
        let taken4 = h.take("alice")
        #expect(taken4 == [.peersChanged(joined: [RoomMember(member: 2, peer: "bob", dataSessionsSupported: true)], left: [], version: 1)])
        let taken5 = h.take("bob")
        #expect(taken5.isEmpty)  // bob is not told about himself
    }

    @Test func changesWithinOneIntervalAreCoalesced() {
        var h = joined(["alice"])
        let before = h.clients["alice"]!.machine.peerListVersion
        h.join("bob")
        h.join("carol")
        h.join("dave")
        h.clients["dave"]!.machine.leave()
        h.pump()
        h.advance(by: .milliseconds(500))
        let events = h.take("alice")
        // One update: bob and carol joined; dave came and went within the interval, so nobody hears of him.
        #expect(events.count == 1)
        guard case .peersChanged(let joined, let left, let version)? = events.first else {
            Issue.record("expected one update, got \(events)")
            return
        }
        #expect(joined.map(\.peer) == ["bob", "carol"])
        #expect(left.isEmpty)
        #expect(version == before + 1)
    }

    @Test func theIntervalGrowsWithTheRoom() {
        let configuration = RelayConfiguration()
        #expect(configuration.peerListInterval(members: 2) == .milliseconds(50))
        #expect(configuration.peerListInterval(members: 25) == .milliseconds(150))
        #expect(configuration.peerListInterval(members: 100) == .milliseconds(550))
        #expect(configuration.peerListInterval(members: 10_000) == .seconds(2))
    }

    @Test func aVersionGapAsksForASnapshot() {
        var h = joined(["alice", "bob"])
        let me = h.member("alice")
        // A forged update that skips a version (as if one had been lost).
        let skipped = RoomControlFrame.peers(PeerListUpdate(version: h.clients["alice"]!.machine.peerListVersion + 2, isSnapshot: false,
                                                           joined: [RoomMember(member: 77, peer: "ghost", dataSessionsSupported: true)], left: []))
        h.clients["alice"]!.machine.handle(datagram: skipped.encoded, now: h.now)
        #expect(h.clients["alice"]!.machine.statistics.peerListGaps == 1)
        #expect(h.clients["alice"]!.machine.hasPendingControl())
        h.pump()  // the snapshot request goes out, the snapshot comes back
        #expect(peers(h, "alice") == ["bob"])
        #expect(h.clients["alice"]!.machine.localMember == me)
        // Later updates apply normally again.
        h.join("carol")
        h.advance(by: .milliseconds(200))
        #expect(peers(h, "alice") == ["bob", "carol"])
    }

    @Test func leavingDisconnectsAndThePeersHearOfIt() {
        var h = joined(["alice", "bob"])
        h.clients["bob"]!.machine.leave()
        h.pump()
        let taken6 = h.take("bob")
        #expect(taken6 == [.disconnected(.left, "left the room")])
        h.advance(by: .milliseconds(200))
        let taken7 = h.take("alice")
        #expect(taken7 == [.peersChanged(joined: [], left: [RoomMember(member: 2, peer: "bob", dataSessionsSupported: true)], version: 2)])
        #expect(h.relay.statistics.leaves == 1)
    }

    @Test func aVanishedPeerIsTimedOutAndReportedLeft() {
        var h = joined(["alice", "bob"], configuration: RelayConfiguration(vanishTimeout: .seconds(3)))
        h.clients["bob"]!.silent = true
        h.advance(by: .seconds(10), step: .milliseconds(250))
        #expect(h.relay.statistics.vanished == 1)
        let taken8 = h.take("alice")
        #expect(taken8.contains(.peersChanged(joined: [], left: [RoomMember(member: 2, peer: "bob", dataSessionsSupported: true)], version: 2)))
        // alice pings, so she stays.
        #expect(h.relay.members(of: "room").values.sorted() == ["alice"])
    }

    @Test func dataGoesToEveryoneOrToOnePeer() {
        var h = joined(["alice", "bob", "carol"])
        #expect(h.clients["alice"]!.machine.makeOutbound(main, type: .reliableMessage, now: h.now) == .none)
        h.pump()
        #expect(h.clients["bob"]!.events == [.dataSessionIncoming(main, .reliableMessage, from: "alice")])
        h.acceptAll("carol")
        h.acceptAll("bob")
        h.send("alice", main, "to all")
        #expect(h.clients["alice"]!.machine.changeDestination(main, to: "carol") == true)
        h.send("alice", main, "to carol")
        #expect(h.clients["alice"]!.machine.changeDestination(main, to: nil) == true)
        h.send("alice", main, "to all again")
        #expect(h.messages("bob", main).map(\.1) == ["to all", "to all again"])
        #expect(h.messages("carol", main).map(\.1) == ["to all", "to carol", "to all again"])
        #expect(h.messages("carol", main).allSatisfy { $0.0 == "alice" })
        #expect(h.messages("alice", main).isEmpty)  // a sender does not hear itself
        let changed = h.clients["alice"]!.machine.changeDestination(main, to: "nobody")
        #expect(changed == false)
    }

    @Test func subgroupDataReachesOnlyItsMembers() {
        var h = joined(["alice", "bob", "carol"])
        for name in ["alice", "bob"] { h.clients[name]!.machine.subscribe("team", dataSession: true) }
        h.pump()
        let team = SessionKey(streamID: 100, subgroup: "team")
        #expect(h.clients["alice"]!.machine.makeOutbound(team, type: .reliableMessage, now: h.now) == .none)
        #expect(h.clients["alice"]!.machine.makeOutbound(main, type: .reliableMessage, now: h.now) == .none)
        h.pump()
        h.acceptAll("bob")
        h.acceptAll("carol")
        h.send("alice", team, "team only")
        h.send("alice", main, "everyone")
        // Same stream ID, two sessions.
        #expect(h.messages("bob", team).map(\.1) == ["team only"])
        #expect(h.messages("bob", main).map(\.1) == ["everyone"])
        #expect(h.messages("carol", team).isEmpty)
        #expect(h.messages("carol", main).map(\.1) == ["everyone"])
        // A destination outside the subgroup is refused by the relay.
        #expect(h.clients["alice"]!.machine.changeDestination(team, to: "carol") == true)
        h.send("alice", team, "leak?")
        #expect(h.relay.statistics.refusals(.unknownDestination) == 1)
        #expect(h.messages("carol", team).isEmpty)
    }

    @Test func aSubgroupSessionLivesWhileItsCreatorStaysSubscribed() {
        var h = joined(["alice", "bob"])
        for name in ["alice", "bob"] { h.clients[name]!.machine.subscribe("team", dataSession: true) }
        h.pump()
        let team = SessionKey(streamID: 200, subgroup: "team")
        #expect(h.clients["alice"]!.machine.makeOutbound(team, type: .reliableMessage, now: h.now) == .none)
        h.pump()
        h.acceptAll("bob")
        h.send("alice", team, "before")
        _ = h.take("alice")
        h.clients["alice"]!.machine.unsubscribe("team")
        h.pump()
        let taken10 = h.take("alice")
        #expect(taken10.contains(.outboundClosed(team, .sessionEnd)))
        let taken11 = h.take("bob")
        #expect(taken11.contains(.senderSessionEnded(team, from: "alice", .sessionEnd)))
        #expect(h.messages("bob", team).isEmpty)  // taken above
        let result = h.clients["alice"]!.machine.enqueue(team, bytes: [1], timestamp: 0, now: h.now)
        #expect(result == .failed(.closed(.sessionEnd)))
    }

    @Test func aLateJoinerIsToldOnceDataFlows() {
        var h = joined(["alice", "bob"])
        #expect(h.clients["alice"]!.machine.makeOutbound(main, type: .unreliableMessage, now: h.now) == .none)
        h.pump()
        h.acceptAll("bob")
        h.send("alice", main, "one")
        h.join("carol")
        let taken12 = h.take("carol")
        #expect(!taken12.contains { if case .dataSessionIncoming = $0 { true } else { false } })
        h.send("alice", main, "two")
        let taken13 = h.take("carol")
        #expect(taken13.contains(.dataSessionIncoming(main, .unreliableMessage, from: "alice")))
        _ = h.clients["carol"]!.machine.makeInbound(main)
        h.drainEvents("carol")
        h.send("alice", main, "three")
        // Held data ("two") is delivered when carol makes the session; nothing sent before she joined.
        #expect(h.messages("carol", main).map(\.1) == ["two", "three"])
        #expect(h.messages("bob", main).map(\.1) == ["one", "two", "three"])
    }

    @Test func unsupportStopsOnlyThatReceiver() {
        var h = joined(["alice", "bob", "carol"])
        #expect(h.clients["alice"]!.machine.makeOutbound(main, type: .reliableMessage, now: h.now) == .none)
        h.pump()
        h.acceptAll("bob")
        h.clients["carol"]!.machine.unsupportInbound(main)
        h.pump()
        h.send("alice", main, "one")
        h.send("alice", main, "two")
        #expect(h.messages("bob", main).map(\.1) == ["one", "two"])
        #expect(h.messages("carol", main).isEmpty)
        #expect(h.relay.statistics.droppedUnsupported == 2)  // stopped at the relay, not sent to carol
        // The sender is not told and keeps sending.
        #expect(h.clients["alice"]!.machine.outboundCloseReason(main) == nil)
        let taken14 = h.take("alice")
        #expect(!taken14.contains { if case .outboundClosed = $0 { true } else { false } })
    }

    /// The relay keeps each room's list of receivers between frames (a frame to the whole room
    /// walks it): every change of the room between two frames must show in the next one.
    @Test func theRelaysListOfReceiversFollowsTheRoomBetweenFrames() {
        var h = joined(["alice", "bob", "carol"])
        #expect(h.clients["alice"]!.machine.makeOutbound(main, type: .reliableMessage, now: h.now) == .none)
        h.pump()
        h.acceptAll("bob")
        h.acceptAll("carol")
        h.send("alice", main, "one")  // the list is made here: bob, carol
        h.clients["bob"]!.machine.leave()
        h.pump()
        h.send("alice", main, "two")  // bob left since: nothing is queued for his closed link
        h.clients["carol"]!.machine.unsupportInbound(main)
        h.pump()
        h.send("alice", main, "three")  // carol declared the stream unsupported since: stopped here
        h.join("dave")
        h.send("alice", main, "four")  // dave joined since: he is told of the session and gets it
        _ = h.clients["dave"]!.machine.makeInbound(main)
        h.drainEvents("dave")
        h.send("alice", main, "five")
        #expect(h.messages("bob", main).map(\.1) == ["one"])
        #expect(h.messages("carol", main).map(\.1) == ["one", "two"])
        #expect(h.messages("dave", main).map(\.1) == ["four", "five"])
        #expect(h.relay.statistics.droppedUnsupported == 3)
    }

    @Test func aSlowReceiverLosesUnreliableDataAndIsDisconnectedPastTheReliableCap() {
        let configuration = RelayConfiguration(maxQueuedBytesPerReceiver: 64 * 1024, maxUnreliableQueuedBytesPerReceiver: 8 * 1024)
        var h = joined(["alice", "bob", "carol"], configuration: configuration)
        let fast = RateLimit.unlimited
        _ = fast
        let lossy = SessionKey(streamID: 300)
        #expect(h.clients["alice"]!.machine.makeOutbound(lossy, type: .unreliableMessage, now: h.now) == .none)
        #expect(h.clients["alice"]!.machine.makeOutbound(main, type: .reliableMessage, now: h.now) == .none)
        h.pump()
        h.acceptAll("bob")
        h.acceptAll("carol")
        h.clients["carol"]!.stalled = true
        // Unreliable: carol's queue fills to its unreliable cap, the rest is dropped and counted.
        for index in 0..<40 { h.send("alice", lossy, String(repeating: "u", count: 900) + "\(index)") }
        #expect(h.messages("bob", lossy).count == 40)
        #expect(h.relay.statistics.unreliableDropped > 0)
        #expect(h.relay.unreliableDropped(for: h.clients["carol"]!.connection) == h.relay.statistics.unreliableDropped)
        #expect(h.relay.members(of: "room").count == 3)
        // Reliable: past the cap carol is let go with a reason; alice and bob carry on.
        for index in 0..<100 { h.send("alice", main, String(repeating: "r", count: 900) + "\(index)") }
        #expect(h.relay.statistics.slowReceiversDisconnected == 1)
        #expect(h.relay.members(of: "room").values.sorted() == ["alice", "bob"])
        #expect(h.messages("bob", main).count == 100)
        h.clients["carol"]!.stalled = false
        h.pump()
        let carol = h.take("carol")
        #expect(carol.last == .disconnected(.slowReceiver, "reliable data queued past 65536 bytes"))
        h.advance(by: .milliseconds(200))
        let taken15 = h.take("bob")
        #expect(taken15.contains { if case .peersChanged(_, let left, _) = $0 { left.map(\.peer) == ["carol"] } else { false } })
    }

    @Test func extensionsReachOneMemberWithTheSenderStamped() {
        var h = joined(["alice", "bob"])
        #expect(h.clients["alice"]!.machine.sendExtension(2, to: "bob", body: Array("invite".utf8)) == true)
        h.pump()
        let taken16 = h.take("bob")
        #expect(taken16 == [.extensionReceived(id: 2, from: "alice", body: Array("invite".utf8))])
        #expect(h.relay.statistics.extensionsRelayed == 1)
    }

    @Test func largeMessagesAreFragmentedAndReassembledPerSender() {
        var h = joined(["alice", "bob", "carol"])
        for name in ["alice", "bob"] {
            #expect(h.clients[name]!.machine.makeOutbound(main, type: .reliableMessage, now: h.now) == .none)
        }
        h.pump()
        h.acceptAll("carol")
        let a = (0..<20_000).map { UInt8(truncatingIfNeeded: $0) }
        let b = (0..<30_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        // Both senders' fragments interleave at carol; each message comes out whole and from its sender.
        _ = h.clients["alice"]!.machine.enqueue(main, bytes: a, timestamp: 1, now: h.now)
        _ = h.clients["bob"]!.machine.enqueue(main, bytes: b, timestamp: 2, now: h.now)
        h.advance(by: .seconds(1))
        let got = h.clients["carol"]!.events.compactMap { event -> (PeerID, [UInt8])? in
            guard case .received(main, let from, .message(let bytes, _)) = event else { return nil }
            return (from, bytes)
        }
        #expect(got.count == 2)
        #expect(got.first { $0.0 == "alice" }?.1 == a)
        #expect(got.first { $0.0 == "bob" }?.1 == b)
    }
}

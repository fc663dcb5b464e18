import ConduitCore
import ConduitRooms
import ConduitRelayCore
import Testing

/// The room's rules across relays (issue 16 item 3), on two relay machines and virtual time.
@Suite struct ClusterRoomRulesTests {
    let main = SessionKey(streamID: 100)

    /// alice on relay 0 sending on `main`; bob on relay 1 receiving it.
    func aliceSendingToBob() -> ClusterHarness {
        var h = ClusterHarness.joined([("alice", 0), ("bob", 1)])
        h.open(main, by: "alice", at: 0)
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
        var h = ClusterHarness.joined([("alice", 0), ("bob", 1), ("carol", 1)])
        h.relays[0].clients["alice"]!.machine.subscribe("team", dataSession: true)
        h.relays[1].clients["bob"]!.machine.subscribe("team", dataSession: true)
        for relay in 0...1 { h.relays[relay].pump() }
        h.carry()
        h.open(team, by: "alice", at: 0)
        h.open(main, by: "alice", at: 0)
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
        h.open(team, by: "bob", at: 1)
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
        h.open(team, by: "bob", at: 1)
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

    /// The sender header receivers on `relay` get for `peer`: its member number there.
    func header(of peer: PeerID, at relay: Int, _ h: ClusterHarness) -> [UInt8] {
        let number = h.relays[relay].relay.members(of: "room").first { $0.value == peer }!.key
        return [UInt8(number >> 8), UInt8(number & 0xFF)]
    }

    func channelMessages(_ h: ClusterHarness, _ name: String, at relay: Int) -> [(PeerID, [UInt8], String)] {
        h.relays[relay].clients[name]!.events.compactMap {
            guard case .channelMessage(_, let from, let header, let bytes, _) = $0 else { return nil }
            return (from, header, String(decoding: bytes, as: UTF8.self))
        }
    }

    @Test func labeledChannelsCrossRelaysWithTheSenderHeaderEachReceiverKnows() {
        var h = ClusterHarness()
        func chat(_ direction: ChannelDeclaration.Direction, compress: Bool = false) -> ChannelDeclaration {
            try! ChannelDeclaration(label: "#chat", direction: direction, protocolName: "chat-v1", compress: compress, senderHeader: true)
        }
        h.relays[0].join("alice", channels: [chat(.sendrecv)])
        h.carry()
        h.relays[1].join("bob", channels: [chat(.recvonly)])
        h.carry()
        h.relays[1].join("carol", channels: [chat(.sendonly)])
        h.carry()
        // dave, on relay 0, declares #chat with other options: refused there.
        h.relays[0].join("dave", channels: [chat(.sendrecv, compress: true)])
        h.carry()
        h.advance(by: .seconds(1))
        for (relay, name, text) in [(0, "alice", "from alice"), (1, "carol", "from carol")] {
            let result = h.relays[relay].clients[name]!.machine.sendChannel("#chat", bytes: Array(text.utf8), compressed: false, now: h.relays[relay].now)
            #expect({ if case .queued = result { true } else { false } }())
            h.relays[relay].pump()
            h.carry()
        }
        // bob (recvonly, relay 1) gets both, each header naming the sender as relay 1 numbers it.
        let atBob = channelMessages(h, "bob", at: 1)
        #expect(atBob.map(\.2) == ["from alice", "from carol"])
        #expect(atBob.map(\.0) == ["alice", "carol"])
        #expect(atBob.map(\.1) == [header(of: "alice", at: 1, h), header(of: "carol", at: 1, h)])
        // alice (sendrecv, relay 0) hears carol, named as relay 0 numbers her; carol (sendonly)
        // hears nobody; dave is on no channel.
        let atAlice = channelMessages(h, "alice", at: 0)
        #expect(atAlice.map(\.2) == ["from carol"])
        #expect(atAlice.map(\.1) == [header(of: "carol", at: 0, h)])
        #expect(channelMessages(h, "carol", at: 1).isEmpty)
        #expect(channelMessages(h, "dave", at: 0).isEmpty)
        for relay in 0...1 {
            #expect(h.relays[relay].relay.statistics.cluster.unknownChannel == 0)
            #expect(h.relays[relay].relay.statistics.cluster.channelMismatches == 0)
        }
        // carol leaves: relay 0 forgets her direction; alice's next message still reaches bob.
        h.relays[1].clients["carol"]!.machine.leave()
        h.relays[1].pump()
        h.carry()
        h.advance(by: .seconds(1))
        _ = h.relays[0].clients["alice"]!.machine.sendChannel("#chat", bytes: Array("again".utf8), compressed: false, now: h.relays[0].now)
        h.relays[0].pump()
        h.carry()
        #expect(channelMessages(h, "bob", at: 1).map(\.2) == ["from alice", "from carol", "again"])
    }

    @Test func channelAnnouncementsRoundTrip() throws {
        let declaration = try ChannelDeclaration(label: "#chat", direction: .sendrecv, reliability: .reliableOrdered, protocolName: "p", compress: true, senderHeader: true)
        let message = RelayClusterMessage(node: RelayNodeID(9), room: "room", epoch: 2, sequence: 6, body: .channels([
            RelayClusterChannel(id: 4, declaration: declaration, directions: [1: .sendrecv, 3: .recvonly]),
        ]))
        let bytes = message.encoded
        #expect(try RelayClusterMessage.parse(bytes) == message)
        for cut in 0..<bytes.count {
            #expect(throws: WireError.self) { try RelayClusterMessage.parse(Array(bytes[..<cut])) }
        }
    }

    func trackMessages(_ h: ClusterHarness, _ name: String, at relay: Int) -> [String] {
        h.relays[relay].clients[name]!.events.compactMap {
            guard case .trackMessage(_, let from, let bytes) = $0, from == "alice" else { return nil }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    @Test func aDataTrackCrossesRelaysToSubscribersOnlyWithWhatIsSentAfterSubscribing() {
        var h = ClusterHarness.joined([("alice", 0), ("bob", 1), ("carol", 1)])
        func send(_ text: String) {
            let result = h.relays[0].clients["alice"]!.machine.sendTrack("whiteboard", bytes: Array(text.utf8), now: h.relays[0].now)
            #expect({ if case .queued = result { true } else { false } }())
            h.relays[0].pump()
            h.carry()
        }
        #expect(h.relays[0].clients["alice"]!.machine.publishTrack("whiteboard", reliability: .reliableOrdered) == true)
        h.relays[0].pump()
        h.carry()
        // The other relay shows alice's track to its members; nobody subscribed: nothing crosses.
        #expect(h.relays[1].clients["bob"]!.events.contains(ConferenceEvent.trackPublished("whiteboard", by: "alice", .reliableOrdered)))
        send("0")
        let forwardedBefore = h.relays[0].relay.statistics.cluster.framesForwarded
        #expect(h.relays[1].clients["bob"]!.machine.subscribeTrack("whiteboard", of: "alice") == true)
        h.relays[1].pump()
        h.carry()
        for number in 1...5 { send("\(number)") }
        #expect(h.relays[1].clients["carol"]!.machine.subscribeTrack("whiteboard", of: "alice") == true)
        h.relays[1].pump()
        h.carry()
        for number in 6...10 { send("\(number)") }
        #expect(trackMessages(h, "bob", at: 1) == (1...10).map(\.description))
        #expect(trackMessages(h, "carol", at: 1) == (6...10).map(\.description))
        #expect(h.relays[0].relay.statistics.cluster.framesForwarded == forwardedBefore + 10)
        // A late joiner on the other relay learns of the track when it joins.
        h.join("dave", at: 1)
        #expect(h.relays[1].clients["dave"]!.events.contains(ConferenceEvent.trackPublished("whiteboard", by: "alice", .reliableOrdered)))
        // Unpublishing reaches the other relay's members.
        h.relays[0].clients["alice"]!.machine.unpublishTrack("whiteboard")
        h.relays[0].pump()
        h.carry()
        #expect(h.relays[1].clients["carol"]!.events.contains(ConferenceEvent.trackUnpublished("whiteboard", by: "alice")))
        #expect(h.relays[1].relay.statistics.cluster.unknownTrack == 0)
    }

    @Test func trackAnnouncementsRoundTrip() throws {
        let message = RelayClusterMessage(node: RelayNodeID(9), room: "room", epoch: 2, sequence: 7, body: .tracks(
            published: [TrackInfo(trackID: 3, publisher: 1, name: "whiteboard", reliability: .reliableOrdered)],
            subscribed: [RelayClusterTrackKey(node: RelayNodeID(0xAB), track: 4)]))
        let bytes = message.encoded
        #expect(try RelayClusterMessage.parse(bytes) == message)
        for cut in 0..<bytes.count {
            #expect(throws: WireError.self) { try RelayClusterMessage.parse(Array(bytes[..<cut])) }
        }
    }
}

extension ClusterHarness {
    /// Members joined at their relays in turn, then a second for everyone to hear of everyone.
    static func joined(_ members: [(String, Int)]) -> ClusterHarness {
        var h = ClusterHarness()
        for (name, relay) in members { h.join(name, at: relay) }
        h.advance(by: .seconds(1))
        return h
    }

    /// `name`, on `relay`, opens a reliable session on `key`; what that sends is carried everywhere.
    mutating func open(_ key: SessionKey, by name: String, at relay: Int) {
        #expect(relays[relay].clients[name]!.machine.makeOutbound(key, type: .reliableMessage, now: relays[relay].now) == .none)
        relays[relay].pump()
        carry()
    }
}

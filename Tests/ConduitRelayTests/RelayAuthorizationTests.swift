import ConduitCore
import ConduitRooms
import ConduitRelayCore
import ConduitRelay
import Testing

/// Every refusal case of the relay: the refused party learns why (where it is told), the counter
/// for that kind goes up by one, and not one byte is relayed to anybody.
@Suite struct RelayAuthorizationTests {
    /// A room with alice (publisher) and bob (receiver), both connected and quiet.
    func room() -> RoomHarness {
        var h = RoomHarness()
        h.join("alice")
        h.join("bob")
        h.advance(by: .milliseconds(200))
        _ = h.take("alice")
        _ = h.take("bob")
        return h
    }

    func refusedJoin(_ token: String?, as peer: String = "mallory", room: RoomID = "room") -> (RoomHarness, [ConferenceEvent]) {
        var h = self.room()
        h.join(peer, room: room, token: token ?? "")
        return (h, h.take(peer))
    }

    func expectRefused(_ refusal: RelayRefusal, token: String?, as peer: String = "mallory", room: RoomID = "room") {
        var (h, events) = refusedJoin(token, as: peer, room: room)
        #expect(h.relay.statistics.refusals(refusal) == 1)
        #expect(h.relay.statistics.bytesRelayed == 0)
        #expect(h.relay.statistics.framesRelayed == 0)
        #expect(events.count == 1)
        guard case .disconnected(.refused, let text)? = events.first else {
            Issue.record("expected a refusal, got \(events)")
            return
        }
        #expect(text.contains(refusal.description))
        #expect(h.relay.members(of: room).values.contains(PeerID(stringLiteral: peer)) == false)
        let taken1 = h.take("alice")
        #expect(!taken1.contains { if case .peersChanged = $0 { true } else { false } })
    }

    @Test func missingTokenIsRefused() { expectRefused(.tokenMissing, token: nil) }

    @Test func malformedTokenIsRefused() {
        expectRefused(.tokenMalformed, token: "not-a-token")
        expectRefused(.tokenMalformed, token: "ct1.@@@.###")
        expectRefused(.tokenMalformed, token: "ct1.AAAA")
    }

    @Test func expiredTokenIsRefused() {
        expectRefused(.tokenExpired, token: RoomHarness.token(peer: "mallory", expiresAt: RoomHarness.unixNow - 1))
        expectRefused(.tokenExpired, token: RoomHarness.token(peer: "mallory", expiresAt: RoomHarness.unixNow))
    }

    @Test func tamperedTokenIsRefused() {
        let good = RoomHarness.token(peer: "mallory")
        // Flip one character of the payload: the signature no longer matches.
        var chars = Array(good)
        let index = RelayToken.prefix.count + 3
        chars[index] = chars[index] == "A" ? "B" : "A"
        expectRefused(.tokenTampered, token: String(chars))
        // A token signed with another secret.
        let other = try! RelaySecret(bytes: Array("another secret, 32 bytes long!!!".utf8))
        let forged = RelayToken(room: "room", peer: "mallory", canPublish: true, canSubscribe: true, expiresAt: RoomHarness.unixNow + 60).signed(with: other)
        expectRefused(.tokenTampered, token: forged)
    }

    @Test func wrongRoomIsRefused() {
        expectRefused(.wrongRoom, token: RoomHarness.token(room: "other-room", peer: "mallory"))
    }

    @Test func someoneElsesTokenIsRefused() {
        // mallory presents a valid token minted for carol: forged identity.
        expectRefused(.wrongPeer, token: RoomHarness.token(peer: "carol"), as: "mallory")
    }

    @Test func replayedTokenIsRefused() {
        var h = room()
        let token = RoomHarness.token(peer: "carol")
        h.join("carol", token: token)
        let taken2 = h.take("carol")
        #expect(taken2.contains { if case .connected = $0 { true } else { false } })
        h.clients["carol"]!.machine.leave()
        h.pump()
        h.clients["carol"] = nil
        h.join("carol", token: token)
        let events = h.take("carol")
        #expect(h.relay.statistics.refusals(.tokenReplayed) == 1)
        #expect(events.contains { if case .disconnected(.refused, _) = $0 { true } else { false } })
        #expect(h.relay.statistics.bytesRelayed == 0)
    }

    @Test func forgedSenderIsRefused() {
        var h = room()
        // mallory is a member and sends a downstream (relayed) frame claiming to come from alice.
        h.join("mallory")
        _ = h.take("bob")
        let data = dataFrame(stream: 100, subgroupID: 0, text: "I am alice")
        h.inject("mallory", RelayEnvelope.wrap(.relayed, member: h.member("alice"), data))
        #expect(h.relay.statistics.refusals(.forgedSender) == 1)
        #expect(h.relay.statistics.bytesRelayed == 0)
        let taken3 = h.take("bob")
        #expect(!taken3.contains { if case .received = $0 { true } else { false } })
    }

    @Test func frameBeforeJoiningIsRefused() {
        var h = room()
        let id = RelayConnectionID(99)
        _ = h.relay.connectionOpened(id, now: h.now)
        h.relay.handle(id, datagram: RelayEnvelope.wrap(.routed, member: 0, dataFrame(stream: 100, subgroupID: 0, text: "hi")), now: h.now)
        #expect(h.relay.statistics.refusals(.notJoined) == 1)
        #expect(h.relay.statistics.bytesRelayed == 0)
    }

    @Test func unjoinedSubgroupIsRefused() {
        var h = room()
        // bob creates subgroup "team"; alice is not in it but sends data with its ID.
        h.clients["bob"]!.machine.subscribe("team", dataSession: true)
        h.pump()
        let taken4 = h.take("bob")
        #expect(taken4.contains(.subscribed("team", dataSession: true)))
        let teamID = h.subgroupID("team")
        h.inject("alice", RelayEnvelope.wrap(.routed, member: 0, dataFrame(stream: 100, subgroupID: teamID, text: "sneaking in")))
        h.inject("alice", RelayEnvelope.wrap(.routed, member: 0, ControlFrame.sessionOpen(streamID: 100, subgroupID: teamID, subgroup: "team", type: .reliableMessage).encoded))
        #expect(h.relay.statistics.refusals(.unjoinedSubgroup) == 2)
        #expect(h.relay.statistics.bytesRelayed == 0)
        let taken5 = h.take("bob")
        #expect(!taken5.contains { if case .dataSessionIncoming = $0 { true } else { false } })
    }

    @Test func subgroupWithoutDataSessionsIsRefused() {
        var h = room()
        h.clients["alice"]!.machine.subscribe("voice", dataSession: false)
        h.clients["bob"]!.machine.subscribe("voice", dataSession: false)
        h.pump()
        // The client refuses to make the session itself...
        #expect(h.clients["alice"]!.machine.makeOutbound(SessionKey(streamID: 100, subgroup: "voice"), type: .reliableMessage, now: h.now) == .internal)
        // ...and the relay refuses a client that sends anyway.
        h.inject("alice", RelayEnvelope.wrap(.routed, member: 0, dataFrame(stream: 100, subgroupID: h.subgroupID("voice"), text: "x")))
        #expect(h.relay.statistics.refusals(.subgroupWithoutDataSessions) == 1)
        #expect(h.relay.statistics.bytesRelayed == 0)
    }

    @Test func receiveOnlyPeerCannotPublish() {
        var h = room()
        h.join("viewer", token: RoomHarness.token(peer: "viewer", publish: false))
        _ = h.take("alice")
        let key = SessionKey(streamID: 100)
        #expect(h.clients["viewer"]!.machine.makeOutbound(key, type: .reliableMessage, now: h.now) == .none)
        h.pump()
        h.send("viewer", key, "may I?")
        #expect(h.relay.statistics.refusals(.receiveOnly) == 2)  // the session open and the data
        #expect(h.relay.statistics.bytesRelayed == 0)
        let taken6 = h.take("alice")
        #expect(!taken6.contains { if case .dataSessionIncoming = $0 { true } else { false } })
        // It still receives.
        #expect(h.clients["alice"]!.machine.makeOutbound(key, type: .reliableMessage, now: h.now) == .none)
        h.send("alice", key, "hello viewer")
        h.acceptAll("viewer")
        h.send("alice", key, "second")
        #expect(h.messages("viewer", key).map(\.1) == ["hello viewer", "second"])
    }

    @Test func subgroupOutsideTheTokenIsRefused() {
        var h = room()
        h.join("guest", token: RoomHarness.token(peer: "guest", subgroups: ["lobby"]))
        h.clients["guest"]!.machine.subscribe("backstage", dataSession: true)
        h.clients["guest"]!.machine.subscribe("lobby", dataSession: true)
        h.pump()
        let events = h.take("guest")
        #expect(events.contains(.subscribeRefused("backstage", .subgroupNotAllowed)))
        #expect(events.contains(.subscribed("lobby", dataSession: true)))
        #expect(h.relay.statistics.refusals(.subgroupNotAllowed) == 1)
    }

    @Test func destinationOutsideTheRoomIsRefused() {
        var h = room()
        h.inject("alice", RelayEnvelope.wrap(.routed, member: 999, dataFrame(stream: 100, subgroupID: 0, text: "nobody")))
        #expect(h.relay.statistics.refusals(.unknownDestination) == 1)
        #expect(h.relay.statistics.bytesRelayed == 0)
    }

    @Test func garbageIsCountedNotRelayed() {
        var h = room()
        for bytes: [UInt8] in [[], [0xFF], [0x12, 0, 0], [0x12, 0, 0, 0, 0x10], [0x14, 99, 0, 0], [0x14, 1, 0, 5, 1]] {
            h.inject("alice", bytes)
        }
        #expect(h.relay.statistics.refusals(.malformed) == 6)
        #expect(h.relay.statistics.bytesRelayed == 0)
    }
}

/// A one-fragment data frame.
func dataFrame(stream: StreamID, subgroupID: UInt16, text: String, type: SessionType = .reliableMessage, messageID: UInt32 = 0) -> [UInt8] {
    var batch = DatagramBatch()
    var fragmenter = Fragmenter(streamID: stream, sessionType: type, subgroupID: subgroupID, messageID: messageID, totalLength: text.utf8.count, fragmentSize: 1_000, timestamp: 0)
    Array(text.utf8).withUnsafeBytes { fragmenter.emitAll(of: $0, into: &batch) }
    return batch[0]
}

extension RoomHarness {
    /// The relay's ID for a subgroup, as a subscriber learned it.
    func subgroupID(_ name: SubgroupName) -> UInt16 {
        for client in clients.values {
            if let id = client.machine.subgroupWireID(name) { return id }
        }
        return 0
    }
}

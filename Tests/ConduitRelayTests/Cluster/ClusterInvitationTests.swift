import ConduitCore
import ConduitRooms
import ConduitRelayCore
import Testing

/// Invitations across relays on two sans-IO relay machines, on virtual time. alice waits in
/// lobby-a on relay 0, bob in lobby-b on relay 1: no room in common, so only the node stream
/// (online status, invitations) joins them. The events and refusal codes are those of one relay
/// (RelayInvitationTests); relay deaths end invitations with the existing causes; what the cluster
/// loses is resent, or counted and reported.
@Suite struct ClusterInvitationTests {
    let ring = Array("room-7".utf8)

    func lobbies(extra: [(String, Int)] = []) -> ClusterHarness {
        var h = ClusterHarness()
        h.join("alice", at: 0, room: "lobby-a")
        h.join("bob", at: 1, room: "lobby-b")
        for (name, relay) in extra { h.join(name, at: relay, room: relay == 0 ? "lobby-a" : "lobby-b") }
        h.advance(by: .milliseconds(100))
        for relay in 0...1 { for name in h.relays[relay].clients.keys { _ = h.relays[relay].take(name) } }
        return h
    }

    /// alice invites `invitees` from relay 0 and the ring crosses; the invitation's ID.
    func invite(_ h: inout ClusterHarness, _ invitees: [PeerID] = ["bob"], timeout: UInt32 = 0) throws -> InvitationID {
        let id = try h.relays[0].aliceInvites(invitees, timeout: timeout)
        h.carry()
        return id
    }

    func newInvitation(_ id: InvitationID, _ invitees: [PeerID] = ["bob"], timeout: UInt32 = 0) -> InvitationMessage {
        .event(.newInvitation(NewInvitation(id: id, inviter: "alice", groupID: nil, invitees: invitees, data: ring, timeoutSeconds: timeout)))
    }

    @Test func aRingCrossesRelaysAndTheAcceptComesBackWithTheInviteesTag() throws {
        var h = lobbies()
        #expect(h.relays[0].relay.invitations.isOnline("bob"))
        #expect(!h.relays[0].relay.invitations.isOnlineHere("bob"))
        let id = try invite(&h, timeout: 30)
        #expect(try h.relays[1].invitationMessages("bob") == [newInvitation(id, timeout: 30)])

        try h.relays[1].request("bob", .accept(tag: 5, id, data: Array("ok".utf8)))
        #expect(try h.relays[1].invitationMessages("bob").isEmpty, "the answer waits for the inviter's relay")
        h.carry()
        #expect(try h.relays[1].invitationMessages("bob") == [.done(tag: 5, id)])
        #expect(try h.relays[0].invitationMessages("alice") == [.event(.inviteeAccepted(id, invitee: "bob", data: Array("ok".utf8)))])
        #expect(h.relays[0].relay.invitations.book.openCount == 0)
        #expect(h.relays[0].relay.invitations.book.invitation(id)?.states == [.accepted])
        // The same answer again is idempotent at the home, as on one relay.
        try h.relays[1].request("bob", .accept(tag: 6, id, data: []))
        h.carry()
        #expect(try h.relays[1].invitationMessages("bob") == [.done(tag: 6, id)])
        #expect(try h.relays[0].invitationMessages("alice").isEmpty)
        #expect(h.relays[1].relay.statistics.cluster.invitationRequestsForwarded == 2)
        #expect(h.relays[0].relay.statistics.cluster.invitationRequestsServed == 2)
        for relay in 0...1 { #expect(h.relays[relay].relay.statistics.cluster.nodeMessagesLost == 0) }
    }

    @Test func rejectAndCancelCrossWithTheEventsAndCodesOfOneRelay() throws {
        var h = lobbies()
        let busy = try invite(&h)
        _ = try h.relays[1].invitationMessages("bob")
        try h.relays[1].request("bob", .reject(tag: 2, busy, data: Array("busy".utf8)))
        h.carry()
        #expect(try h.relays[1].invitationMessages("bob") == [.done(tag: 2, busy)])
        #expect(try h.relays[0].invitationMessages("alice") == [.event(.inviteeRejected(busy, invitee: "bob", data: Array("busy".utf8)))])
        try h.relays[1].request("bob", .accept(tag: 3, busy, data: []))
        h.carry()
        guard case .refused(3, busy, let error)? = try h.relays[1].invitationMessages("bob").first else {
            Issue.record("bob's change of mind was not refused")
            return
        }
        #expect(error.code == .alreadyAnswered)

        let cancelled = try invite(&h)
        _ = try h.relays[1].invitationMessages("bob")
        try h.relays[0].request("alice", .cancel(tag: 4, cancelled, data: Array("sorry".utf8)))
        h.carry()
        #expect(try h.relays[0].invitationMessages("alice") == [.done(tag: 4, cancelled)])
        #expect(try h.relays[1].invitationMessages("bob") == [.event(.invitationCancelled(cancelled, inviter: "alice", data: Array("sorry".utf8), reason: .cancelledByInviter))])
        try h.relays[1].request("bob", .accept(tag: 5, cancelled, data: []))
        h.carry()
        guard case .refused(5, cancelled, let late)? = try h.relays[1].invitationMessages("bob").first else {
            Issue.record("bob's late answer was not refused")
            return
        }
        #expect(late.code == .invitationEnded)
    }

    @Test func onlineStatusIsClusterWide() throws {
        var h = lobbies()
        try h.relays[0].request("alice", .invite(tag: 1, InvitationRequest(invitees: ["bob", "dave"], data: ring, timeoutSeconds: 0, onlineUserOnly: true)))
        guard case .invited(1, let receipt)? = try h.relays[0].invitationMessages("alice").first else {
            Issue.record("alice got no invited reply")
            return
        }
        #expect(receipt.skippedOffline == ["dave"], "bob is online at relay 1; dave nowhere")
        try h.relays[0].request("alice", .invite(tag: 2, InvitationRequest(invitees: ["dave"], data: ring, timeoutSeconds: 0, onlineUserOnly: true)))
        guard case .refused(2, nil, let error)? = try h.relays[0].invitationMessages("alice").first else {
            Issue.record("an invitation of nobody online was not refused")
            return
        }
        #expect(error.code == .inviteesOffline)
        // dave comes online at relay 1: relay 0 hears of it.
        h.join("dave", at: 1, room: "lobby-b")
        #expect(h.relays[0].relay.invitations.isOnline("dave"))
        #expect(h.relays[0].relay.invitations.remoteOnlinePeerCount == 2)
    }

    @Test func anOutsiderElsewhereGetsUnknownInvitationAsOnOneRelay() throws {
        var h = lobbies(extra: [("carol", 1)])
        let id = try invite(&h)
        // Relay 1 knows the invitation (bob's ring): carol's answer goes to its home, which
        // does not count her a party.
        try h.relays[1].request("carol", .accept(tag: 7, id, data: []))
        h.carry()
        guard case .refused(7, id, let error)? = try h.relays[1].invitationMessages("carol").first else {
            Issue.record("carol's answer was not refused")
            return
        }
        #expect(error.code == .unknownInvitation)
        // An ID no relay knows is refused at once.
        try h.relays[1].request("carol", .accept(tag: 8, InvitationID(rawValue: 12_345)!, data: []))
        guard case .refused(8, _, let unknown)? = try h.relays[1].invitationMessages("carol").first else {
            Issue.record("an unknown ID was not refused at once")
            return
        }
        #expect(unknown.code == .unknownInvitation)
    }

    @Test func theDeadlineAtTheHomeReachesTheInviteeElsewhere() throws {
        var h = lobbies()
        let id = try invite(&h, timeout: 5)
        _ = try h.relays[1].invitationMessages("bob")
        h.advance(by: .seconds(5))
        let timeout = InvitationMessage.event(.invitationTimeout(id, invitees: ["bob"], cause: .deadline))
        #expect(try h.relays[1].invitationMessages("bob") == [timeout])
        #expect(try h.relays[0].invitationMessages("alice") == [timeout])
    }

    @Test func theInviteeLeavingItsRelayTimesOutAsInviteeLeft() throws {
        var h = lobbies()
        let id = try invite(&h)
        h.relays[1].clients["bob"]!.machine.leave()
        h.relays[1].pump()
        h.carry()
        #expect(try h.relays[0].invitationMessages("alice") == [.event(.invitationTimeout(id, invitees: ["bob"], cause: .inviteeLeft))])
        #expect(!h.relays[0].relay.invitations.isOnline("bob"))
    }

    @Test func theInviteesRelayDyingEndsItsPartAsInviteeLeft() throws {
        var h = lobbies()
        let id = try invite(&h)
        h.deadRelays = [1]
        h.advance(by: .seconds(3))
        #expect(try h.relays[0].invitationMessages("alice").isEmpty, "relay 1 is not yet taken for dead")
        h.advance(by: .seconds(2))
        #expect(try h.relays[0].invitationMessages("alice") == [.event(.invitationTimeout(id, invitees: ["bob"], cause: .inviteeLeft))])
        #expect(h.relays[0].relay.statistics.cluster.nodesTimedOut == 1)
        #expect(!h.relays[0].relay.invitations.isOnline("bob"))
    }

    @Test func theHomeRelayDyingCancelsForTheInviteesElsewhereAsInviterLeft() throws {
        var h = lobbies()
        let id = try invite(&h)
        _ = try h.relays[1].invitationMessages("bob")
        h.deadRelays = [0]
        h.advance(by: .seconds(5))
        #expect(try h.relays[1].invitationMessages("bob") == [.event(.invitationCancelled(id, inviter: "alice", data: [], reason: .inviterLeft))])
        #expect(h.relays[1].relay.statistics.cluster.invitationsLostWithRelay == 1)
        // An answer now is refused at once: the invitation ended with its relay.
        try h.relays[1].request("bob", .accept(tag: 9, id, data: []))
        guard case .refused(9, id, let error)? = try h.relays[1].invitationMessages("bob").first else {
            Issue.record("an answer to a dead relay's invitation was not refused")
            return
        }
        #expect(error.code == .invitationEnded)
    }

    @Test func aLostRingIsSentAgainAndArrivesOnce() throws {
        var h = lobbies()
        // The next node message is the ring for relay 1: lost on the way.
        h.loseNode = [h.publishedNode + 1]
        let id = try invite(&h)
        #expect(try h.relays[1].invitationMessages("bob").isEmpty)
        // Relay 0's next heartbeat shows relay 1 the gap; it asks, relay 0 sends the ring again.
        h.advance(by: .seconds(1))
        #expect(try h.relays[1].invitationMessages("bob") == [newInvitation(id)])
        let statistics = h.relays[1].relay.statistics.cluster
        #expect(statistics.nodeGaps == 1)
        #expect(statistics.nodeMessagesRepaired == 1)
        #expect(statistics.nodeMessagesLost == 0)
        #expect(h.relays[0].relay.statistics.cluster.nodeMessagesResent == 1)
        h.advance(by: .seconds(2))
        #expect(try h.relays[1].invitationMessages("bob").isEmpty, "nothing twice")
    }

    @Test func aLostReplyIsSentAgainBeforeTheRequestTimesOut() throws {
        var h = lobbies()
        let id = try invite(&h)
        _ = try h.relays[1].invitationMessages("bob")
        // Node messages from here: relay 1's request, then relay 0's reply (lost) and its
        // invitationsEnded, which shows relay 1 the gap: it asks, and gets the reply again.
        h.loseNode = [h.publishedNode + 2]
        try h.relays[1].request("bob", .accept(tag: 5, id, data: []))
        h.carry()
        #expect(try h.relays[1].invitationMessages("bob") == [.done(tag: 5, id)])
        let statistics = h.relays[1].relay.statistics.cluster
        #expect(statistics.nodeGaps == 1)
        #expect(statistics.nodeMessagesRepaired == 1)
        #expect(statistics.nodeMessagesLost == 0)
        #expect(h.relays[1].relay.invitations.pendingRemoteRequests == 0)
        h.advance(by: .seconds(6))
        #expect(try h.relays[1].invitationMessages("bob").isEmpty, "no second reply, no timeout")
    }

    @Test func aLossBeyondRepairIsCountedAndTheAnswerRefusedRelayUnavailable() throws {
        var h = lobbies()
        let id = try invite(&h)
        _ = try h.relays[1].invitationMessages("bob")
        // Every reply of relay 0 is lost, sent again or not.
        h.loseNodeWhere = { if case .invitationReply = $0.body, $0.node == RelayNodeID(0xA) { true } else { false } }
        try h.relays[1].request("bob", .accept(tag: 5, id, data: []))
        h.carry()
        #expect(try h.relays[0].invitationMessages("alice") == [.event(.inviteeAccepted(id, invitee: "bob", data: []))])
        h.advance(by: .seconds(6))
        #expect(try h.relays[1].invitationMessages("bob") == [
            .refused(tag: 5, id, InvitationError(.relayUnavailable, "the invitation's relay did not answer in time"))
        ])
        let statistics = h.relays[1].relay.statistics.cluster
        #expect(statistics.nodeMessagesLost >= 1)
        #expect(statistics.invitationRequestsUnanswered == 1)
        #expect(h.relays[1].relay.invitations.pendingRemoteRequests == 0)
    }

    @Test func anExtensionReachesAMemberOnTheOtherRelayStampedWithItsSender() {
        var h = ClusterHarness()
        h.join("alice", at: 0)
        h.join("bob", at: 1)
        h.advance(by: .seconds(1))
        _ = h.relays[1].take("bob")
        let sent = h.relays[0].clients["alice"]!.machine.sendExtension(2, to: "bob", body: Array("join me".utf8))
        #expect(sent)
        h.relays[0].pump()
        h.carry()
        let bobGot = h.relays[1].take("bob")
        #expect(bobGot == [.extensionReceived(id: 2, from: "alice", body: Array("join me".utf8))])
        #expect(h.relays[0].relay.statistics.cluster.extensionsForwarded == 1)
        #expect(h.relays[1].relay.statistics.cluster.extensionsReceived == 1)
        #expect(h.relays[0].relay.statistics.refusals.isEmpty)
    }
}

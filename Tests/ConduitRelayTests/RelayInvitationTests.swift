import ConduitCore
import ConduitRooms
import ConduitRelayCore
import Testing

/// Invitation requests and events as the relay machine sees them (sans-IO, virtual time): what
/// the relay refuses, with which code, and who hears what. Requests are injected as raw
/// extension-1 frames, so nothing on the client side can filter them first.
extension RoomHarness {
    mutating func request(_ name: String, _ message: InvitationMessage) throws {
        inject(name, RoomControlFrame.extension(id: RelayInvitations.extensionID, member: 0, body: try message.encoded()).encoded)
    }

    mutating func request(_ name: String, raw body: [UInt8]) {
        inject(name, RoomControlFrame.extension(id: RelayInvitations.extensionID, member: 0, body: body).encoded)
    }

    /// The invitation messages `name` received from the relay since last asked.
    mutating func invitationMessages(_ name: String) throws -> [InvitationMessage] {
        try take(name).compactMap { event -> InvitationMessage? in
            guard case .relayExtensionReceived(RelayInvitations.extensionID, let body) = event else { return nil }
            return try InvitationMessage.parse(body)
        }
    }

    /// Alice invites `invitees` (tag 1) and returns the invitation's ID.
    mutating func aliceInvites(_ invitees: [PeerID], timeout: UInt32 = 0) throws -> InvitationID {
        try request("alice", .invite(tag: 1, InvitationRequest(invitees: invitees, data: Array("room-7".utf8), timeoutSeconds: timeout)))
        guard case .invited(1, let receipt)? = try invitationMessages("alice").first else {
            Issue.record("alice got no invited reply")
            return InvitationID(rawValue: 1)!
        }
        return receipt.id
    }
}

@Suite("Invitations hosted by the relay machine")
struct RelayInvitationTests {
    static func harness(_ names: [String]) -> RoomHarness {
        var harness = RoomHarness()
        for name in names { harness.join(name) }
        for name in names { _ = harness.take(name) }
        return harness
    }

    @Test("extension 1 is the relay's: the inviter is who its token proved, the invitee hears newInvitation, nothing is forwarded")
    func inviteIsIntercepted() throws {
        var h = Self.harness(["alice", "bob"])
        let id = try h.aliceInvites(["bob"], timeout: 30)
        let bobGot = try h.invitationMessages("bob")
        #expect(bobGot == [.event(.newInvitation(NewInvitation(id: id, inviter: "alice", groupID: nil, invitees: ["bob"], data: Array("room-7".utf8), timeoutSeconds: 30)))])
        #expect(h.relay.statistics.extensionsRelayed == 0)
        // A client cannot address extension 1 to a member: it is the relay's.
        #expect(h.clients["alice"]!.machine.sendExtension(RelayInvitations.extensionID, to: "bob", body: [1]) == false)
        #expect(h.relay.invitations.book.openCount == 1)
        #expect(h.relay.invitations.onlinePeerCount == 2)

        try h.request("bob", .accept(tag: 5, id, data: Array("ok".utf8)))
        #expect(try h.invitationMessages("bob") == [.done(tag: 5, id)])
        #expect(try h.invitationMessages("alice") == [.event(.inviteeAccepted(id, invitee: "bob", data: Array("ok".utf8)))])
        #expect(h.relay.invitations.book.openCount == 0)
    }

    @Test("an outsider's answer and the inviter's own answer are refused with their codes; the invitation is untouched")
    func unauthorizedAnswers() throws {
        var h = Self.harness(["alice", "bob", "eve"])
        let id = try h.aliceInvites(["bob"])
        _ = try h.invitationMessages("bob")
        try h.request("eve", .accept(tag: 9, id, data: []))
        guard case .refused(9, id, let error)? = try h.invitationMessages("eve").first else { Issue.record("eve was not refused"); return }
        #expect(error.code == .unknownInvitation)
        try h.request("eve", .cancel(tag: 10, id, data: []))
        guard case .refused(10, id, let cancelError)? = try h.invitationMessages("eve").first else { Issue.record("eve's cancel was not refused"); return }
        #expect(cancelError.code == .unknownInvitation)
        try h.request("alice", .accept(tag: 2, id, data: []))
        guard case .refused(2, id, let own)? = try h.invitationMessages("alice").first else { Issue.record("alice was not refused"); return }
        #expect(own.code == .notInvitee)
        try h.request("bob", .cancel(tag: 3, id, data: []))
        guard case .refused(3, id, let notInviter)? = try h.invitationMessages("bob").first else { Issue.record("bob was not refused"); return }
        #expect(notInviter.code == .notInviter)
        #expect(h.relay.invitations.book.invitation(id)?.state(of: "bob") == .pending)
        #expect(try h.invitationMessages("alice").isEmpty)
    }

    @Test("late answers: after the deadline and after a cancel, the relay refuses with invitationEnded")
    func lateAnswers() throws {
        var h = Self.harness(["alice", "bob", "carol"])
        let timed = try h.aliceInvites(["bob"], timeout: 2)
        _ = try h.invitationMessages("bob")
        h.advance(by: .seconds(2), step: .milliseconds(500))
        #expect(try h.invitationMessages("alice") == [.event(.invitationTimeout(timed, invitees: ["bob"], cause: .deadline))])
        #expect(try h.invitationMessages("bob") == [.event(.invitationTimeout(timed, invitees: ["bob"], cause: .deadline))])
        try h.request("bob", .accept(tag: 1, timed, data: []))
        guard case .refused(1, timed, let late)? = try h.invitationMessages("bob").first else { Issue.record("late accept not refused"); return }
        #expect(late.code == .invitationEnded)

        try h.request("alice", .invite(tag: 2, InvitationRequest(invitees: ["carol"])))
        guard case .invited(2, let receipt)? = try h.invitationMessages("alice").first else { Issue.record("no invited"); return }
        try h.request("alice", .cancel(tag: 3, receipt.id, data: Array("never mind".utf8)))
        #expect(try h.invitationMessages("alice") == [.done(tag: 3, receipt.id)])
        let carolGot = try h.invitationMessages("carol")
        #expect(carolGot.last == .event(.invitationCancelled(receipt.id, inviter: "alice", data: Array("never mind".utf8), reason: .cancelledByInviter)))
        try h.request("carol", .reject(tag: 4, receipt.id, data: []))
        guard case .refused(4, receipt.id, let afterCancel)? = try h.invitationMessages("carol").first else { Issue.record("answer after cancel not refused"); return }
        #expect(afterCancel.code == .invitationEnded)
        #expect(h.relay.invitations.book.openCount == 0)
    }

    @Test("bad bodies are refused as malformedRequest and counted; an oversized invitation is refused before the book opens it")
    func malformedAndOversized() throws {
        var h = Self.harness(["alice", "bob"])
        h.request("alice", raw: [1, 2, 3])
        h.request("alice", raw: [])
        try h.request("alice", .event(.invitationTimeout(InvitationID(rawValue: 5)!, invitees: ["bob"], cause: .deadline)))
        try h.request("alice", .done(tag: 8, InvitationID(rawValue: 5)!))
        let replies = try h.invitationMessages("alice")
        #expect(replies.count == 4)
        for (reply, tag) in zip(replies, [UInt32(0), 0, 0, 8]) {
            guard case .refused(tag, nil, let error) = reply else { Issue.record("expected refused(\(tag)), got \(reply)"); continue }
            #expect(error.code == .malformedRequest)
        }
        #expect(h.relay.invitations.malformedRequests == 4)

        // An invite of 8,190 bytes fits a frame; its newInvitation (which adds "alice") would not.
        var many: [PeerID] = []
        var base = 0
        repeat {
            many.append(PeerID(stringLiteral: String(repeating: "p", count: 100) + String(many.count)))
            base = try InvitationMessage.invite(tag: 9, InvitationRequest(invitees: many)).encoded().count
        } while RoomControlFrame.maxExtensionBytes - 3 - base > 128
        many.append(PeerID(stringLiteral: String(repeating: "q", count: RoomControlFrame.maxExtensionBytes - 3 - base)))
        let invite = InvitationMessage.invite(tag: 9, InvitationRequest(invitees: many))
        #expect(try invite.encoded().count == RoomControlFrame.maxExtensionBytes - 2)
        try h.request("alice", invite)
        guard case .refused(9, nil, let error)? = try h.invitationMessages("alice").first else { Issue.record("oversized invite not refused"); return }
        #expect(error.code == .customDataTooLarge)
        #expect(h.relay.invitations.book.openCount == 0)
        #expect(try h.invitationMessages("bob").isEmpty)
    }

    @Test("leaving the relay: a callee that leaves times out with cause inviteeLeft; an inviter that leaves cancels with inviterLeft")
    func leavingTheRelay() throws {
        var h = Self.harness(["alice", "bob", "carol"])
        let id = try h.aliceInvites(["bob", "carol"])
        _ = try h.invitationMessages("bob")
        _ = try h.invitationMessages("carol")
        h.clients["bob"]!.machine.leave()
        h.pump()
        #expect(try h.invitationMessages("alice") == [.event(.invitationTimeout(id, invitees: ["bob"], cause: .inviteeLeft))])
        #expect(try h.invitationMessages("carol") == [.event(.invitationTimeout(id, invitees: ["bob"], cause: .inviteeLeft))])
        #expect(!h.relay.invitations.isOnline("bob"))
        h.clients["alice"]!.machine.leave()
        h.pump()
        #expect(try h.invitationMessages("carol") == [.event(.invitationCancelled(id, inviter: "alice", data: [], reason: .inviterLeft))])
        #expect(h.relay.invitations.book.openCount == 0)
        #expect(h.relay.invitations.book.trackedPeerCount == 0)
        #expect(h.relay.invitations.onlinePeerCount == 1)
    }

    @Test("onlineUserOnly: a peer with no joined connection is left out and listed in the receipt")
    func onlineOnly() throws {
        var h = Self.harness(["alice", "bob"])
        try h.request("alice", .invite(tag: 1, InvitationRequest(invitees: ["bob", "zoe"], onlineUserOnly: true)))
        guard case .invited(1, let receipt)? = try h.invitationMessages("alice").first else { Issue.record("no invited"); return }
        #expect(receipt.skippedOffline == ["zoe"])
        try h.request("alice", .invite(tag: 2, InvitationRequest(invitees: ["zoe"], onlineUserOnly: true)))
        guard case .refused(2, nil, let error)? = try h.invitationMessages("alice").first else { Issue.record("not refused"); return }
        #expect(error.code == .inviteesOffline)
        // Without onlineUserOnly, an offline invitee stays invited; its event is counted as undeliverable.
        try h.request("alice", .invite(tag: 3, InvitationRequest(invitees: ["zoe"], timeoutSeconds: 5)))
        #expect(h.relay.invitations.undeliverableEvents == 1)
    }
}

extension RelayInvitationTests {
    @Test("a peer in two rooms: events reach both of its connections; it leaves the book only with its last one")
    func peerWithTwoConnections() throws {
        var h = Self.harness(["alice", "bob"])
        // bob also joins room "call" on a second connection (client "bob@call", peer bob).
        let second = RelayConnectionID(h.nextConnection)
        h.nextConnection += 1
        _ = h.relay.connectionOpened(second, now: h.now)
        let token = RoomHarness.token(room: "call", peer: "bob")
        h.clients["bob@call"] = RoomHarness.Client(
            connection: second,
            machine: ConferenceMachine(room: "call", localPeer: "bob", token: Array(token.utf8), configuration: .init(session: .init(rateLimit: .unlimited)), now: h.now))
        h.pump()
        _ = h.take("bob@call")
        #expect(h.relay.invitations.onlinePeerCount == 2)

        let id = try h.aliceInvites(["bob"])
        let ring = InvitationMessage.event(.newInvitation(NewInvitation(id: id, inviter: "alice", groupID: nil, invitees: ["bob"], data: Array("room-7".utf8), timeoutSeconds: 0)))
        #expect(try h.invitationMessages("bob") == [ring])
        #expect(try h.invitationMessages("bob@call") == [ring])

        // The lobby connection goes; bob is still online through the call room.
        h.clients["bob"]!.machine.leave()
        h.pump()
        #expect(h.relay.invitations.isOnline("bob"))
        #expect(try h.invitationMessages("alice").isEmpty)
        try h.request("bob@call", .accept(tag: 1, id, data: []))
        #expect(try h.invitationMessages("bob@call") == [.done(tag: 1, id)])
        #expect(try h.invitationMessages("alice") == [.event(.inviteeAccepted(id, invitee: "bob", data: []))])

        // With its last connection gone, bob's own open invitation is cancelled.
        try h.request("bob@call", .invite(tag: 2, InvitationRequest(invitees: ["alice"])))
        guard case .invited(2, let receipt)? = try h.invitationMessages("bob@call").first else { Issue.record("no invited"); return }
        _ = try h.invitationMessages("alice")
        h.clients["bob@call"]!.machine.leave()
        h.pump()
        #expect(!h.relay.invitations.isOnline("bob"))
        #expect(try h.invitationMessages("alice") == [.event(.invitationCancelled(receipt.id, inviter: "bob", data: [], reason: .inviterLeft))])
        #expect(h.relay.invitations.book.openCount == 0)
    }
}

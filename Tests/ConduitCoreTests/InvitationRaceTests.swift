import ConduitCore
import ConduitRooms
import ConduitRelayCore
import Testing

// Races (two requests crossing at the relay, in both orders), peers leaving mid-invitation,
// unauthorized answers and idempotence, each with the exact events every party sees.

@Suite("Invitations: races and peers leaving")
struct InvitationRaceTests {
    typealias I = Inv

    func call(_ book: inout InvitationBook, timeout: UInt32 = 30) throws -> InvitationID {
        let id = try book.invite(from: I.alice, InvitationRequest(invitees: [I.bob], timeoutSeconds: timeout), now: I.t(0)).id
        _ = book.takeDeliveries()
        return id
    }

    @Test("accept, then a crossing cancel: the accept wins, the cancel is refused as ended, nobody hears of it")
    func acceptThenCancel() throws {
        var book = I.book()
        let id = try call(&book)
        try book.accept(id, by: I.bob, now: I.t(1))
        #expect(refusal { try book.cancel(id, by: I.alice, now: I.t(1)) } == .invitationEnded)
        #expect(book.takeDeliveries() == [I.to(I.alice, .inviteeAccepted(id, invitee: I.bob, data: []))])
        #expect(book.invitation(id)?.state(of: I.bob) == .accepted)
    }

    @Test("cancel, then a crossing accept: the cancel wins, the accept is refused as ended")
    func cancelThenAccept() throws {
        var book = I.book()
        let id = try call(&book)
        try book.cancel(id, by: I.alice, now: I.t(1))
        #expect(refusal { try book.accept(id, by: I.bob, now: I.t(1)) } == .invitationEnded)
        #expect(book.takeDeliveries() == [I.to(I.bob, .invitationCancelled(id, inviter: I.alice, data: [], reason: .cancelledByInviter))])
        #expect(book.invitation(id)?.state(of: I.bob) == .cancelled)
    }

    @Test("group: an accept crossing a cancel still counts, and the accepter is told of the cancel")
    func groupAcceptThenCancel() throws {
        var book = I.book()
        let id = try book.invite(from: I.alice, InvitationRequest(invitees: [I.bob, I.carol]), now: I.t(0)).id
        _ = book.takeDeliveries()
        try book.accept(id, by: I.bob, now: I.t(1))
        try book.cancel(id, by: I.alice, now: I.t(1))
        #expect(
            book.takeDeliveries()
                == I.each([I.alice, I.carol], .inviteeAccepted(id, invitee: I.bob, data: []))
                + I.each([I.bob, I.carol], .invitationCancelled(id, inviter: I.alice, data: [], reason: .cancelledByInviter)))
        #expect(book.invitation(id)?.states == [.accepted, .cancelled])
    }

    @Test("reject just before the deadline: in time, no timeout follows")
    func rejectJustBeforeDeadline() throws {
        var book = I.book()
        let id = try call(&book)
        try book.reject(id, by: I.bob, now: I.t(29, plus: 999_999_999))
        book.handleTimeouts(now: I.t(30))
        #expect(book.takeDeliveries() == [I.to(I.alice, .inviteeRejected(id, invitee: I.bob, data: []))])
    }

    @Test("reject at exactly the deadline, before handleTimeouts ran: the timeout is told first, the reject is refused")
    func rejectAtDeadline() throws {
        var book = I.book()
        let id = try call(&book)
        #expect(refusal { try book.reject(id, by: I.bob, now: I.t(30)) } == .invitationEnded)
        #expect(book.takeDeliveries() == I.each([I.alice, I.bob], .invitationTimeout(id, invitees: [I.bob], cause: .deadline)))
        book.handleTimeouts(now: I.t(30))
        #expect(book.takeDeliveries().isEmpty)  // told once, not twice
        #expect(book.invitation(id)?.state(of: I.bob) == .timedOut)
    }

    @Test("reject just after the deadline, handleTimeouts having run: refused, nothing new told")
    func rejectAfterDeadline() throws {
        var book = I.book()
        let id = try call(&book)
        book.handleTimeouts(now: I.t(30))
        _ = book.takeDeliveries()
        #expect(refusal { try book.reject(id, by: I.bob, now: I.t(30, plus: 1)) } == .invitationEnded)
        #expect(refusal { try book.cancel(id, by: I.alice, now: I.t(30, plus: 1)) } == .invitationEnded)
        #expect(book.takeDeliveries().isEmpty)
    }

    @Test("one-to-one: the callee leaves the relay; the caller gets a timeout with cause inviteeLeft")
    func calleeLeaves() throws {
        var book = I.book()
        let id = try call(&book, timeout: 0)
        book.peerLeft(I.bob, now: I.t(5))
        #expect(book.takeDeliveries() == [I.to(I.alice, .invitationTimeout(id, invitees: [I.bob], cause: .inviteeLeft))])
        #expect(book.invitation(id)?.state(of: I.bob) == .left)
        #expect(book.openCount == 0)
        #expect(book.trackedPeerCount == 0)
        // Back on the relay, it cannot answer any more.
        #expect(refusal { try book.accept(id, by: I.bob, now: I.t(6)) } == .invitationEnded)
    }

    @Test("group: an invitee leaves; the others are told, and it is told nothing more")
    func inviteeLeavesGroup() throws {
        var book = I.book()
        let id = try book.invite(from: I.alice, InvitationRequest(invitees: [I.bob, I.carol, I.dave], timeoutSeconds: 10), now: I.t(0)).id
        _ = book.takeDeliveries()
        try book.accept(id, by: I.bob, now: I.t(1))
        _ = book.takeDeliveries()
        book.peerLeft(I.carol, now: I.t(2))
        #expect(book.takeDeliveries() == I.each([I.alice, I.bob, I.dave], .invitationTimeout(id, invitees: [I.carol], cause: .inviteeLeft)))
        // Bob leaves after answering: no event, but he is no longer told anything.
        book.peerLeft(I.bob, now: I.t(3))
        #expect(book.takeDeliveries().isEmpty)
        try book.reject(id, by: I.dave, now: I.t(4))
        #expect(book.takeDeliveries() == [I.to(I.alice, .inviteeRejected(id, invitee: I.dave, data: []))])
        #expect(book.invitation(id)?.states == [.accepted, .left, .rejected])
        #expect(book.openCount == 0)
        #expect(book.trackedPeerCount == 0)
    }

    @Test("the inviter leaves: every invitee gets invitationCancelled (inviterLeft, no data); answers are then refused")
    func inviterLeaves() throws {
        var book = I.book()
        let id = try book.invite(from: I.alice, InvitationRequest(invitees: [I.bob, I.carol], timeoutSeconds: 10), now: I.t(0)).id
        let other = try book.invite(from: I.carol, InvitationRequest(invitees: [I.alice]), now: I.t(0)).id
        _ = book.takeDeliveries()
        book.peerLeft(I.alice, now: I.t(1))
        // Her own invitation is cancelled; in Carol's invitation she was the only invitee, so it ends as a timeout.
        #expect(
            book.takeDeliveries()
                == I.each([I.bob, I.carol], .invitationCancelled(id, inviter: I.alice, data: [], reason: .inviterLeft))
                + [I.to(I.carol, .invitationTimeout(other, invitees: [I.alice], cause: .inviteeLeft))])
        #expect(book.invitation(id)?.end == .cancelled(.inviterLeft))
        #expect(refusal { try book.accept(id, by: I.bob, now: I.t(2)) } == .invitationEnded)
        #expect(book.openCount == 0)
        #expect(book.trackedPeerCount == 0)
        book.handleTimeouts(now: I.t(10))
        #expect(book.takeDeliveries().isEmpty)
    }

    @Test("a peer leaving at the deadline: the deadline is settled first, so it times out as a deadline")
    func leaveAtDeadline() throws {
        var book = I.book()
        let id = try call(&book, timeout: 5)
        book.peerLeft(I.bob, now: I.t(5))
        #expect(book.takeDeliveries() == I.each([I.alice, I.bob], .invitationTimeout(id, invitees: [I.bob], cause: .deadline)))
    }
}

@Suite("Invitations: authorization and idempotence")
struct InvitationAuthorizationTests {
    typealias I = Inv

    @Test("a peer the invitation was not sent to cannot answer or cancel it, and cannot tell it from a wrong ID")
    func outsiders() throws {
        var book = I.book()
        let id = try book.invite(from: I.alice, InvitationRequest(invitees: [I.bob]), now: I.t(0)).id
        _ = book.takeDeliveries()
        #expect(refusal { try book.accept(id, by: I.eve, now: I.t(1)) } == .unknownInvitation)
        #expect(refusal { try book.reject(id, by: I.eve, now: I.t(1)) } == .unknownInvitation)
        #expect(refusal { try book.cancel(id, by: I.eve, now: I.t(1)) } == .unknownInvitation)
        let wrong = try #require(InvitationID(rawValue: id.rawValue ^ 1))
        #expect(refusal { try book.accept(wrong, by: I.bob, now: I.t(1)) } == .unknownInvitation)
        // Ended (a tombstone), still unknown to outsiders.
        try book.cancel(id, by: I.alice, now: I.t(2))
        #expect(refusal { try book.accept(id, by: I.eve, now: I.t(3)) } == .unknownInvitation)
        #expect(book.takeDeliveries() == [I.to(I.bob, .invitationCancelled(id, inviter: I.alice, data: [], reason: .cancelledByInviter))])
        #expect(book.invitation(id)?.state(of: I.bob) == .cancelled)
    }

    @Test("the inviter cannot answer, an invitee cannot cancel")
    func wrongRole() throws {
        var book = I.book()
        let id = try book.invite(from: I.alice, InvitationRequest(invitees: [I.bob]), now: I.t(0)).id
        _ = book.takeDeliveries()
        #expect(refusal { try book.accept(id, by: I.alice, now: I.t(1)) } == .notInvitee)
        #expect(refusal { try book.cancel(id, by: I.bob, now: I.t(1)) } == .notInviter)
        #expect(book.takeDeliveries().isEmpty)
        #expect(book.invitation(id)?.state(of: I.bob) == .pending)
    }

    @Test("the same answer again succeeds without a new event, open or ended; the other answer is refused")
    func idempotentAnswers() throws {
        var book = I.book()
        let id = try book.invite(from: I.alice, InvitationRequest(invitees: [I.bob, I.carol]), now: I.t(0)).id
        _ = book.takeDeliveries()
        try book.accept(id, by: I.bob, data: I.bytes("first"), now: I.t(1))
        try book.accept(id, by: I.bob, data: I.bytes("second"), now: I.t(2))
        #expect(refusal { try book.reject(id, by: I.bob, now: I.t(2)) } == .alreadyAnswered)
        #expect(book.takeDeliveries() == I.each([I.alice, I.carol], .inviteeAccepted(id, invitee: I.bob, data: I.bytes("first"))))
        try book.reject(id, by: I.carol, now: I.t(3))
        _ = book.takeDeliveries()
        // Ended now: retransmitted answers still succeed quietly; the other answer is refused.
        try book.accept(id, by: I.bob, now: I.t(4))
        try book.reject(id, by: I.carol, now: I.t(4))
        #expect(refusal { try book.accept(id, by: I.carol, now: I.t(4)) } == .alreadyAnswered)
        #expect(book.takeDeliveries().isEmpty)
    }

    @Test("cancel twice succeeds once with events; cancel of an invitation that settled is refused")
    func idempotentCancel() throws {
        var book = I.book()
        let id = try book.invite(from: I.alice, InvitationRequest(invitees: [I.bob]), now: I.t(0)).id
        try book.cancel(id, by: I.alice, now: I.t(1))
        _ = book.takeDeliveries()
        try book.cancel(id, by: I.alice, now: I.t(2))
        #expect(book.takeDeliveries().isEmpty)

        let settled = try book.invite(from: I.alice, InvitationRequest(invitees: [I.bob]), now: I.t(3)).id
        try book.reject(settled, by: I.bob, now: I.t(4))
        _ = book.takeDeliveries()
        #expect(refusal { try book.cancel(settled, by: I.alice, now: I.t(5)) } == .invitationEnded)
    }

    @Test("tombstones are forgotten after their lifetime or beyond their count; then answers get unknownInvitation")
    func tombstones() throws {
        var book = I.book {
            $0.tombstoneLifetime = .seconds(60)
            $0.maxTombstones = 2
        }
        var ids: [InvitationID] = []
        for n in 0..<3 {
            let id = try book.invite(from: I.alice, InvitationRequest(invitees: [I.bob]), now: I.t(UInt64(n))).id
            try book.accept(id, by: I.bob, now: I.t(UInt64(n)))
            ids.append(id)
        }
        #expect(book.tombstoneCount == 2)
        #expect(refusal { try book.accept(ids[0], by: I.bob, now: I.t(3)) } == .unknownInvitation)  // evicted by count
        #expect(refusal { try book.accept(ids[1], by: I.bob, now: I.t(3)) } == nil)  // remembered: idempotent
        #expect(book.nextTimeout == I.t(61))
        book.handleTimeouts(now: I.t(61))
        #expect(book.tombstoneCount == 1)
        book.handleTimeouts(now: I.t(62))
        #expect(book.tombstoneCount == 0)
        #expect(book.nextTimeout == nil)
        #expect(refusal { try book.reject(ids[2], by: I.bob, now: I.t(63)) } == .unknownInvitation)
    }

    @Test("invitations cancelled long before their deadline do not pile up in the deadline heap")
    func deadlineHeapCompaction() throws {
        var book = I.book()
        for n in 0..<5_000 {
            let id = try book.invite(from: I.alice, InvitationRequest(invitees: [I.bob], timeoutSeconds: 3_600), now: I.t(UInt64(n)))
                .id
            try book.cancel(id, by: I.alice, now: I.t(UInt64(n)))
        }
        #expect(book.openCount == 0)
        #expect(book.deadlineEntryCount <= 1_025)
    }
}

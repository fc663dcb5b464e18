import ConduitCore
import ConduitRooms
import ConduitRelayCore
import Testing

// Every transition of the invitation state machine, one at a time, with exactly the events each
// party sees (recipient, event, order).

@Suite("Invitations: transitions")
struct InvitationTransitionTests {
    typealias I = Inv

    @Test("invite one peer: the invitee gets newInvitation; nothing else happens")
    func inviteOne() throws {
        var book = I.book()
        let receipt = try book.invite(from: I.alice, InvitationRequest(invitees: [I.bob], data: I.bytes("room-1"), timeoutSeconds: 30), now: I.t(0))
        #expect(receipt.skippedOffline.isEmpty)
        let new = NewInvitation(id: receipt.id, inviter: I.alice, groupID: nil, invitees: [I.bob], data: I.bytes("room-1"), timeoutSeconds: 30)
        #expect(book.takeDeliveries() == [I.to(I.bob, .newInvitation(new))])
        #expect(book.takeDeliveries().isEmpty)
        #expect(book.openCount == 1)
        #expect(book.invitation(receipt.id)?.state(of: I.bob) == .pending)
        #expect(book.invitation(receipt.id)?.isOpen == true)
        #expect(book.nextTimeout == I.t(30))
    }

    @Test("accept: the inviter gets inviteeAccepted with the data; the one-to-one invitation ends")
    func accept() throws {
        var book = I.book()
        let id = try book.invite(from: I.alice, InvitationRequest(invitees: [I.bob]), now: I.t(0)).id
        _ = book.takeDeliveries()
        try book.accept(id, by: I.bob, data: I.bytes("ok"), now: I.t(1))
        #expect(book.takeDeliveries() == [I.to(I.alice, .inviteeAccepted(id, invitee: I.bob, data: I.bytes("ok")))])
        #expect(book.openCount == 0)
        #expect(book.invitation(id)?.end == .settled)
        #expect(book.invitation(id)?.state(of: I.bob) == .accepted)
        #expect(book.tombstoneCount == 1)
        #expect(book.trackedPeerCount == 0)
    }

    @Test("reject with data (\"busy\"): the inviter gets inviteeRejected; the invitation ends")
    func reject() throws {
        var book = I.book()
        let id = try book.invite(from: I.alice, InvitationRequest(invitees: [I.bob]), now: I.t(0)).id
        _ = book.takeDeliveries()
        try book.reject(id, by: I.bob, data: I.bytes("busy"), now: I.t(1))
        #expect(book.takeDeliveries() == [I.to(I.alice, .inviteeRejected(id, invitee: I.bob, data: I.bytes("busy")))])
        #expect(book.invitation(id)?.state(of: I.bob) == .rejected)
        #expect(book.invitation(id)?.end == .settled)
    }

    @Test("cancel: the invitee gets invitationCancelled with the inviter's data; pending becomes cancelled")
    func cancel() throws {
        var book = I.book()
        let id = try book.invite(from: I.alice, InvitationRequest(invitees: [I.bob]), now: I.t(0)).id
        _ = book.takeDeliveries()
        try book.cancel(id, by: I.alice, data: I.bytes("hung up"), now: I.t(1))
        #expect(
            book.takeDeliveries() == [
                I.to(I.bob, .invitationCancelled(id, inviter: I.alice, data: I.bytes("hung up"), reason: .cancelledByInviter))
            ])
        #expect(book.invitation(id)?.state(of: I.bob) == .cancelled)
        #expect(book.invitation(id)?.end == .cancelled(.cancelledByInviter))
        #expect(book.openCount == 0)
    }

    @Test("timeout: both caller and callee get invitationTimeout listing the callee, at the deadline and not before")
    func timeout() throws {
        var book = I.book()
        let id = try book.invite(from: I.alice, InvitationRequest(invitees: [I.bob], timeoutSeconds: 30), now: I.t(0)).id
        _ = book.takeDeliveries()
        book.handleTimeouts(now: I.t(29, plus: 999_999_999))
        #expect(book.takeDeliveries().isEmpty)
        #expect(book.openCount == 1)
        book.handleTimeouts(now: I.t(30))
        #expect(book.takeDeliveries() == I.each([I.alice, I.bob], .invitationTimeout(id, invitees: [I.bob], cause: .deadline)))
        #expect(book.invitation(id)?.state(of: I.bob) == .timedOut)
        #expect(book.invitation(id)?.end == .settled)
    }

    @Test("timeout 0: never times out, and no deadline is scheduled")
    func noTimeout() throws {
        var book = I.book()
        let id = try book.invite(from: I.alice, InvitationRequest(invitees: [I.bob], timeoutSeconds: 0), now: I.t(0)).id
        _ = book.takeDeliveries()
        #expect(book.nextTimeout == nil)
        book.handleTimeouts(now: I.t(1_000_000))
        #expect(book.takeDeliveries().isEmpty)
        try book.accept(id, by: I.bob, now: I.t(1_000_000))
        #expect(book.takeDeliveries() == [I.to(I.alice, .inviteeAccepted(id, invitee: I.bob, data: []))])
    }

    @Test("group: every answer goes to everyone else involved, in order; the flow ends when the last invitee settles")
    func group() throws {
        var book = I.book()
        let request = InvitationRequest(invitees: [I.bob, I.carol, I.dave], groupID: "class-1", data: I.bytes("go"), timeoutSeconds: 10)
        let id = try book.invite(from: I.alice, request, now: I.t(0)).id
        let new = NewInvitation(id: id, inviter: I.alice, groupID: "class-1", invitees: [I.bob, I.carol, I.dave], data: I.bytes("go"), timeoutSeconds: 10)
        #expect(book.takeDeliveries() == I.each([I.bob, I.carol, I.dave], .newInvitation(new)))

        try book.accept(id, by: I.bob, data: I.bytes("a"), now: I.t(1))
        #expect(book.takeDeliveries() == I.each([I.alice, I.carol, I.dave], .inviteeAccepted(id, invitee: I.bob, data: I.bytes("a"))))
        try book.reject(id, by: I.carol, data: I.bytes("r"), now: I.t(2))
        #expect(book.takeDeliveries() == I.each([I.alice, I.bob, I.dave], .inviteeRejected(id, invitee: I.carol, data: I.bytes("r"))))
        #expect(book.invitation(id)?.isOpen == true)

        book.handleTimeouts(now: I.t(10))
        #expect(book.takeDeliveries() == I.each([I.alice, I.bob, I.carol, I.dave], .invitationTimeout(id, invitees: [I.dave], cause: .deadline)))
        let ended = try #require(book.invitation(id))
        #expect(ended.states == [.accepted, .rejected, .timedOut])
        #expect(ended.end == .settled)
        #expect(book.openCount == 0)
    }

    @Test("group: the invitation ends at the last answer, with no timeout event afterwards")
    func groupAllAnswer() throws {
        var book = I.book()
        let id = try book.invite(from: I.alice, InvitationRequest(invitees: [I.bob, I.carol], timeoutSeconds: 10), now: I.t(0)).id
        _ = book.takeDeliveries()
        try book.accept(id, by: I.bob, now: I.t(1))
        try book.accept(id, by: I.carol, now: I.t(2))
        #expect(
            book.takeDeliveries()
                == I.each([I.alice, I.carol], .inviteeAccepted(id, invitee: I.bob, data: []))
                + I.each([I.alice, I.bob], .inviteeAccepted(id, invitee: I.carol, data: [])))
        #expect(book.openCount == 0)
        book.handleTimeouts(now: I.t(10))
        #expect(book.takeDeliveries().isEmpty)
        #expect(book.deadlineEntryCount == 0)
    }

    @Test("cancel after some accepted: every invitee is told, the accepted keep their answer, the pending become cancelled")
    func cancelAfterSomeAccepted() throws {
        var book = I.book()
        let id = try book.invite(from: I.alice, InvitationRequest(invitees: [I.bob, I.carol, I.dave]), now: I.t(0)).id
        _ = book.takeDeliveries()
        try book.accept(id, by: I.bob, now: I.t(1))
        _ = book.takeDeliveries()
        try book.cancel(id, by: I.alice, data: I.bytes("stop"), now: I.t(2))
        #expect(
            book.takeDeliveries()
                == I.each([I.bob, I.carol, I.dave], .invitationCancelled(id, inviter: I.alice, data: I.bytes("stop"), reason: .cancelledByInviter)))
        #expect(book.invitation(id)?.states == [.accepted, .cancelled, .cancelled])
        #expect(refusal { try book.accept(id, by: I.carol, now: I.t(3)) } == .invitationEnded)
    }

    @Test("onlineUserOnly: offline invitees are left out and reported; all offline is refused")
    func onlineUserOnly() throws {
        var book = I.book()
        let online: Set<PeerID> = [I.bob, I.dave]
        let receipt = try book.invite(
            from: I.alice, InvitationRequest(invitees: [I.bob, I.carol, I.dave], onlineUserOnly: true), now: I.t(0),
            isOnline: { online.contains($0) })
        #expect(receipt.skippedOffline == [I.carol])
        #expect(book.takeDeliveries().map(\.to) == [I.bob, I.dave])
        #expect(book.invitation(receipt.id)?.invitees == [I.bob, I.dave])
        #expect(
            refusal { try book.invite(from: I.alice, InvitationRequest(invitees: [I.carol], onlineUserOnly: true), now: I.t(0), isOnline: { _ in false }) }
                == .inviteesOffline)
        // Without the flag, the online check is not consulted.
        let plain = try book.invite(from: I.alice, InvitationRequest(invitees: [I.carol]), now: I.t(0), isOnline: { _ in false })
        #expect(plain.skippedOffline.isEmpty)
    }

    @Test("invite refusals: empty, too many, duplicate, self, data too large, per-inviter cap, table full")
    func inviteRefusals() throws {
        var book = I.book {
            $0.maxInviteesPerInvitation = 3
            $0.maxCustomDataBytes = 8
            $0.maxOpenInvitationsPerInviter = 2
            $0.maxOpenInvitations = 3
        }
        #expect(refusal { try book.invite(from: I.alice, InvitationRequest(invitees: []), now: I.t(0)) } == .emptyInviteeList)
        #expect(
            refusal { try book.invite(from: I.alice, InvitationRequest(invitees: [I.bob, I.carol, I.dave, I.eve]), now: I.t(0)) } == .tooManyInvitees)
        #expect(refusal { try book.invite(from: I.alice, InvitationRequest(invitees: [I.bob, I.bob]), now: I.t(0)) } == .invalidInviteeList)
        #expect(refusal { try book.invite(from: I.alice, InvitationRequest(invitees: [I.alice]), now: I.t(0)) } == .invalidInviteeList)
        #expect(
            refusal { try book.invite(from: I.alice, InvitationRequest(invitees: [I.bob], data: Array(repeating: 1, count: 9)), now: I.t(0)) }
                == .customDataTooLarge)
        #expect(book.openCount == 0)
        #expect(book.takeDeliveries().isEmpty)

        let first = try book.invite(from: I.alice, InvitationRequest(invitees: [I.bob], data: Array(repeating: 1, count: 8)), now: I.t(0)).id
        try book.invite(from: I.alice, InvitationRequest(invitees: [I.carol]), now: I.t(0))
        #expect(refusal { try book.invite(from: I.alice, InvitationRequest(invitees: [I.dave]), now: I.t(0)) } == .tooManyInvitations)
        try book.invite(from: I.bob, InvitationRequest(invitees: [I.dave]), now: I.t(0))
        #expect(refusal { try book.invite(from: I.carol, InvitationRequest(invitees: [I.dave]), now: I.t(0)) } == .tableFull)
        #expect(refusal { try book.accept(first, by: I.bob, data: Array(repeating: 1, count: 9), now: I.t(0)) } == .customDataTooLarge)
        // Ending one frees a place for its inviter and in the table.
        try book.accept(first, by: I.bob, now: I.t(1))
        try book.invite(from: I.alice, InvitationRequest(invitees: [I.dave]), now: I.t(1))
        #expect(book.openCount == 3)
    }

    @Test("long invitee lists are checked for duplicates too", arguments: [5, 17, 199])
    func longListDuplicates(count: Int) throws {
        var book = I.book()
        var peers = (0..<count).map { PeerID(unchecked: "member-\($0)") }
        peers.append(peers[count / 2])
        #expect(refusal { try book.invite(from: I.alice, InvitationRequest(invitees: peers), now: I.t(0)) } == .invalidInviteeList)
        peers.removeLast()
        peers.append(I.alice)
        #expect(refusal { try book.invite(from: I.alice, InvitationRequest(invitees: peers), now: I.t(0)) } == .invalidInviteeList)
        peers.removeLast()
        try book.invite(from: I.alice, InvitationRequest(invitees: peers), now: I.t(0))
        #expect(book.takeDeliveries().count == count)
    }

    @Test("IDs are unique, non-zero, and print and parse as 16 hex digits")
    func ids() throws {
        var book = I.book()
        var seen = Set<InvitationID>()
        for n in 0..<50 {
            let id = try book.invite(from: PeerID("p\(n)"), InvitationRequest(invitees: [I.bob]), now: I.t(0)).id
            #expect(seen.insert(id).inserted)
            #expect(id.description.utf8.count == 16)
            #expect(InvitationID(id.description) == id)
        }
        #expect(InvitationID("0") == nil)
        #expect(InvitationID("xyz") == nil)
        #expect(InvitationID(rawValue: 0) == nil)
        // Another key makes other IDs.
        var other = InvitationBook(idKey: 1)
        let otherID = try other.invite(from: I.alice, InvitationRequest(invitees: [I.bob]), now: I.t(0)).id
        #expect(!seen.contains(otherID))
    }
}

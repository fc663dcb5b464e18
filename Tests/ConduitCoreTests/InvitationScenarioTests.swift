import ConduitCore
import ConduitImpairment
import ConduitRooms
import Testing

// The seed's scenarios as tests: the 1:1 call flow, the classroom "raise hands, then invite one to
// speak", and thousands of concurrent invitations on one book, all resolved, with nothing left.

@Suite("Invitations: scenarios")
struct InvitationScenarioTests {
    typealias I = Inv

    /// What a peer does with the events it is sent in the call flow: the room it should join, or
    /// why the call did not happen.
    enum CallOutcome: Equatable {
        case join(RoomID)
        case rejected(String)
        case cancelled
        case timedOut
        case ringing(RoomID)
    }

    static func outcome(of event: InvitationEvent, room: RoomID) throws -> CallOutcome {
        switch event {
        case .newInvitation(let new): .ringing(try RoomID(String(decoding: new.data, as: UTF8.self)))
        case .inviteeAccepted: .join(room)
        case .inviteeRejected(_, _, let data): .rejected(String(decoding: data, as: UTF8.self))
        case .invitationCancelled: .cancelled
        case .invitationTimeout: .timedOut
        }
    }

    @Test("1:1 call: the room ID rides in the custom data; on accept both know the same room to join")
    func callAccepted() throws {
        var book = I.book()
        let room: RoomID = "room-42"
        let id = try book.invite(from: I.alice, InvitationRequest(invitees: [I.bob], data: I.bytes(room.rawValue), timeoutSeconds: 30), now: I.t(0)).id
        let ring = book.takeDeliveries()
        #expect(ring.map(\.to) == [I.bob])
        let calleeSees = try Self.outcome(of: ring[0].event, room: room)
        #expect(calleeSees == .ringing(room))
        guard case .ringing(let calleeRoom) = calleeSees else { return }
        try book.accept(id, by: I.bob, now: I.t(3))
        let answer = book.takeDeliveries()
        #expect(answer.map(\.to) == [I.alice])
        #expect(try Self.outcome(of: answer[0].event, room: room) == .join(calleeRoom))
        // The call is set up; nothing else is pending and the deadline passes quietly.
        book.handleTimeouts(now: I.t(30))
        #expect(book.takeDeliveries().isEmpty)
    }

    @Test("1:1 call: reject (line busy), cancel and timeout each tell the caller why")
    func callNotAnswered() throws {
        let room: RoomID = "room-7"
        let request = InvitationRequest(invitees: [I.bob], data: I.bytes(room.rawValue), timeoutSeconds: 30)

        var busy = I.book()
        let a = try busy.invite(from: I.alice, request, now: I.t(0)).id
        _ = busy.takeDeliveries()
        try busy.reject(a, by: I.bob, data: I.bytes("busy"), now: I.t(1))
        #expect(try busy.takeDeliveries().map { try Self.outcome(of: $0.event, room: room) } == [.rejected("busy")])

        var cancelled = I.book()
        let b = try cancelled.invite(from: I.alice, request, now: I.t(0)).id
        _ = cancelled.takeDeliveries()
        try cancelled.cancel(b, by: I.alice, now: I.t(1))
        let told = cancelled.takeDeliveries()
        #expect(told.map(\.to) == [I.bob])  // the callee stops ringing
        #expect(try told.map { try Self.outcome(of: $0.event, room: room) } == [.cancelled])

        var unanswered = I.book()
        _ = try unanswered.invite(from: I.alice, request, now: I.t(0))
        _ = unanswered.takeDeliveries()
        unanswered.handleTimeouts(now: I.t(30))
        let timeouts = unanswered.takeDeliveries()
        #expect(timeouts.map(\.to) == [I.alice, I.bob])
        #expect(try timeouts.map { try Self.outcome(of: $0.event, room: room) } == [.timedOut, .timedOut])
    }

    @Test("classroom: the teacher asks for raised hands, sees who raised them, and invites one of them to speak")
    func classroom() throws {
        var book = I.book()
        let teacher: PeerID = "teacher"
        let students: [PeerID] = ["s1", "s2", "s3", "s4"]
        let raise = try book.invite(
            from: teacher, InvitationRequest(invitees: students, groupID: "class-1", data: I.bytes("raise hands"), timeoutSeconds: 60),
            now: I.t(0)
        ).id
        let invited = book.takeDeliveries()
        #expect(invited.map(\.to) == students)
        for delivery in invited {
            guard case .newInvitation(let new) = delivery.event else { Issue.record("expected newInvitation"); continue }
            #expect(new.invitees == students)  // "based on the inviteeList and data fields"
            #expect(new.data == I.bytes("raise hands"))
            #expect(new.groupID == "class-1")
        }

        try book.accept(raise, by: "s3", now: I.t(5))
        try book.accept(raise, by: "s1", now: I.t(6))
        try book.reject(raise, by: "s2", now: I.t(7))
        let answers = book.takeDeliveries()
        // "all users receive the onInviteeAccepted callback": each accept reaches the teacher and every other student.
        #expect(answers.filter { $0.event == .inviteeAccepted(raise, invitee: "s3", data: []) }.map(\.to) == [teacher, "s1", "s2", "s4"])
        // The teacher's list of raised hands, in the order they were raised.
        let hands = answers.filter { $0.to == teacher }.compactMap { delivery -> PeerID? in
            if case .inviteeAccepted(_, let who, _) = delivery.event { return who }
            return nil
        }
        #expect(hands == ["s3", "s1"])

        // Second invitation of the same group: one student is invited to speak.
        let speak = try book.invite(
            from: teacher, InvitationRequest(invitees: [hands[0]], groupID: "class-1", data: I.bytes("speak"), timeoutSeconds: 30), now: I.t(8)
        ).id
        #expect(book.takeDeliveries().map(\.to) == ["s3"])
        try book.accept(speak, by: "s3", data: I.bytes("speak"), now: I.t(9))
        #expect(book.takeDeliveries() == [I.to(teacher, .inviteeAccepted(speak, invitee: "s3", data: I.bytes("speak")))])

        // The raise-hands round ends when its deadline passes for s4, who never answered.
        book.handleTimeouts(now: I.t(60))
        #expect(book.takeDeliveries() == I.each([teacher] + students, .invitationTimeout(raise, invitees: ["s4"], cause: .deadline)))
        #expect(book.invitation(raise)?.states == [.accepted, .rejected, .accepted, .timedOut])
        #expect(book.openCount == 0)
    }

    @Test("10,000 concurrent invitations on one book: every one resolved by answers, cancels or timeouts; nothing leaks")
    func thousandsConcurrent() throws {
        var book = I.book()
        var rng = SeededRandom(seed: 8)
        let inviters = (0..<500).map { PeerID(unchecked: "inviter-\($0)") }
        let invitees = (0..<2_000).map { PeerID(unchecked: "invitee-\($0)") }
        var ids: [(InvitationID, inviter: PeerID, invitees: [PeerID])] = []
        for n in 0..<10_000 {
            let inviter = inviters[n % inviters.count]
            let count = 1 + rng.below(3)
            var chosen: [PeerID] = []
            while chosen.count < count {
                let peer = invitees[rng.below(invitees.count)]
                if !chosen.contains(peer) { chosen.append(peer) }
            }
            let receipt = try book.invite(from: inviter, InvitationRequest(invitees: chosen, timeoutSeconds: 60), now: I.t(0))
            ids.append((receipt.id, inviter, chosen))
        }
        #expect(book.openCount == 10_000)
        #expect(book.takeDeliveries().count == ids.reduce(0) { $0 + $1.invitees.count })

        var expectedDeliveries = 0
        for (n, entry) in ids.enumerated() {
            let audience = entry.invitees.count  // inviter + other invitees
            switch n % 4 {
            case 0:  // everyone accepts
                for peer in entry.invitees { try book.accept(entry.0, by: peer, now: I.t(1)) }
                expectedDeliveries += entry.invitees.count * audience
            case 1:  // everyone rejects
                for peer in entry.invitees { try book.reject(entry.0, by: peer, now: I.t(1)) }
                expectedDeliveries += entry.invitees.count * audience
            case 2:  // the inviter cancels
                try book.cancel(entry.0, by: entry.inviter, now: I.t(1))
                expectedDeliveries += entry.invitees.count
            default:  // left to time out: everyone involved is told once
                expectedDeliveries += audience + 1
            }
        }
        book.handleTimeouts(now: I.t(60))
        #expect(book.takeDeliveries().count == expectedDeliveries)
        #expect(book.openCount == 0)
        #expect(book.trackedPeerCount == 0)
        #expect(book.pendingDeliveryCount == 0)
        // After the tombstone window, nothing at all remains.
        book.handleTimeouts(now: I.t(60) + book.configuration.tombstoneLifetime)
        #expect(book.tombstoneCount == 0)
        #expect(book.deadlineEntryCount == 0)
        #expect(book.nextTimeout == nil)
        // And the book takes as many again.
        try book.invite(from: inviters[0], InvitationRequest(invitees: [invitees[0]]), now: I.t(200))
        #expect(book.openCount == 1)
    }
}

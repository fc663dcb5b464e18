import Conduit
import ConduitCore
import ConduitRooms
import ConduitRelayCore
import ConduitRelay
import Synchronization
import ConduitTesting
import Testing

/// Collects a conference's invitation events as they come (a waiter is resumed by the event it
/// waits for, not by polling).
final class InvitationLog: Sendable {
    private let recorder: EventRecorder<InvitationEvent>

    init(_ conference: Conference) { recorder = EventRecorder(conference.invitationEvents) }

    var all: [InvitationEvent] { recorder.all }

    @discardableResult
    func wait(for what: String, limit: Duration = .seconds(15), _ predicate: @escaping @Sendable (InvitationEvent) -> Bool) async throws -> InvitationEvent {
        let recorder = recorder
        return try await within(what, limit: limit) { try await recorder.first(where: predicate) }
    }

    /// The next `newInvitation`.
    func ring(limit: Duration = .seconds(15)) async throws -> NewInvitation {
        guard case .newInvitation(let new) = try await wait(for: "a newInvitation", limit: limit, { if case .newInvitation = $0 { true } else { false } }) else {
            throw TimedOut(what: "newInvitation")
        }
        return new
    }

    /// The events once at least `count` arrived (the log reads the stream on its own task).
    func first(_ count: Int, limit: Duration = .seconds(15)) async throws -> [InvitationEvent] {
        let recorder = recorder
        return try await within("\(count) invitation events", limit: limit) { try await recorder.wait { $0.count >= count } }
    }

    func count(_ predicate: (InvitationEvent) -> Bool) -> Int { all.filter(predicate).count }
}

/// A peer in the lobby: its conference, room events and invitation events.
struct Lobbyist {
    let conference: Conference
    let room: EventLog
    let invitations: InvitationLog

    static func join(_ peer: PeerID, _ relay: LoopbackRoom, room: RoomID = "lobby") async throws -> Lobbyist {
        let (conference, log) = try await relay.join(peer, room: room)
        return Lobbyist(conference: conference, room: log, invitations: InvitationLog(conference))
    }
}

func code(_ body: () async throws -> Void) async -> InvitationError.Code? {
    do {
        try await body()
        return nil
    } catch let error as InvitationError {
        return error.code
    } catch {
        return InvitationError.Code(rawValue: 9_999)
    }
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// Invitations end to end: `Conference` clients, a real `RelayServer`, the loopback transport.
@Suite("Invitations through a relay over loopback")
struct InvitationLoopbackTests {

    @Test("1:1 call: the caller invites with a room ID, the callee accepts, both join the room and exchange data-session messages")
    func callAccepted() async throws {
        let relay = try await LoopbackRoom.start(name: "inv-call")
        let alice = try await Lobbyist.join("alice", relay)
        let bob = try await Lobbyist.join("bob", relay)
        let runtime = relay.runtime
        let caller = Task {
            try await runtime.placeCall(on: alice.conference, to: "bob", room: "call-1", relay: relay.url, token: relay.token("alice", room: "call-1"), timeout: .seconds(30))
        }
        let ring = try await bob.invitations.ring()
        #expect(ring.inviter == "alice")
        #expect(ring.invitees == ["bob"])
        #expect(ring.data == bytes("call-1"))
        #expect(ring.timeoutSeconds == 30)
        let bobCall = try await runtime.answerCall(ring, on: bob.conference, relay: relay.url, token: relay.token("bob", room: "call-1"))
        let aliceCall = try await within("the caller joins the call") { try await caller.value }
        #expect(aliceCall.room == "call-1")
        try await alice.invitations.wait(for: "alice hears the accept") { $0 == .inviteeAccepted(ring.id, invitee: "bob", data: []) }
        let outcome = try #require(await alice.conference.outcome(of: ring.id))
        #expect(outcome.view.states == [.accepted])
        #expect(outcome.view.end == .settled)
        #expect(await bob.conference.outcome(of: ring.id)?.view.states == [.accepted])

        // The data sessions of the call room, both ways.
        let aliceLog = EventLog(aliceCall)
        let bobLog = EventLog(bobCall)
        let toBob = try await aliceCall.makeOutboundDataSession(streamID: 100, type: .reliableMessage)
        try await bobLog.wait(for: "bob sees alice's session") { $0 == .dataSessionIncoming(streamID: 100, subgroup: nil, type: .reliableMessage, from: "alice") }
        let atBob = try await bobCall.makeInboundDataSession(streamID: 100)
        try await toBob.send(bytes("hello bob"))
        let toAlice = try await bobCall.makeOutboundDataSession(streamID: 101, type: .reliableMessage)
        try await aliceLog.wait(for: "alice sees bob's session") { $0 == .dataSessionIncoming(streamID: 101, subgroup: nil, type: .reliableMessage, from: "bob") }
        let atAlice = try await aliceCall.makeInboundDataSession(streamID: 101)
        try await toAlice.send(bytes("hello alice"))
        #expect(try await read(atBob, count: 1).map { "\($0.0): \($0.1)" } == ["alice: hello bob"])
        #expect(try await read(atAlice, count: 1).map { "\($0.0): \($0.1)" } == ["bob: hello alice"])
        #expect(await relay.server.invitations.book.openCount == 0)

        for conference in [aliceCall, bobCall, alice.conference, bob.conference] { await conference.leave() }
        await relay.server.shutdown()
    }

    @Test("reject with \"busy\": the caller's call ends with the reason and the data; the accept event never comes")
    func rejectedBusy() async throws {
        let relay = try await LoopbackRoom.start(name: "inv-busy")
        let alice = try await Lobbyist.join("alice", relay)
        let bob = try await Lobbyist.join("bob", relay)
        let runtime = relay.runtime
        let caller = Task {
            try await runtime.placeCall(on: alice.conference, to: "bob", room: "call-2", relay: relay.url, token: relay.token("alice", room: "call-2"), timeout: .seconds(30))
        }
        let ring = try await bob.invitations.ring()
        try await bob.conference.reject(ring.id, data: bytes("busy"))
        do {
            _ = try await within("the caller's answer") { try await caller.value }
            Issue.record("a rejected call was answered")
        } catch let error as CallNotAnswered {
            #expect(error.reason == .rejected)
            #expect(error.data == bytes("busy"))
            #expect(error.invitation == ring.id)
        }
        #expect(try await alice.invitations.first(1) == [.inviteeRejected(ring.id, invitee: "bob", data: bytes("busy"))])
        // Bob cannot change his mind: his own client refuses (the invitation ended for him).
        #expect(await code { try await bob.conference.accept(ring.id) } == .unknownInvitation)
        #expect(await relay.server.members(of: "call-2").isEmpty)
        for conference in [alice.conference, bob.conference] { await conference.leave() }
        await relay.server.shutdown()
    }

    @Test("cancel: the callee hears invitationCancelled with the caller's data; answering afterwards is refused")
    func cancelled() async throws {
        let relay = try await LoopbackRoom.start(name: "inv-cancel")
        let alice = try await Lobbyist.join("alice", relay)
        let bob = try await Lobbyist.join("bob", relay)
        let receipt = try await alice.conference.invite(["bob"], data: bytes("call-3"), timeout: .seconds(30))
        let ring = try await bob.invitations.ring()
        #expect(ring.id == receipt.id)
        try await alice.conference.cancel(receipt.id, data: bytes("hung up"))
        try await bob.invitations.wait(for: "bob hears the cancel") {
            $0 == .invitationCancelled(receipt.id, inviter: "alice", data: bytes("hung up"), reason: .cancelledByInviter)
        }
        #expect(await bob.conference.outcome(of: receipt.id)?.view.end == .cancelled(.cancelledByInviter))
        #expect(await alice.conference.outcome(of: receipt.id)?.view.states == [.cancelled])
        #expect(await code { try await bob.conference.accept(receipt.id) } == .unknownInvitation)
        #expect(await code { try await alice.conference.cancel(receipt.id) } == .unknownInvitation)
        #expect(await relay.server.invitations.book.openCount == 0)
        for conference in [alice.conference, bob.conference] { await conference.leave() }
        await relay.server.shutdown()
    }

    @Test("timeout: caller and callee both hear invitationTimeout; the placed call ends as timedOut")
    func timedOut() async throws {
        // The relay's invitation deadline runs on a virtual clock: the 1 s passes without waiting.
        let clock = VirtualClock()
        let relay = try await LoopbackRoom.start(name: "inv-timeout", clock: clock)
        let alice = try await Lobbyist.join("alice", relay)
        let bob = try await Lobbyist.join("bob", relay)
        let placedAt = clock.now()
        do {
            _ = try await clock.run(advancingBy: .milliseconds(100), limit: .seconds(5)) {
                try await relay.runtime.placeCall(on: alice.conference, to: "bob", room: "call-4", relay: relay.url, token: relay.token("alice", room: "call-4"), timeout: .seconds(1))
            }
            Issue.record("an unanswered call was answered")
        } catch let error as CallNotAnswered {
            #expect(error.reason == .timedOut)
        }
        // Not before its deadline.
        #expect(clock.now() >= placedAt + .seconds(1))
        let ring = try await bob.invitations.ring()
        try await bob.invitations.wait(for: "bob hears the timeout") { $0 == .invitationTimeout(ring.id, invitees: ["bob"], cause: .deadline) }
        #expect(try await alice.invitations.first(1) == [.invitationTimeout(ring.id, invitees: ["bob"], cause: .deadline)])
        #expect(await code { try await bob.conference.accept(ring.id) } == .unknownInvitation)
        for conference in [alice.conference, bob.conference] { await conference.leave() }
        await relay.server.shutdown()
    }

    @Test("the callee leaving the relay mid-invitation ends the call as calleeLeft")
    func calleeLeaves() async throws {
        let relay = try await LoopbackRoom.start(name: "inv-leave")
        let alice = try await Lobbyist.join("alice", relay)
        let bob = try await Lobbyist.join("bob", relay)
        let runtime = relay.runtime
        let caller = Task {
            try await runtime.placeCall(on: alice.conference, to: "bob", room: "call-5", relay: relay.url, token: relay.token("alice", room: "call-5"), timeout: .seconds(60))
        }
        let ring = try await bob.invitations.ring()
        await bob.conference.leave()
        do {
            _ = try await within("the caller's answer") { try await caller.value }
            Issue.record("the call was answered by a peer that left")
        } catch let error as CallNotAnswered {
            #expect(error.reason == .calleeLeft)
        }
        #expect(try await alice.invitations.first(1) == [.invitationTimeout(ring.id, invitees: ["bob"], cause: .inviteeLeft)])
        // Bob's own side ended with his conference: his requests are refused locally.
        #expect(await code { try await bob.conference.accept(ring.id) } == .notConnected)
        await alice.conference.leave()
        await relay.server.shutdown()
    }

    @Test("hanging up before the answer: cancelling the caller's task cancels the invitation; a call to a peer not on the relay is refused")
    func callerHangsUp() async throws {
        // A virtual clock never advanced: no invitation deadline can pass, so both endings below
        // come from the hang-up and the refusal, never from a timeout.
        let relay = try await LoopbackRoom.start(name: "inv-hangup", clock: VirtualClock())
        let alice = try await Lobbyist.join("alice", relay)
        let bob = try await Lobbyist.join("bob", relay)
        let runtime = relay.runtime
        let caller = Task {
            try await runtime.placeCall(on: alice.conference, to: "bob", room: "call-7", relay: relay.url, token: relay.token("alice", room: "call-7"), timeout: .seconds(60))
        }
        let ring = try await bob.invitations.ring()
        caller.cancel()
        do {
            _ = try await within("the cancelled call to end") { try await caller.value }
            Issue.record("a cancelled call was answered")
        } catch let error as CallNotAnswered {
            #expect(error.reason == .cancelled)
        }
        try await bob.invitations.wait(for: "bob hears the hang-up") { $0 == .invitationCancelled(ring.id, inviter: "alice", data: [], reason: .cancelledByInviter) }
        #expect(await code { _ = try await bob.conference.accept(ring.id) } == .unknownInvitation)
        do {
            _ = try await runtime.placeCall(on: alice.conference, to: "zoe", room: "call-8", relay: relay.url, token: relay.token("alice", room: "call-8"), timeout: .seconds(5))
            Issue.record("a call to nobody was placed")
        } catch let error as InvitationError {
            #expect(error.code == .inviteesOffline)
        }
        for conference in [alice.conference, bob.conference] { await conference.leave() }
        await relay.server.shutdown()
    }

    @Test("cancel racing accept: exactly one wins, as the relay saw them, and both sides end with the same states", arguments: 0..<8)
    func cancelRacesAccept(round: Int) async throws {
        let relay = try await LoopbackRoom.start(name: "inv-race-\(round)")
        let alice = try await Lobbyist.join("alice", relay)
        let bob = try await Lobbyist.join("bob", relay)
        let receipt = try await alice.conference.invite(["bob"], data: bytes("call-6"), timeout: .seconds(30))
        _ = try await bob.invitations.ring()
        let id = receipt.id
        // Both requests are in flight at once; even rounds start the accept first, odd the cancel,
        // so both orders reach the relay across the rounds.
        let cancelCode: InvitationError.Code?
        let acceptCode: InvitationError.Code?
        if round % 2 == 0 {
            async let accept = code { try await bob.conference.accept(id) }
            async let cancel = code { try await alice.conference.cancel(id) }
            (acceptCode, cancelCode) = await (accept, cancel)
        } else {
            async let cancel = code { try await alice.conference.cancel(id) }
            async let accept = code { try await bob.conference.accept(id) }
            (cancelCode, acceptCode) = await (cancel, accept)
        }

        #expect((cancelCode == nil) != (acceptCode == nil), "exactly one of cancel (\(String(describing: cancelCode))) and accept (\(String(describing: acceptCode))) succeeds")
        let aliceOutcome = try #require(await alice.conference.outcome(of: id))
        let bobOutcome = try #require(await bob.conference.outcome(of: id))
        #expect(aliceOutcome.view.states == bobOutcome.view.states)
        #expect(aliceOutcome.view.end == bobOutcome.view.end)
        if cancelCode == nil {
            #expect(aliceOutcome.view.end == .cancelled(.cancelledByInviter))
            #expect([.invitationEnded, .unknownInvitation].contains(acceptCode))
        } else {
            #expect(aliceOutcome.view.states == [.accepted])
            #expect([.invitationEnded, .unknownInvitation].contains(cancelCode))
        }
        for conference in [alice.conference, bob.conference] { await conference.leave() }
        await relay.server.shutdown()
    }

    @Test("an uninvited peer and the inviter cannot answer: refused with unknownInvitation and notInvitee; the callee still can")
    func unauthorizedAnswer() async throws {
        let relay = try await LoopbackRoom.start(name: "inv-unauth")
        let alice = try await Lobbyist.join("alice", relay)
        let bob = try await Lobbyist.join("bob", relay)
        let eve = try await Lobbyist.join("eve", relay)
        let receipt = try await alice.conference.invite(["bob"], timeout: .seconds(30))
        _ = try await bob.invitations.ring()
        #expect(await code { try await eve.conference.accept(receipt.id) } == .unknownInvitation)
        #expect(await code { try await eve.conference.cancel(receipt.id) } == .unknownInvitation)
        #expect(await code { try await alice.conference.accept(receipt.id) } == .notInvitee)
        #expect(await code { try await bob.conference.cancel(receipt.id) } == .notInviter)
        #expect(eve.invitations.all.isEmpty)
        try await bob.conference.accept(receipt.id)
        try await alice.invitations.wait(for: "the real accept") { $0 == .inviteeAccepted(receipt.id, invitee: "bob", data: []) }
        // A late answer after the end: the other answer is refused.
        #expect(await code { try await bob.conference.reject(receipt.id) } == .unknownInvitation)
        #expect(await code { _ = try await alice.conference.invite(["alice"], timeout: .zero) } == .invalidInviteeList)
        #expect(await code { _ = try await alice.conference.invite(["zoe"], timeout: .zero, onlineOnly: true) } == .inviteesOffline)
        for conference in [alice.conference, bob.conference, eve.conference] { await conference.leave() }
        await relay.server.shutdown()
    }

    @Test("group: the host invites 3 members of its room; acceptances and a rejection are collected per invitee")
    func groupInvitation() async throws {
        let relay = try await LoopbackRoom.start(name: "inv-group")
        let host = try await Lobbyist.join("host", relay, room: "team")
        let members = [try await Lobbyist.join("m1", relay, room: "team"), try await Lobbyist.join("m2", relay, room: "team"), try await Lobbyist.join("m3", relay, room: "team")]
        let receipt = try await host.conference.invite(["m1", "m2", "m3"], group: "team", data: bytes("standup"), timeout: .seconds(30))
        for member in members {
            let ring = try await member.invitations.ring()
            #expect(ring.groupID == "team")
            #expect(ring.invitees == ["m1", "m2", "m3"])
        }
        try await members[2].conference.accept(receipt.id, data: bytes("on my way"))
        try await members[0].conference.accept(receipt.id)
        try await members[1].conference.reject(receipt.id, data: bytes("ooo"))
        let outcome = try #require(await host.conference.outcome(of: receipt.id))
        #expect(outcome.view.states == [.accepted, .rejected, .accepted])
        #expect(outcome.accepted == ["m1", "m3"])
        #expect(outcome.answerData == ["m1": [], "m2": bytes("ooo"), "m3": bytes("on my way")])
        // Everyone involved hears every answer, in the order the relay took them.
        let expected: [InvitationEvent] = [
            .inviteeAccepted(receipt.id, invitee: "m3", data: bytes("on my way")),
            .inviteeAccepted(receipt.id, invitee: "m1", data: []),
            .inviteeRejected(receipt.id, invitee: "m2", data: bytes("ooo")),
        ]
        #expect(try await host.invitations.first(3) == expected)
        for member in members { #expect(await member.conference.outcome(of: receipt.id)?.view.states == [.accepted, .rejected, .accepted]) }
        try await members[1].invitations.wait(for: "m2 hears m1") { $0 == expected[1] }
        for conference in [host.conference] + members.map(\.conference) { await conference.leave() }
        await relay.server.shutdown()
    }

    @Test("classroom: the teacher asks everyone to raise hands, then invites one raised hand to speak")
    func classroom() async throws {
        // The 2 s deadline of the raised hands runs on the relay's virtual clock.
        let clock = VirtualClock()
        let relay = try await LoopbackRoom.start(name: "inv-class", clock: clock)
        let teacher = try await Lobbyist.join("teacher", relay, room: "class")
        let students = try await [("s1" as PeerID), "s2", "s3", "s4"].asyncMap { try await Lobbyist.join($0, relay, room: "class") }
        let invitedAt = clock.now()
        let hands = try await teacher.conference.invite(students.map(\.conference.localPeer), group: "class", data: bytes("raise hands"), timeout: .seconds(2))
        for student in students { _ = try await student.invitations.ring() }
        try await students[3].conference.accept(hands.id)
        try await students[1].conference.accept(hands.id)
        let conference = teacher.conference
        let raised = try #require(try await clock.run(advancingBy: .milliseconds(100), limit: .seconds(5)) { await conference.outcome(of: hands.id) })
        #expect(clock.now() >= invitedAt + .seconds(2))
        #expect(raised.accepted == ["s2", "s4"])
        #expect(raised.view.states == [.timedOut, .accepted, .timedOut, .accepted])
        #expect(try await teacher.invitations.first(3).last == .invitationTimeout(hands.id, invitees: ["s1", "s3"], cause: .deadline))

        let speak = try await teacher.conference.invite([raised.accepted[0]], group: "class", data: bytes("speak"), timeout: .seconds(30))
        let ring = try await students[1].invitations.wait(for: "s2 is asked to speak") {
            if case .newInvitation(let new) = $0 { new.data == bytes("speak") } else { false }
        }
        #expect(ring.invitationID == speak.id)
        try await students[1].conference.accept(speak.id)
        #expect(await teacher.conference.outcome(of: speak.id)?.accepted == ["s2"])
        #expect(students[3].invitations.count { $0.invitationID == speak.id } == 0)
        for conference in [teacher.conference] + students.map(\.conference) { await conference.leave() }
        await relay.server.shutdown()
    }
}

extension Array {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var out: [T] = []
        for element in self { out.append(try await transform(element)) }
        return out
    }
}

@Suite("Invitations at scale through a relay over loopback")
struct InvitationScaleTests {
    @Test("2,000 concurrent invitations from 10 inviters to 10 invitees all settle exactly once; the relay's book is empty after")
    func twoThousandInvitations() async throws {
        var configuration = RelayConfiguration()
        configuration.invitations.maxOpenInvitationsPerInviter = 256
        let relay = try await LoopbackRoom.start(name: "inv-scale", relay: configuration)
        let inviterIDs = (0..<10).map { PeerID(stringLiteral: "caller\($0)") }
        let inviteeIDs = (0..<10).map { PeerID(stringLiteral: "callee\($0)") }
        let inviters = try await inviterIDs.asyncMap { try await Lobbyist.join($0, relay) }
        // The invitees' invitation events are read by the answering task below, not by a log.
        let invitees = try await inviteeIDs.asyncMap { try await relay.join($0, room: "lobby2").0 }
        let perInviter = 200

        // Every invitee answers each ring as it comes: accept when the data says so, else reject.
        let answering = Task {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for invitee in invitees {
                    group.addTask {
                        var answered = 0
                        for await event in invitee.invitationEvents {
                            guard case .newInvitation(let ring) = event else { continue }
                            if ring.data.last! % 2 == 0 {
                                try await invitee.accept(ring.id, data: ring.data)
                            } else {
                                try await invitee.reject(ring.id, data: ring.data)
                            }
                            answered += 1
                            if answered == perInviter { break }
                        }
                        return answered
                    }
                }
                var total = 0
                for try await count in group { total += count }
                return total
            }
        }

        let outcomes = try await within("2,000 invitations to settle", limit: .seconds(120)) {
            try await withThrowingTaskGroup(of: [(InvitationOutcome, UInt8)].self) { group in
                for (i, inviter) in inviters.enumerated() {
                    group.addTask {
                        try await withThrowingTaskGroup(of: (InvitationOutcome, UInt8).self) { mine in
                            for j in 0..<perInviter {
                                mine.addTask {
                                    let marker = UInt8(j % 256)
                                    let receipt = try await inviter.conference.invite([inviteeIDs[(i + j) % 10]], data: [UInt8(i), marker], timeout: .seconds(60))
                                    let outcome = try #require(await inviter.conference.outcome(of: receipt.id))
                                    return (outcome, marker)
                                }
                            }
                            var all: [(InvitationOutcome, UInt8)] = []
                            for try await one in mine { all.append(one) }
                            return all
                        }
                    }
                }
                var all: [(InvitationOutcome, UInt8)] = []
                for try await some in group { all += some }
                return all
            }
        }
        #expect(try await within("the invitees' answers") { try await answering.value } == 2_000)
        #expect(outcomes.count == 2_000)
        #expect(Set(outcomes.map(\.0.id)).count == 2_000)
        for (outcome, marker) in outcomes {
            let invitee = outcome.view.invitees[0]
            #expect(outcome.view.states == [marker % 2 == 0 ? .accepted : .rejected])
            #expect(outcome.answerData[invitee]?.last == marker)
        }
        let invitations = await relay.server.invitations
        #expect(invitations.book.openCount == 0)
        #expect(invitations.book.trackedPeerCount == 0)
        #expect(invitations.book.pendingDeliveryCount == 0)
        #expect(invitations.book.tombstoneCount == 2_000)
        #expect(invitations.malformedRequests == 0)
        #expect(invitations.requestsHandled == 4_000)
        let everyone = inviters.map(\.conference) + invitees
        for conference in everyone {
            #expect(await conference.openInvitations.isEmpty)
            #expect(await conference.droppedInvitationMessages == 0)
        }
        for conference in everyone { await conference.leave() }
        // A leave returns once its link closed; the relay takes the leave when it reads it.
        try await within("every member offline at the relay") { await relay.server.waitUntil { $0.invitations.onlinePeerCount == 0 } }
        #expect(await relay.server.invitations.onlinePeerCount == 0)
        await relay.server.shutdown()
    }
}

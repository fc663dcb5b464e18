import Conduit
import ConduitRelay
import ConduitTooling
import ConduitTesting
import ConduitCore
import Testing
import ConduitRooms

/// `conduit invite` and `conduit answer` in process, through a loopback relay.
@Suite("conduit invite / answer jobs")
struct InvitationJobTests {
    static func invite(_ relay: LoopbackRoom, to: [PeerID], data: String, timeout: Duration = .seconds(30), onlineOnly: Bool = true) -> InviteJob {
        InviteJob(runtime: relay.runtime, options: .init(
            relay: relay.url, room: "lobby", peer: "alice", token: relay.token("alice", room: "lobby"), invitees: to, data: Array(data.utf8),
            timeout: timeout, onlineOnly: onlineOnly))
    }

    static func answer(_ relay: LoopbackRoom, as peer: PeerID, accept: Bool, data: String = "", wait: Duration = .seconds(20)) -> AnswerJob {
        AnswerJob(runtime: relay.runtime, options: .init(
            relay: relay.url, room: "lobby", peer: peer, token: relay.token(peer, room: "lobby"), accept: accept, data: Array(data.utf8), wait: wait))
    }

    @Test("answer --accept, then invite: the invite reports accepted with its events; the answer reports the call's room")
    func acceptedCall() async throws {
        let relay = try await LoopbackRoom.start(name: "inv-job-accept")
        let bob = Task { try await Self.answer(relay, as: "bob", accept: true, data: "hi").run() }
        try await relay.waitForMembers(["bob"], in: "lobby")
        let report = try await within("the invite job") { try await Self.invite(relay, to: ["bob"], data: "call-9").run() }
        #expect(report.accepted)
        #expect(report.result == "accepted")
        #expect(report.states == ["bob": "accepted"])
        #expect(report.answers == ["bob": "hi"])
        #expect(report.events == ["inviteeAccepted \(report.invitation) by bob (hi)"])
        let answered = try await within("the answer job") { try await bob.value }
        #expect(answered.invitation == report.invitation)
        #expect(answered.inviter == "alice")
        #expect(answered.data == "call-9")
        #expect(answered.answer == "accepted")
        await relay.server.shutdown()
    }

    @Test("answer --reject --data busy: the invite fails with one line naming the reason")
    func rejectedBusy() async throws {
        let relay = try await LoopbackRoom.start(name: "inv-job-busy")
        let bob = Task { try await Self.answer(relay, as: "bob", accept: false, data: "busy").run() }
        try await relay.waitForMembers(["bob"], in: "lobby")
        let report = try await within("the invite job") { try await Self.invite(relay, to: ["bob"], data: "call-10").run() }
        #expect(!report.accepted)
        #expect(report.result == "rejected by bob (busy)")
        #expect(report.states == ["bob": "rejected"])
        #expect(try await bob.value.answer == "rejected")
        await relay.server.shutdown()
    }

    @Test("nobody there: invite --online-only is refused with inviteesOffline; answer gives up after --wait; an unanswered invite times out")
    func nobodyThere() async throws {
        // The relay, the runtime and the jobs' waits run on a virtual clock: the answer's 200 ms
        // and the invitation's 1 s pass without waiting, and not before they are due.
        let clock = VirtualClock()
        let relay = try await LoopbackRoom.start(name: "inv-job-empty", clock: clock)
        do {
            _ = try await Self.invite(relay, to: ["bob"], data: "x").run()
            Issue.record("an invite to nobody online was accepted")
        } catch let error as InvitationError {
            #expect(error.code == .inviteesOffline)
        }
        let answerAskedAt = clock.now()
        do {
            _ = try await clock.run(advancingBy: .milliseconds(50), limit: .seconds(30)) {
                try await Self.answer(relay, as: "bob", accept: true, wait: .milliseconds(200)).run()
            }
            Issue.record("an answer without an invitation succeeded")
        } catch let error as ConduitError {
            #expect(error.code == .timedOut)
        }
        #expect(clock.now() >= answerAskedAt + .milliseconds(200))
        let invitedAt = clock.now()
        let report = try await clock.run(advancingBy: .milliseconds(100), limit: .seconds(30)) {
            try await Self.invite(relay, to: ["bob"], data: "x", timeout: .seconds(1), onlineOnly: false).run()
        }
        #expect(clock.now() >= invitedAt + .seconds(1))
        #expect(report.result == "bob did not answer in time")
        #expect(report.events == ["invitationTimeout \(report.invitation) for bob (deadline)"])
        await relay.server.shutdown()
    }
}

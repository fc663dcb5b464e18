import Conduit
import ConduitCore
import ConduitRooms
import ConduitRelay
import ConduitTesting
import ConduitTooling
import Testing

/// A relay of `threads` shards on the loopback transport: one listener hands links to the shards
/// in turn (the first to shard 0, the next to shard 1, …), so tests place members on shards by the
/// order they join.
struct ShardedLobby {
    let runtime: ConduitRuntime
    let group: RelayShardGroup
    let url: String

    static func start(name: String, threads: Int = 2) async throws -> ShardedLobby {
        var configuration = ConduitConfiguration()
        configuration.rateLimit = .unlimited
        let runtime = ConduitRuntime(configuration: configuration)
        let group = RelayShardGroup(threads: threads, authority: RelayTokenAuthority(secret: LoopbackRoom.secret), registry: runtime.registry)
        let bound = try await group.listen(on: "loopback://\(name)")
        return ShardedLobby(runtime: runtime, group: group, url: bound.description)
    }

    func token(_ peer: PeerID, room: RoomID = "lobby") -> String {
        RelayToken(room: room, peer: peer, canPublish: true, canSubscribe: true, allowedSubgroups: nil, expiresAt: RelayServer.unixTime() + 600).signed(with: LoopbackRoom.secret)
    }

    /// Joins `peer` to `room` (on the next shard in turn).
    func join(_ peer: PeerID, room: RoomID = "lobby", channels: [ChannelDeclaration] = []) async throws -> Lobbyist {
        let conference = try await runtime.join(relay: url, room: room, as: peer, token: token(peer, room: room), channels: channels)
        return Lobbyist(conference: conference, room: EventLog(conference), invitations: InvitationLog(conference))
    }

    /// Returns once every shard counts `peers` online (their online status crossed the in-process bus).
    func waitUntilOnline(_ peers: [PeerID]) async throws {
        try await within("\(peers) online on every shard") {
            for shard in group.shards {
                for peer in peers { await shard.waitUntil { $0.invitations.isOnline(peer) } }
            }
        }
    }
}

/// Invitations through a relay of two shards: the inviter on one shard, the invitee on the other
/// (in rooms of their own), with the events and refusals of one relay. These failed before
/// invitations crossed shards: an invitee on the other shard never heard of its invitation.
@Suite("Invitations across the shards of one relay", .timeLimit(.minutes(2)))
struct ShardInvitationTests {
    @Test("a call placed on shard 0 rings on shard 1; accepted, both join the call room and exchange messages")
    func aCallAcrossShards() async throws {
        let relay = try await ShardedLobby.start(name: "shard-call")
        let alice = try await relay.join("alice")  // shard 0
        let bob = try await relay.join("bob", room: "lobby-b")  // shard 1: no room in common with alice
        try await relay.waitUntilOnline(["alice", "bob"])
        let runtime = relay.runtime
        let caller = Task {
            try await runtime.placeCall(on: alice.conference, to: "bob", room: "call-1", relay: relay.url, token: relay.token("alice", room: "call-1"), timeout: .seconds(30))
        }
        let ring = try await bob.invitations.ring()
        #expect(ring.inviter == "alice")
        #expect(ring.invitees == ["bob"])
        #expect(ring.data == bytes("call-1"))
        let bobCall = try await runtime.answerCall(ring, on: bob.conference, relay: relay.url, token: relay.token("bob", room: "call-1"))
        let aliceCall = try await within("the caller joins the call") { try await caller.value }
        try await alice.invitations.wait(for: "alice hears the accept") { $0 == .inviteeAccepted(ring.id, invitee: "bob", data: []) }
        #expect(await alice.conference.outcome(of: ring.id)?.view.states == [.accepted])

        let bobLog = EventLog(bobCall)
        let toBob = try await aliceCall.makeOutboundDataSession(streamID: 100, type: .reliableMessage)
        try await bobLog.wait(for: "bob sees alice's session") { $0 == .dataSessionIncoming(streamID: 100, subgroup: nil, type: .reliableMessage, from: "alice") }
        let atBob = try await bobCall.makeInboundDataSession(streamID: 100)
        try await toBob.send(bytes("hello bob"))
        #expect(try await read(atBob, count: 1).map { "\($0.0): \($0.1)" } == ["alice: hello bob"])
        for shard in relay.group.shards { #expect(await shard.invitations.book.openCount == 0) }
        let statistics = await relay.group.statistics.cluster
        #expect(statistics.invitationEventsForwarded >= 1)
        #expect(statistics.invitationRequestsForwarded == 1)
        #expect(statistics.nodeMessagesLost == 0)
        for conference in [aliceCall, bobCall, alice.conference, bob.conference] { await conference.leave() }
        await relay.group.shutdown()
    }

    @Test("README's busy block on two shards: conduit answer --reject --data busy on one, conduit invite on the other; rejected by bob (busy)")
    func busyAcrossShards() async throws {
        let relay = try await ShardedLobby.start(name: "shard-busy")
        let answer = AnswerJob(runtime: relay.runtime, options: .init(
            relay: relay.url, room: "lobby", peer: "bob", token: relay.token("bob"), accept: false, data: bytes("busy"), wait: .seconds(20)))
        let bob = Task { try await answer.run() }  // shard 0
        try await relay.waitUntilOnline(["bob"])
        let invite = InviteJob(runtime: relay.runtime, options: .init(
            relay: relay.url, room: "lobby", peer: "alice", token: relay.token("alice"), invitees: ["bob"], data: bytes("call-42"),
            timeout: .seconds(30), onlineOnly: false))
        let report = try await within("the invite job") { try await invite.run() }  // shard 1
        #expect(report.result == "rejected by bob (busy)")
        #expect(report.states == ["bob": "rejected"])
        #expect(report.events == ["inviteeRejected \(report.invitation) by bob (busy)"])
        #expect(try await bob.value.answer == "rejected")
        #expect(await relay.group.shards[0].statistics.joins == 1)
        #expect(await relay.group.shards[1].statistics.joins == 1)
        await relay.group.shutdown()
    }

    @Test("cancel and a callee leaving cross shards with their causes; onlineOnly sees peers of the other shard")
    func cancelLeaveAndOnlineStatus() async throws {
        let relay = try await ShardedLobby.start(name: "shard-cancel")
        let alice = try await relay.join("alice")  // shard 0
        let bob = try await relay.join("bob")  // shard 1
        try await relay.waitUntilOnline(["alice", "bob"])
        let receipt = try await alice.conference.invite(["bob", "nobody"], data: bytes("x"), timeout: .seconds(30), onlineOnly: true)
        #expect(receipt.skippedOffline == ["nobody"])
        _ = try await bob.invitations.ring()
        try await alice.conference.cancel(receipt.id, data: bytes("never mind"))
        try await bob.invitations.wait(for: "bob hears the cancel") {
            $0 == .invitationCancelled(receipt.id, inviter: "alice", data: bytes("never mind"), reason: .cancelledByInviter)
        }

        let second = try await alice.conference.invite(["bob"], data: bytes("y"), timeout: .seconds(30))
        try await bob.invitations.wait(for: "the second ring") { if case .newInvitation(let ring) = $0 { ring.id == second.id } else { false } }
        await bob.conference.leave()
        try await alice.invitations.wait(for: "alice hears bob left") { $0 == .invitationTimeout(second.id, invitees: ["bob"], cause: .inviteeLeft) }
        #expect(await code { try await alice.conference.invite(["bob"], data: [], timeout: .seconds(5), onlineOnly: true) } == .inviteesOffline)
        await alice.conference.leave()
        await relay.group.shutdown()
    }
}

import Conduit
import ConduitRelay
import ConduitTooling
import ConduitTesting
import Testing

/// `conduit join` in process: a sender and two receivers (one in a subgroup) through a loopback relay.
@Suite struct JoinJobTests {
    @Test func sendersAndReceiversVerifySeededMessagesPerSender() async throws {
        let room = try await LoopbackRoom.start(name: "relay-join-job")
        func options(_ peer: PeerID, send: Bool = false, expect: Int? = nil, to: PeerID? = nil, peers: Int = 1) -> JoinJob.Options {
            JoinJob.Options(
                relay: room.url, room: "room", peer: peer, token: room.token(peer),
                send: send ? (streamID: 100, type: .reliableMessage, count: 40, sizes: 1...3_000, seed: 9) : nil,
                to: to, waitForPeers: peers, expect: expect, timeout: .seconds(20)
            )
        }
        let bob = Task { try await JoinJob(runtime: room.runtime, options: options("bob", expect: 80)).run() }
        let carol = Task { try await JoinJob(runtime: room.runtime, options: options("carol", expect: 40)).run() }
        try await room.waitForMembers(["bob", "carol"])
        // alice sends to everyone, dave to bob only.
        let alice = try await JoinJob(runtime: room.runtime, options: options("alice", send: true, peers: 2)).run()
        let dave = try await JoinJob(runtime: room.runtime, options: options("dave", send: true, to: "bob")).run()
        let atBob = try await bob.value
        let atCarol = try await carol.value
        #expect(alice.sent == 40 && dave.sent == 40)
        #expect(atBob.ended == "expected" && atBob.valid == 80 && atBob.corrupted == 0 && atBob.missing == 0)
        #expect(atBob.bySender == ["alice": 40, "dave": 40])
        #expect(atCarol.ended == "expected" && atCarol.bySender == ["alice": 40])
        #expect(atBob.duplicates == 0 && atBob.outOfOrder == 0)
        await room.server.shutdown()
    }

    @Test func aRefusedJoinIsAnError() async throws {
        // A virtual clock never advanced: no connect or join timer of the runtime can fire (the
        // job's own 5 s bounds only what follows a join), so the errors below are the relay's
        // refusals, never a timeout.
        let room = try await LoopbackRoom.start(name: "relay-join-refused", clock: VirtualClock())
        var options = JoinJob.Options(relay: room.url, room: "room", peer: "eve", token: "ct1.forged.token", expect: 1, timeout: .seconds(5))
        await #expect(throws: ConduitError.self) { try await JoinJob(runtime: room.runtime, options: options).run() }
        options.token = room.token("someone-else")
        do {
            _ = try await JoinJob(runtime: room.runtime, options: options).run()
            Issue.record("a token for another peer was accepted")
        } catch {
            #expect(error.message.contains("wrongPeer"))
        }
        #expect(await room.server.statistics.refusals(.tokenMalformed) == 1)
        await room.server.shutdown()
    }
}

#if NATS
import Conduit
import ConduitNetworkTestSupport
import ConduitRelay
import ConduitRelayCore
import ConduitRooms
import ConduitUDP
import Testing

/// Calls between peers connected to different relays of a cluster, over real UDP sockets on
/// 127.0.0.1 and a real nats-server the test starts on a free loopback port: the caller on relay
/// 0, the callee on relay 1, waiting in rooms of their own.
@Suite("Calls across relays clustered through NATS", .enabled(if: NATSServerProcess.isInstalled, "nats-server is not installed (Debian: nats-server); Scripts/test.sh installs it"),
       .timeLimit(.minutes(2)))
struct ClusterInvitationUDPTests {
    static func lobbyist(_ runtime: ConduitRuntime, _ name: PeerID, room: RoomID, port: Int) async throws -> Lobbyist {
        let (_, conference, log) = try await ClusterFailureTests.join(runtime, name, room: room, port: port)
        return Lobbyist(conference: conference, room: log, invitations: InvitationLog(conference))
    }

    static func token(_ peer: PeerID, room: RoomID) -> String {
        RelayToken(room: room, peer: peer, canPublish: true, canSubscribe: true, expiresAt: RelayServer.unixTime() + 600).signed(with: ClusterUDPTests.secret)
    }

    @Test("placeCall on relay 0 rings the callee on relay 1; accepted, the call room spans both relays; a second call is rejected busy")
    func aCallAcrossRelays() async throws {
        let nats = try await NATSServerProcess.start()
        let runtime = ClusterFailureTests.runtime()
        let (relays, addresses) = try await ClusterUDPTests.relays(2, cluster: nats, registry: runtime.registry)
        let ports = addresses.map { $0.port! }
        let alice = try await Self.lobbyist(runtime, "alice", room: "lobby-a", port: ports[0])
        let bob = try await Self.lobbyist(runtime, "bob", room: "lobby-b", port: ports[1])
        do {
            try await within("relay 0 hears bob is online at relay 1", limit: .seconds(20)) {
                while await !relays[0].invitations.isOnline("bob") { try await Task.sleep(for: .milliseconds(10)) }
            }
            let caller = Task {
                try await runtime.placeCall(on: alice.conference, to: "bob", room: "call-1", relay: "udp://127.0.0.1:\(ports[0])",
                                            token: Self.token("alice", room: "call-1"), timeout: .seconds(30))
            }
            let ring = try await bob.invitations.ring()
            #expect(ring.inviter == "alice")
            #expect(ring.data == bytes("call-1"))
            let bobCall = try await runtime.answerCall(ring, on: bob.conference, relay: "udp://127.0.0.1:\(ports[1])", token: Self.token("bob", room: "call-1"))
            let aliceCall = try await within("the caller joins the call") { try await caller.value }
            try await alice.invitations.wait(for: "alice hears the accept") { $0 == .inviteeAccepted(ring.id, invitee: "bob", data: []) }

            // The call room spans the two relays: a message each way.
            let aliceLog = EventLog(aliceCall)
            let bobLog = EventLog(bobCall)
            let toBob = try await aliceCall.makeOutboundDataSession(streamID: 100, type: .reliableMessage)
            try await bobLog.wait(for: "bob sees alice's session", limit: .seconds(20)) { $0 == .dataSessionIncoming(streamID: 100, subgroup: nil, type: .reliableMessage, from: "alice") }
            let atBob = try await bobCall.makeInboundDataSession(streamID: 100)
            try await toBob.send(bytes("hello bob"))
            let toAlice = try await bobCall.makeOutboundDataSession(streamID: 101, type: .reliableMessage)
            try await aliceLog.wait(for: "alice sees bob's session", limit: .seconds(20)) { $0 == .dataSessionIncoming(streamID: 101, subgroup: nil, type: .reliableMessage, from: "bob") }
            let atAlice = try await aliceCall.makeInboundDataSession(streamID: 101)
            try await toAlice.send(bytes("hello alice"))
            #expect(try await read(atBob, count: 1).map { "\($0.0): \($0.1)" } == ["alice: hello bob"])
            #expect(try await read(atAlice, count: 1).map { "\($0.0): \($0.1)" } == ["bob: hello alice"])

            // A second call, rejected as busy: the caller's call ends with the reason and the data.
            let second = Task {
                try await runtime.placeCall(on: alice.conference, to: "bob", room: "call-2", relay: "udp://127.0.0.1:\(ports[0])",
                                            token: Self.token("alice", room: "call-2"), timeout: .seconds(30))
            }
            let again = try await bob.invitations.wait(for: "the second ring") { if case .newInvitation(let ring) = $0 { ring.data == bytes("call-2") } else { false } }
            guard case .newInvitation(let busy) = again else { return }
            try await bob.conference.reject(busy.id, data: bytes("busy"))
            do {
                _ = try await within("the second call's answer") { try await second.value }
                Issue.record("a rejected call was answered")
            } catch let error as CallNotAnswered {
                #expect(error.reason == .rejected)
                #expect(error.data == bytes("busy"))
            }
            for relay in relays {
                let statistics = await relay.statistics.cluster
                #expect(statistics.nodeMessagesLost == 0)
                #expect(await relay.invitations.book.openCount == 0)
            }
            #expect(await relays[1].statistics.cluster.invitationRequestsForwarded == 2)
            for conference in [aliceCall, bobCall] { await conference.leave() }
        } catch {
            Issue.record(error)
        }
        for member in [alice, bob] { await member.conference.leave() }
        for relay in relays { await relay.shutdown() }
        await nats.stop()
    }
}
#endif

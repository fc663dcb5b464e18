#if NATS
import Conduit
import ConduitNetworkTestSupport
import ConduitRelay
import ConduitRelayCore
import ConduitTooling
import ConduitUDP
import Foundation
import Testing

/// Failures with real processes: a `conduit relay` child killed with SIGKILL (no goodbye on NATS),
/// a nats-server crashed and started again on its port. Relays over UDP on 127.0.0.1.
@Suite("Clustered relays under failure", .enabled(if: NATSServerProcess.isInstalled, "nats-server is not installed (Debian: nats-server); Scripts/test.sh installs it"),
       .timeLimit(.minutes(2)))
struct ClusterFailureTests {
    /// Heartbeats every 250 ms, a relay silent for 1.5 s is dead: short, so the tests stay cheap.
    static let quick = RelayClusterLiveness(heartbeatInterval: .milliseconds(250), silenceTimeout: .milliseconds(1_500))

    static func runtime() -> ConduitRuntime {
        var configuration = ConduitConfiguration()
        configuration.rateLimit = .unlimited
        configuration.queueDelayOn = .seconds(3_600)
        return ConduitRuntime(configuration: configuration, registry: TransportRegistry.defaults.registering(UDPTransport()))
    }

    /// An in-process relay on udp://127.0.0.1, joined to the cluster at `nats`; its port.
    static func relay(cluster nats: NATSServerProcess, liveness: RelayClusterLiveness, registry: TransportRegistry) async throws -> (RelayServer, Int) {
        let relay = RelayServer(authority: RelayTokenAuthority(secret: ClusterUDPTests.secret), registry: registry)
        let address = try await relay.listen(on: "udp://127.0.0.1:0")
        try await relay.joinCluster(nats.url, liveness: liveness)
        return (relay, try #require(address.port))
    }

    /// A `conduit relay` child process on udp://127.0.0.1:0 in the cluster at `nats`, once it
    /// listens and joined; its port.
    static func relayProcess(cluster nats: NATSServerProcess, arguments: [String] = [], secretFile: String) async throws -> (ChildProcess, Int) {
        let child = try ChildProcess(path: try #require(BenchRoomTests.conduit), arguments: [
            "relay", "udp://127.0.0.1:0", "--secret-file", secretFile, "--cluster", nats.url, "--stats-interval", "86400", "--log-level", "warning",
        ] + arguments)
        let deadline = ContinuousClock.now + .seconds(30)
        let prefix = "relay listening on udp://127.0.0.1:"
        let port = await child.waitForLine(until: deadline) { $0.hasPrefix(prefix) ? Int($0.dropFirst(prefix.count)) : nil }
        let joined = await child.waitForLine(until: deadline) { $0.hasPrefix("relay joined the cluster") ? true : nil }
        guard let port, joined == true else {
            child.kill()
            throw TimedOut(what: "conduit relay to listen and join the cluster: \(child.text().suffix(500))")
        }
        return (child, port)
    }

    static func join(_ runtime: ConduitRuntime, _ name: PeerID, room: RoomID, port: Int) async throws -> (PeerID, Conference, EventLog) {
        let token = RelayToken(room: room, peer: name, canPublish: true, canSubscribe: true, expiresAt: RelayServer.unixTime() + 600)
            .signed(with: ClusterUDPTests.secret)
        let conference = try await runtime.join(relay: "udp://127.0.0.1:\(port)", room: room, as: name, token: token)
        return (name, conference, EventLog(conference))
    }

    /// A file holding the test secret (removed by the caller).
    static func secretFile() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("conduit-cluster-failure-\(UUID().uuidString)").path
        guard FileManager.default.createFile(atPath: path, contents: Data("cluster-room-secret-0123456789ab".utf8)) else {
            throw TimedOut(what: "the secret file \(path)")
        }
        return path
    }

    @Test("a relay process killed: its member is reported left on the other relay within the presence timeout, and rejoins at a relay started later that serves the existing room",
          .enabled(if: BenchRoomTests.conduit != nil, "needs the conduit executable beside the test bundle (swift build --build-tests builds it)"),
          arguments: [false, true])
    func aKilledRelaysMembersLeaveAndRejoinElsewhere(jetStream: Bool) async throws {
        let nats = try await NATSServerProcess.start(jetStream: jetStream)
        let file = try Self.secretFile()
        defer { try? FileManager.default.removeItem(atPath: file) }
        let runtime = Self.runtime()
        let (survivor, survivorPort) = try await Self.relay(cluster: nats, liveness: Self.quick, registry: runtime.registry)
        let (doomed, doomedPort) = try await Self.relayProcess(cluster: nats, arguments: ["--cluster-heartbeat", "0.25", "--cluster-timeout", "1.5"], secretFile: file)
        let (_, alice, aliceLog) = try await Self.join(runtime, "alice", room: "failing", port: survivorPort)
        let (_, bob, bobLog) = try await Self.join(runtime, "bob", room: "failing", port: doomedPort)
        var later: RelayServer?
        var members: [(PeerID, Conference, EventLog)] = []
        do {
            try await aliceLog.waitUntilKnown(["bob"], by: "alice")
            try await bobLog.waitUntilKnown(["alice"], by: "bob")
            doomed.kill()
            let killed = ContinuousClock.now
            // Dead after 1.5 s of silence, then the next peer-list update: 1.5 s measured here; the
            // bound leaves a loaded machine 2 s of scheduling slack.
            try await aliceLog.waitUntilKnown([], by: "alice", limit: .milliseconds(3_500))
            print("cluster failure: a killed relay's member reported left after \(ContinuousClock.now - killed)")
            #expect(await survivor.statistics.cluster.relaysTimedOut == 1)
            #expect(Set(await survivor.members(of: "failing").values) == ["alice"])

            // bob comes back through a relay that joined the cluster after the room began.
            let (relay, laterPort) = try await Self.relay(cluster: nats, liveness: Self.quick, registry: runtime.registry)
            later = relay
            let (_, bobAgain, bobAgainLog) = try await Self.join(runtime, "bob", room: "failing", port: laterPort)
            members = [("alice", alice, aliceLog), ("bob", bobAgain, bobAgainLog)]
            try await bobAgainLog.waitUntilKnown(["alice"], by: "bob")
            try await aliceLog.waitUntilKnown(["bob"], by: "alice")
            try await RelayUDPTests.exchange(members: members, perPeer: 50)
            #expect(Set(await relay.members(of: "failing").values) == ["alice", "bob"])
            #expect(await relay.statistics.cluster.messagesLost == 0)
            // With a roster, both relays number the room alike: bob's old number is not reused.
            if jetStream {
                #expect(await relay.members(of: "failing") == [1: "alice", 3: "bob"])
                #expect(await survivor.members(of: "failing") == [1: "alice", 3: "bob"])
            }
        } catch {
            Issue.record(error)
        }
        doomed.kill()
        aliceLog.cancel()
        bobLog.cancel()
        for (_, conference, log) in members {
            log.cancel()
            await conference.leave()
        }
        await alice.leave()
        try? await bob.leave(timeout: .milliseconds(200))
        await survivor.shutdown()
        await later?.shutdown()
        await nats.stop()
        nats.removeStorage()
    }

    @Test("nats-server crashed and started again: members on one relay keep talking meanwhile, cross-relay traffic resumes by itself, peer lists converge (with a roster: a join after the restart gets the next number and version everywhere)",
          arguments: [false, true])
    func natsRestartIsSurvived(jetStream: Bool) async throws {
        var nats = try await NATSServerProcess.start(jetStream: jetStream)
        let runtime = Self.runtime()
        // The outage (well under a second) is shorter than the 5 s presence timeout: nobody is reported left.
        let liveness = RelayClusterLiveness(heartbeatInterval: .milliseconds(250), silenceTimeout: .seconds(5))
        let (first, firstPort) = try await Self.relay(cluster: nats, liveness: liveness, registry: runtime.registry)
        let (second, secondPort) = try await Self.relay(cluster: nats, liveness: liveness, registry: runtime.registry)
        var members: [(PeerID, Conference, EventLog)] = []
        for (name, port) in [("alice", firstPort), ("bob", firstPort), ("carol", secondPort)] {
            members.append(try await Self.join(runtime, PeerID(stringLiteral: name), room: "restart", port: port))
        }
        do {
            let everyone: Set<PeerID> = ["alice", "bob", "carol"]
            for (peer, _, log) in members { try await log.waitUntilKnown(everyone.subtracting([peer]), by: peer) }
            await nats.crash()
            // alice and bob share a relay: they keep talking while the cluster is down.
            try await RelayUDPTests.exchange(members: Array(members.prefix(2)), perPeer: 50, streamID: 200)
            nats = try await nats.restarted()
            // Each relay hears the other again (their heartbeats cross) before the room talks.
            let heard = (await first.statistics.cluster.messagesReceived, await second.statistics.cluster.messagesReceived)
            try await within("both relays hear each other through the restarted server") {
                while true {
                    let now = (await first.statistics.cluster.messagesReceived, await second.statistics.cluster.messagesReceived)
                    if now.0 > heard.0, now.1 > heard.1 { return }
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
            try await RelayUDPTests.exchange(members: members, perPeer: 50)
            for relay in [first, second] { #expect(Set(await relay.members(of: "restart").values) == everyone) }
            for (peer, _, log) in members {
                let left = log.all.contains { if case .peersChanged(_, let left, _) = $0 { !left.isEmpty } else { false } }
                #expect(!left, "\(peer) saw someone leave during a short outage")
            }
            if jetStream {
                // The roster's stream outlived the restart (file storage): a join now is the fourth.
                members.append(try await Self.join(runtime, "dave", room: "restart", port: secondPort))
                for (peer, _, log) in members.prefix(3) { try await log.waitForVersion(4, of: peer) }
                #expect(await first.members(of: "restart") == [1: "alice", 2: "bob", 3: "carol", 4: "dave"])
                #expect(await second.members(of: "restart") == [1: "alice", 2: "bob", 3: "carol", 4: "dave"])
            }
        } catch {
            Issue.record(error)
        }
        for (_, conference, log) in members {
            log.cancel()
            await conference.leave()
        }
        await first.shutdown()
        await second.shutdown()
        await nats.stop()
        nats.removeStorage()
    }
}
#endif

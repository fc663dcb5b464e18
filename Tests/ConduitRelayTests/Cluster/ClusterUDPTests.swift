#if NATS
import Conduit
import ConduitNetworkTestSupport
import ConduitRelay
import ConduitRelayCore
import ConduitUDP
import Testing

/// Two relays over real UDP sockets on 127.0.0.1, clustered through a real nats-server the test
/// starts on a free loopback port (skipped, saying why, where nats-server is not installed).
@Suite("Relays clustered through NATS", .enabled(if: NATSServerProcess.isInstalled, "nats-server is not installed (Debian: nats-server); Scripts/test.sh installs it"),
       .timeLimit(.minutes(2)))
struct ClusterUDPTests {
    static let secret = try! RelaySecret(bytes: Array("cluster-room-secret-0123456789ab".utf8))

    /// `count` relays on udp://127.0.0.1, each joined to the cluster at `nats`; their addresses.
    static func relays(_ count: Int, cluster nats: NATSServerProcess, registry: TransportRegistry, liveness: RelayClusterLiveness = .init()) async throws -> ([RelayServer], [TransportURL]) {
        var relays: [RelayServer] = []
        var addresses: [TransportURL] = []
        for _ in 0..<count {
            let relay = RelayServer(authority: RelayTokenAuthority(secret: secret), registry: registry)
            addresses.append(try await relay.listen(on: "udp://127.0.0.1:0"))
            try await relay.joinCluster(nats.url, liveness: liveness)
            relays.append(relay)
        }
        return (relays, addresses)
    }

    /// Members leave, relays shut down, the NATS server stops (its JetStream storage removed).
    static func end(_ members: [(PeerID, Conference, EventLog)], _ relays: [RelayServer], _ nats: NATSServerProcess) async {
        for (_, conference, log) in members {
            log.cancel()
            await conference.leave()
        }
        for relay in relays { await relay.shutdown() }
        await nats.stop()
        nats.removeStorage()
    }

    static func join(_ runtime: ConduitRuntime, _ name: String, room: RoomID, at address: TransportURL) async throws -> (PeerID, Conference, EventLog) {
        let peer = PeerID(stringLiteral: name)
        let token = RelayToken(room: room, peer: peer, canPublish: true, canSubscribe: true, expiresAt: RelayServer.unixTime() + 600).signed(with: secret)
        let conference = try await runtime.join(relay: "udp://127.0.0.1:\(address.port!)", room: room, as: peer, token: token)
        return (peer, conference, EventLog(conference))
    }

    @Test("members on two relays see one peer list; every member's reliable messages reach the others exactly once, in order")
    func aRoomSpanningTwoRelays() async throws {
        let nats = try await NATSServerProcess.start()
        var configuration = ConduitConfiguration()
        configuration.rateLimit = .unlimited
        configuration.queueDelayOn = .seconds(3_600)
        let runtime = ConduitRuntime(configuration: configuration, registry: TransportRegistry.defaults.registering(UDPTransport()))
        let (relays, addresses) = try await Self.relays(2, cluster: nats, registry: runtime.registry)
        // alice and bob on relay 0, carol and dave on relay 1.
        var members: [(PeerID, Conference, EventLog)] = []
        for (index, name) in ["alice", "bob", "carol", "dave"].enumerated() {
            members.append(try await Self.join(runtime, name, room: "spanning", at: addresses[index / 2]))
        }
        do {
            let everyone: Set<PeerID> = ["alice", "bob", "carol", "dave"]
            for (peer, _, log) in members { try await log.waitUntilKnown(everyone.subtracting([peer]), by: peer, limit: .seconds(20)) }
            for relay in relays { #expect(Set(await relay.members(of: "spanning").values) == everyone) }
            try await RelayUDPTests.exchange(members: members, perPeer: 200)
            for relay in relays {
                let statistics = await relay.statistics.cluster
                #expect(statistics.messagesLost == 0)
                #expect(statistics.framesForwarded >= 2 * 200, "each of its two members' messages crossed through the cluster")
                #expect(await relay.clusterPublishFailures == 0)
            }
        } catch {
            Issue.record(error)
        }
        await Self.end(members, relays, nats)
    }

    @Test("a token that joined at one relay is refused as a replay at the other")
    func aTokenJoinsOnceInTheCluster() async throws {
        let nats = try await NATSServerProcess.start()
        let runtime = ConduitRuntime(registry: TransportRegistry.defaults.registering(UDPTransport()))
        let (relays, addresses) = try await Self.relays(2, cluster: nats, registry: runtime.registry)
        let token = RelayToken(room: "once", peer: "alice", canPublish: true, canSubscribe: true, expiresAt: RelayServer.unixTime() + 600).signed(with: Self.secret)
        let alice = try await runtime.join(relay: "udp://127.0.0.1:\(addresses[0].port!)", room: "once", as: "alice", token: token)
        await alice.leave()
        do {
            _ = try await within("relay 1 hears of the token's use") {
                while await relays[1].clusterTokenUsesReceived < 1 { try await Task.sleep(for: .milliseconds(10)) }
            }
            await #expect(throws: ConduitError.self) {
                let replay = try await runtime.join(relay: "udp://127.0.0.1:\(addresses[1].port!)", room: "once", as: "alice", token: token)
                await replay.leave()
            }
            #expect(await relays[1].statistics.refusals(.tokenReplayed) == 1)
            #expect(await relays[1].clusterTokenUsesLost == 0)
        } catch {
            Issue.record(error)
        }
        for relay in relays { await relay.shutdown() }
        await nats.stop()
    }

    @Test("a subgroup spans two relays: its data reaches its members on the other relay only, and its session ends there when its creator leaves it")
    func aSubgroupSpansRelays() async throws {
        let nats = try await NATSServerProcess.start()
        let runtime = ConduitRuntime(registry: TransportRegistry.defaults.registering(UDPTransport()))
        let (relays, addresses) = try await Self.relays(2, cluster: nats, registry: runtime.registry)
        var members: [PeerID: (Conference, EventLog)] = [:]
        for (name, relay) in [("alice", 0), ("bob", 1), ("carol", 1)] {
            let peer = PeerID(stringLiteral: name)
            let token = RelayToken(room: "teams", peer: peer, canPublish: true, canSubscribe: true, allowedSubgroups: nil, expiresAt: RelayServer.unixTime() + 600)
            let conference = try await runtime.join(relay: "udp://127.0.0.1:\(addresses[relay].port!)", room: "teams", as: peer, token: token.signed(with: Self.secret))
            members[peer] = (conference, EventLog(conference))
        }
        let (alice, aliceLog) = members["alice"]!
        let (carol, carolLog) = members["carol"]!
        let bobLog = members["bob"]!.1
        do {
            for (peer, (_, log)) in members { try await log.waitUntilKnown(Set(members.keys).subtracting([peer]), by: peer) }
            #expect(await alice.subscribe("pair"))
            #expect(await carol.subscribe("pair"))
            // A barrier: carol's relay announced her subscription before her next frame, so once
            // alice has that frame, alice's relay knows carol is in the subgroup.
            let sync = try await carol.makeOutboundDataSession(streamID: 300, type: .reliableMessage)
            try await aliceLog.wait(for: "carol's main-room session at alice") { $0 == .dataSessionIncoming(streamID: 300, subgroup: nil, type: .reliableMessage, from: "carol") }
            let aliceSync = try await alice.makeInboundDataSession(streamID: 300)
            try await sync.send(Array("sync".utf8))
            #expect(try await read(aliceSync, count: 1).map(\.1) == ["sync"])

            let pair = try await alice.makeOutboundDataSession(streamID: 100, type: .reliableMessage, subgroup: "pair")
            try await carolLog.wait(for: "subgroup incoming at carol") { $0 == .dataSessionIncoming(streamID: 100, subgroup: "pair", type: .reliableMessage, from: "alice") }
            let carolPair = try await carol.makeInboundDataSession(streamID: 100, subgroup: "pair")
            try await pair.send(Array("just us".utf8))
            #expect(try await read(carolPair, count: 1).map(\.1) == ["just us"])
            await alice.unsubscribe("pair")
            try await carolLog.wait(for: "carol hears the subgroup session ended") {
                $0 == .dataSessionEnded(streamID: 100, subgroup: "pair", from: "alice", reason: .sessionEnd)
            }
            #expect(!bobLog.all.contains { if case .dataSessionIncoming(_, "pair"?, _, _) = $0 { true } else { false } })
            for relay in relays { #expect(await relay.statistics.cluster.unknownSubgroup == 0) }
        } catch {
            Issue.record(error)
        }
        for (_, (conference, log)) in members {
            log.cancel()
            await conference.leave()
        }
        for relay in relays { await relay.shutdown() }
        await nats.stop()
    }

    @Test("a member leaving one relay is reported left on the other")
    func aLeaveCrossesRelays() async throws {
        let nats = try await NATSServerProcess.start()
        let runtime = ConduitRuntime(registry: TransportRegistry.defaults.registering(UDPTransport()))
        let (relays, addresses) = try await Self.relays(2, cluster: nats, registry: runtime.registry)
        let (_, alice, aliceLog) = try await Self.join(runtime, "alice", room: "leaving", at: addresses[0])
        let (_, bob, bobLog) = try await Self.join(runtime, "bob", room: "leaving", at: addresses[1])
        do {
            try await aliceLog.waitUntilKnown(["bob"], by: "alice")
            try await bobLog.waitUntilKnown(["alice"], by: "bob")
            await bob.leave()
            try await aliceLog.waitUntilKnown([], by: "alice")
            #expect(Set(await relays[0].members(of: "leaving").values) == ["alice"])
        } catch {
            Issue.record(error)
        }
        aliceLog.cancel()
        bobLog.cancel()
        await alice.leave()
        for relay in relays { await relay.shutdown() }
        await nats.stop()
    }
}
#endif

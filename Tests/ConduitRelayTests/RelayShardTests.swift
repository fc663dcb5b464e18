import Conduit
import ConduitRelay
import ConduitRelayCore
import ConduitUDP
import Testing

/// A relay of two shards (`conduit relay --threads 2`) over real UDP sockets on 127.0.0.1. Links
/// go to the shards in the order they are accepted, so members joined one after another alternate
/// between shard 0 and shard 1: every room here spans both. No NATS: the shards meet in memory.
@Suite("A relay on several shards", .timeLimit(.minutes(2)))
struct RelayShardTests {
    static let secret = try! RelaySecret(bytes: Array("shard-room-secret-0123456789abcd".utf8))

    static func group(_ runtime: ConduitRuntime) async throws -> (RelayShardGroup, TransportURL) {
        let group = RelayShardGroup(threads: 2, authority: RelayTokenAuthority(secret: secret), registry: runtime.registry)
        return (group, try await group.listen(on: "udp://127.0.0.1:0"))
    }

    /// Members' runtime for an exchange: no rate cap, no queue-delay warnings.
    static func senderRuntime() -> ConduitRuntime {
        var configuration = ConduitConfiguration()
        configuration.rateLimit = .unlimited
        configuration.queueDelayOn = .seconds(3_600)
        return ConduitRuntime(configuration: configuration, registry: TransportRegistry.defaults.registering(UDPTransport()))
    }

    static func token(_ peer: PeerID, room: RoomID) -> String {
        RelayToken(room: room, peer: peer, canPublish: true, canSubscribe: true, expiresAt: RelayServer.unixTime() + 600).signed(with: secret)
    }

    /// Joins `names` one after another (so they alternate between the shards).
    static func join(_ names: [PeerID], room: RoomID, at address: TransportURL, _ runtime: ConduitRuntime) async throws -> [(PeerID, Conference, EventLog)] {
        var members: [(PeerID, Conference, EventLog)] = []
        for peer in names {
            let conference = try await runtime.join(relay: "udp://127.0.0.1:\(address.port!)", room: room, as: peer, token: token(peer, room: room))
            members.append((peer, conference, EventLog(conference)))
        }
        return members
    }

    static func end(_ members: [(PeerID, Conference, EventLog)], _ group: RelayShardGroup) async {
        for (_, conference, log) in members {
            log.cancel()
            await conference.leave()
        }
        await group.shutdown()
    }

    @Test("members on two shards see one peer list; every member's reliable messages reach the others exactly once, in order")
    func aRoomAcrossShards() async throws {
        let runtime = Self.senderRuntime()
        let (group, address) = try await Self.group(runtime)
        #expect(await group.spread == .inTurn, "the transport shares no port here: one listener hands links out in turn")
        let everyone: Set<PeerID> = ["alice", "bob", "carol", "dave"]
        let members = try await Self.join(["alice", "bob", "carol", "dave"], room: "spread", at: address, runtime)
        do {
            // alice and carol joined on shard 0, bob and dave on shard 1.
            for shard in group.shards { #expect(await shard.statistics.joins == 2) }
            for (peer, _, log) in members { try await log.waitUntilKnown(everyone.subtracting([peer]), by: peer) }
            for shard in group.shards { #expect(Set(await shard.members(of: "spread").values) == everyone) }
            // One roster for the process: the same numbers on both shards, and every member that
            // heard of the last join heard it as version 4.
            #expect(await group.members(of: "spread", onShard: 0) == [1: "alice", 2: "bob", 3: "carol", 4: "dave"])
            #expect(await group.members(of: "spread", onShard: 1) == [1: "alice", 2: "bob", 3: "carol", 4: "dave"])
            for (peer, _, log) in members.dropLast() { try await log.waitForVersion(4, of: peer) }
            for shard in group.shards { #expect(await shard.usesClusterRoster) }
            try await RelayUDPTests.exchange(members: members, perPeer: 100)
            for shard in group.shards {
                let statistics = await shard.statistics.cluster
                #expect(statistics.messagesLost == 0)
                #expect(statistics.framesForwarded >= 2 * 100, "each of its two members' messages crossed to the other shard")
                #expect(await shard.clusterPublishFailures == 0)
                #expect(await shard.clusterMessagesDroppedOnArrival == 0)
            }
            let total = await group.statistics
            #expect(total.joins == 4)
            #expect(total.cluster.framesReceived == total.cluster.framesForwarded, "every frame sent to the other shard arrived there once")
        } catch {
            Issue.record(error)
        }
        await Self.end(members, group)
    }

    @Test("with UDP listeners sharing the port (reusePort), each shard reads its own socket; the room still gets every message exactly once, in order")
    func aSocketPerShard() async throws {
        let runtime = Self.senderRuntime()
        var udp = UDPTransport.Configuration()
        udp.reusePort = true
        let registry = TransportRegistry.defaults.registering(UDPTransport(configuration: udp))
        let group = RelayShardGroup(threads: 2, authority: RelayTokenAuthority(secret: Self.secret), registry: registry)
        let address = try await group.listen(on: "udp://127.0.0.1:0")
        #expect(await group.spread == .byAddress)
        // The kernel picks each member's shard by its address: wherever they land, the room holds.
        let members = try await Self.join(["p0", "p1", "p2", "p3", "p4", "p5"], room: "by-address", at: address, runtime)
        do {
            var joins = 0
            for shard in group.shards { joins += await shard.statistics.joins }
            #expect(joins == 6)
            try await RelayUDPTests.exchange(members: members, perPeer: 50)
            #expect(await group.statistics.cluster.messagesLost == 0)
        } catch {
            Issue.record(error)
        }
        await Self.end(members, group)
    }

    @Test("a token that joined on one shard is refused as a replay on the other, at once")
    func aTokenJoinsOnceAcrossShards() async throws {
        let runtime = ConduitRuntime(registry: TransportRegistry.defaults.registering(UDPTransport()))
        let (group, address) = try await Self.group(runtime)
        let token = Self.token("alice", room: "once")
        let relay = "udp://127.0.0.1:\(address.port!)"
        let alice = try await runtime.join(relay: relay, room: "once", as: "alice", token: token)
        // The next link goes to shard 1: the replay is checked there, with no wait for any message.
        await #expect(throws: ConduitError.self) {
            let replay = try await runtime.join(relay: relay, room: "once", as: "alice", token: token)
            await replay.leave()
        }
        #expect(await group.shards[1].statistics.refusals(.tokenReplayed) == 1)
        #expect(await group.shards[0].statistics.joins == 1)
        #expect(await group.shards[1].statistics.joins == 0)
        await alice.leave()
        await group.shutdown()
    }

    @Test("a member leaving one shard is reported left on the other")
    func aLeaveCrossesShards() async throws {
        let runtime = ConduitRuntime(registry: TransportRegistry.defaults.registering(UDPTransport()))
        let (group, address) = try await Self.group(runtime)
        var members = try await Self.join(["alice", "bob"], room: "leaving", at: address, runtime)
        do {
            try await members[0].2.waitUntilKnown(["bob"], by: "alice")
            try await members[1].2.waitUntilKnown(["alice"], by: "bob")
            let (_, bob, bobLog) = members.removeLast()
            bobLog.cancel()
            await bob.leave()
            try await members[0].2.waitUntilKnown([], by: "alice")
            #expect(Set(await group.shards[0].members(of: "leaving").values) == ["alice"])
            #expect(await group.shards[1].statistics.leaves == 1)
        } catch {
            Issue.record(error)
        }
        await Self.end(members, group)
    }
}

#if NATS
import Conduit
import ConduitNATS
import ConduitNetworkTestSupport
import ConduitRelay
import ConduitRelayCore
import ConduitUDP
import Testing

/// Relays over real UDP sockets on 127.0.0.1, clustered through a real nats-server with JetStream
/// (its storage in a temporary directory, removed after): the roster gives every relay the same
/// member numbers and peer-list versions (issue 16, "one versioned peer list, the same on every
/// relay").
@Suite("Relays clustered through NATS with a roster", .enabled(if: NATSServerProcess.isInstalled, "nats-server is not installed (Debian: nats-server); Scripts/test.sh installs it"),
       .timeLimit(.minutes(2)))
struct ClusterRosterUDPTests {
    @Test("three relays: one numbering and one version everywhere; a leave takes the next version on every relay; data flows with the roster's numbers")
    func threeRelaysOneVersionedPeerList() async throws {
        let nats = try await NATSServerProcess.start(jetStream: true)
        var configuration = ConduitConfiguration()
        configuration.rateLimit = .unlimited
        configuration.queueDelayOn = .seconds(3_600)
        let runtime = ConduitRuntime(configuration: configuration, registry: TransportRegistry.defaults.registering(UDPTransport()))
        let (relays, addresses) = try await ClusterUDPTests.relays(3, cluster: nats, registry: runtime.registry)
        var members: [(PeerID, Conference, EventLog)] = []
        do {
            for relay in relays {
                let why = await relay.clusterRosterUnavailable
                #expect(await relay.usesClusterRoster, "\(why ?? "")")
            }
            let names = ["alice", "bob", "carol", "dave", "erin", "frank"]
            for (index, name) in names.enumerated() {
                members.append(try await ClusterUDPTests.join(runtime, name, room: "roster", at: addresses[index % 3]))
            }
            let everyone = Set(names.map { PeerID(stringLiteral: $0) })
            for (peer, _, log) in members { try await log.waitUntilKnown(everyone.subtracting([peer]), by: peer, limit: .seconds(20)) }
            // Six joins, six versions; every member that heard of a join heard it as the same version.
            for (peer, _, log) in members.dropLast() { try await log.waitForVersion(6, of: peer) }
            let lists = await relays.asyncMap { await $0.members(of: "roster") }
            #expect(lists[0].count == 6)
            #expect(lists.allSatisfy { $0 == lists[0] }, "\(lists)")
            #expect(Set(lists[0].keys) == Set(1...6))
            try await RelayUDPTests.exchange(members: members, perPeer: 50)
            // erin leaves: version 7 for everyone left, on every relay.
            let (_, erin, erinLog) = members.remove(at: 4)
            erinLog.cancel()
            await erin.leave()
            for (peer, _, log) in members { try await log.waitForVersion(7, of: peer) }
            let after = await relays.asyncMap { await $0.members(of: "roster") }
            #expect(after.allSatisfy { $0 == after[0] } && after[0].count == 5, "\(after)")
            for relay in relays {
                let statistics = await relay.statistics.cluster
                #expect(statistics.rosterMalformed == 0)
                #expect(statistics.heldDropped == 0)
                #expect(statistics.messagesLost == 0)
                #expect(statistics.rosterRecordsApplied == 7)
            }
        } catch {
            Issue.record(error)
        }
        await ClusterUDPTests.end(members, relays, nats)
    }

    @Test("a relay started later reads the roster from its start: its members get the same numbers and the next version")
    func aLateRelayJoinsTheSameNumbering() async throws {
        let nats = try await NATSServerProcess.start(jetStream: true)
        let runtime = ConduitRuntime(registry: TransportRegistry.defaults.registering(UDPTransport()))
        var (relays, addresses) = try await ClusterUDPTests.relays(1, cluster: nats, registry: runtime.registry)
        var members: [(PeerID, Conference, EventLog)] = []
        do {
            members.append(try await ClusterUDPTests.join(runtime, "alice", room: "late", at: addresses[0]))
            members.append(try await ClusterUDPTests.join(runtime, "bob", room: "late", at: addresses[0]))
            try await members[0].2.waitForVersion(2, of: "alice")
            let (later, laterAddresses) = try await ClusterUDPTests.relays(1, cluster: nats, registry: runtime.registry)
            relays += later
            addresses += laterAddresses
            members.append(try await ClusterUDPTests.join(runtime, "carol", room: "late", at: addresses[1]))
            try await members[2].2.waitUntilKnown(["alice", "bob"], by: "carol", limit: .seconds(20))
            for (peer, _, log) in members.prefix(2) { try await log.waitForVersion(3, of: peer) }
            let lists = await relays.asyncMap { await $0.members(of: "late") }
            #expect(lists[0] == [1: "alice", 2: "bob", 3: "carol"])
            #expect(lists[1] == lists[0])
        } catch {
            Issue.record(error)
        }
        await ClusterUDPTests.end(members, relays, nats)
    }

    @Test("an emptied room's records leave the stream; a relay started afterwards reads what is left and numbers the room as the others do")
    func anEmptiedRoomLeavesTheStream() async throws {
        let nats = try await NATSServerProcess.start(jetStream: true)
        let runtime = ConduitRuntime(registry: TransportRegistry.defaults.registering(UDPTransport()))
        // Records go 300 ms after their room emptied, not a minute.
        let liveness = RelayClusterLiveness(rosterCompactionDelay: .milliseconds(300))
        var (relays, addresses) = try await ClusterUDPTests.relays(1, cluster: nats, registry: runtime.registry, liveness: liveness)
        var members: [(PeerID, Conference, EventLog)] = []
        let client = try await NATSClient.connect(to: nats.url)
        let jetStream = try NATSJetStream(client: client)
        do {
            members.append(try await ClusterUDPTests.join(runtime, "carol", room: "kept", at: addresses[0]))
            for name in ["alice", "bob"] { members.append(try await ClusterUDPTests.join(runtime, name, room: "gone", at: addresses[0])) }
            try await members[1].2.waitForVersion(2, of: "alice")
            for (_, conference, log) in members.suffix(2) {
                log.cancel()
                await conference.leave()
            }
            members.removeLast(2)
            // The stream keeps carol's join alone (4 records were appended, 3 are gone).
            var state = try await jetStream.state(ofStream: RelayRosterRecord.streamName)
            let deadline = ContinuousClock.now + .seconds(10)
            while state.messages != 1, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
                state = try await jetStream.state(ofStream: RelayRosterRecord.streamName)
            }
            #expect(state.messages == 1 && state.last == 5, "\(state)")
            let purges = await relays[0].clusterRosterPurges
            #expect(purges.asked == 1 && purges.failed == 0, "\(purges)")
            let (later, laterAddresses) = try await ClusterUDPTests.relays(1, cluster: nats, registry: runtime.registry, liveness: liveness)
            relays += later
            addresses += laterAddresses
            members.append(try await ClusterUDPTests.join(runtime, "dave", room: "gone", at: addresses[1]))
            members.append(try await ClusterUDPTests.join(runtime, "erin", room: "gone", at: addresses[0]))
            try await members[1].2.waitForVersion(2, of: "dave")
            let lists = await relays.asyncMap { await $0.members(of: "gone") }
            #expect(lists[0] == [1: "dave", 2: "erin"])
            #expect(lists[1] == lists[0])
            #expect(await relays[1].statistics.cluster.rosterGaps == 0)
        } catch {
            Issue.record(error)
        }
        jetStream.close()
        await client.close()
        await ClusterUDPTests.end(members, relays, nats)
    }

    @Test("without JetStream the cluster still works, each relay numbering its own, and says why it has no roster")
    func withoutJetStreamThereIsNoRoster() async throws {
        let nats = try await NATSServerProcess.start()
        let runtime = ConduitRuntime(registry: TransportRegistry.defaults.registering(UDPTransport()))
        let (relays, _) = try await ClusterUDPTests.relays(1, cluster: nats, registry: runtime.registry)
        #expect(await relays[0].usesClusterRoster == false)
        let why = await relays[0].clusterRosterUnavailable
        #expect(why?.contains("js_AddStream") == true, "\(why ?? "nil")")
        for relay in relays { await relay.shutdown() }
        await nats.stop()
    }
}

extension Array where Element: Sendable {
    func asyncMap<T: Sendable>(_ transform: (Element) async -> T) async -> [T] {
        var results: [T] = []
        for element in self { results.append(await transform(element)) }
        return results
    }
}
#endif

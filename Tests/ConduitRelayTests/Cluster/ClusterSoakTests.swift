#if NATS
import Conduit
import ConduitNetworkTestSupport
import ConduitRelay
import ConduitRelayCore
import ConduitTooling
import Foundation
import Testing

/// Issue 16's cluster target at full size (behind CONDUIT_SOAK=1, like the other full-size runs):
/// 3 relays + NATS, 1 sender, 9 receivers (3 per relay), 3,000 reliable messages over UDP, the
/// third relay (a `conduit relay` process) killed mid-run. The NATS server has JetStream, so the
/// relays share a roster: one numbering and one peer-list version on every relay.
@Suite("Clustered relays at full size", .enabled(if: ProcessInfo.processInfo.environment["CONDUIT_SOAK"] == "1", "set CONDUIT_SOAK=1"),
       .enabled(if: NATSServerProcess.isInstalled && BenchRoomTests.conduit != nil, "needs nats-server and the conduit executable"),
       .timeLimit(.minutes(5)))
struct ClusterSoakTests {
    @Test("3 relays, 1 sender, 9 receivers, 3,000 reliable messages, one relay killed mid-run: its members reported left elsewhere within 5 s, the others lose nothing")
    func threeRelaysOneKilledMidRun() async throws {
        let messages = 3_000
        let nats = try await NATSServerProcess.start(jetStream: true)
        let file = try ClusterFailureTests.secretFile()
        defer { try? FileManager.default.removeItem(atPath: file) }
        let runtime = ClusterFailureTests.runtime()
        // Relays 0 and 1 in this process (their peer lists can be read), relay 2 a child process.
        var relays: [RelayServer] = []
        var ports: [Int] = []
        for _ in 0..<2 {
            let (relay, port) = try await ClusterFailureTests.relay(cluster: nats, liveness: .init(), registry: runtime.registry)
            relays.append(relay)
            ports.append(port)
        }
        // One shard: `conduit relay` runs one per core by default, each a node of the cluster, and
        // how many of them hosted the room (so timed out in it) would depend on where the kernel
        // put the three members.
        let (doomed, doomedPort) = try await ClusterFailureTests.relayProcess(cluster: nats, arguments: ["--threads", "1"], secretFile: file)
        ports.append(doomedPort)

        var members: [(PeerID, Conference, EventLog)] = [try await ClusterFailureTests.join(runtime, "sender", room: "soak", port: ports[0])]
        for index in 0..<9 {
            members.append(try await ClusterFailureTests.join(runtime, PeerID(stringLiteral: "r\(index)"), room: "soak", port: ports[index / 3]))
        }
        let everyone = Set(members.map(\.0))
        let dead: Set<PeerID> = ["r6", "r7", "r8"]
        do {
            for (peer, _, log) in members { try await log.waitUntilKnown(everyone.subtracting([peer]), by: peer, limit: .seconds(30)) }
            for relay in relays { #expect(Set(await relay.members(of: "soak").values) == everyone, "one peer list on every relay") }
            let numbered = await relays.asyncMap { await $0.members(of: "soak") }
            #expect(numbered[1] == numbered[0], "one numbering on every relay: \(numbered)")
            for relay in relays { #expect(await relay.usesClusterRoster) }

            let sender = members[0].1
            let outbound = try await sender.makeOutboundDataSession(streamID: 100, type: .reliableMessage)
            var receivers: [Task<[Int], Never>] = []
            for (peer, conference, log) in members.dropFirst() {
                try await log.wait(for: "\(peer): incoming", limit: .seconds(30)) { if case .dataSessionIncoming(100, nil, .reliableMessage, _) = $0 { true } else { false } }
                let inbound = try await conference.makeInboundDataSession(streamID: 100, expecting: .reliableMessage)
                receivers.append(Task {
                    var indices: [Int] = []
                    for await event in inbound.events {
                        guard case .message(let message) = event else { continue }
                        indices.append(Int(String(decoding: message.bytes, as: UTF8.self).split(separator: "#")[1]) ?? -1)
                        if indices.count == messages { break }
                    }
                    return indices
                })
            }
            let survivors = members.filter { !dead.contains($0.0) }
            var reportedLeft: [Task<Duration?, Never>] = []
            for index in 0..<messages {
                if index == messages / 2 {
                    doomed.kill()
                    let killed = ContinuousClock.now
                    for (peer, _, log) in survivors {
                        let expected = everyone.subtracting(dead).subtracting([peer])
                        reportedLeft.append(Task {
                            (try? await log.waitUntilKnown(expected, by: peer, limit: .seconds(10))).map { ContinuousClock.now - killed }
                        })
                    }
                }
                try await outbound.send(Array("sender#\(index)#\(String(repeating: ".", count: 200 + index % 100))".utf8))
            }
            for (task, (peer, _, _)) in zip(reportedLeft, survivors) {
                let after = await task.value
                #expect(after != nil && after! <= .seconds(5), "\(peer) heard the killed relay's members leave after \(after.map { "\($0)" } ?? "never")")
                print("cluster soak: \(peer) heard the killed relay's 3 members leave after \(after.map { "\($0)" } ?? "never")")
            }
            // The three left in one record: every survivor is at the same version (10 joins, 1 leave).
            for (peer, _, log) in survivors {
                let version = log.lastVersion
                #expect(version == 11, "\(peer) at peer-list version \(version.map(String.init) ?? "none")")
            }
            for (index, receiver) in receivers.enumerated() where index < 6 {
                let indices = try await within("r\(index) receives \(messages) messages", limit: .seconds(120)) { await receiver.value }
                #expect(indices == Array(0..<messages), "r\(index): \(indices.count) messages, in order: \(indices == indices.sorted())")
            }
            for receiver in receivers.suffix(3) { receiver.cancel() }
            for relay in relays {
                let statistics = await relay.statistics.cluster
                #expect(statistics.messagesLost == 0)
                #expect(statistics.relaysTimedOut == 1)
                #expect(Set(await relay.members(of: "soak").values) == everyone.subtracting(dead))
                print("cluster soak: relay statistics \(statistics)")
            }
        } catch {
            Issue.record(error)
        }
        doomed.kill()
        for (peer, conference, log) in members {
            log.cancel()
            if dead.contains(peer) { try? await conference.leave(timeout: .milliseconds(200)) } else { await conference.leave() }
        }
        for relay in relays { await relay.shutdown() }
        await nats.stop()
        nats.removeStorage()
    }
}
#endif

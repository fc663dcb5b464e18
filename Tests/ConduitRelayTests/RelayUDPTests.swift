import Conduit
import ConduitRelay
import ConduitUDP
import Foundation
import Testing
import ConduitImpairment

/// A room over real UDP sockets on 127.0.0.1, every client behind its own impairment proxy with
/// 10 % loss in each direction, so every leg (sender → relay, relay → receiver) is lossy.
/// CONDUIT_SOAK=1 sends the brief's full 1,000 messages per peer; the default is smaller for CI.
@Suite("Rooms over lossy UDP", .timeLimit(.minutes(3)))
struct RelayUDPTests {
    static let soak = ProcessInfo.processInfo.environment["CONDUIT_SOAK"] == "1"

    @Test("8 peers, 10 % loss on every leg: every member gets every other member's messages exactly once, in per-sender order")
    func eightPeersThroughLoss() async throws {
        let peers = 8
        let perPeer = Self.soak ? 1_000 : 150
        var configuration = ConduitConfiguration()
        configuration.rateLimit = .unlimited
        configuration.queueDelayOn = .seconds(3_600)
        let runtime = ConduitRuntime(configuration: configuration, registry: TransportRegistry.defaults.registering(UDPTransport()))
        let secret = try RelaySecret(bytes: Array("udp-room-secret-0123456789abcdef".utf8))
        let server = RelayServer(authority: RelayTokenAuthority(secret: secret), registry: runtime.registry)
        let bound = try await server.listen(on: "udp://127.0.0.1:0")

        var proxies: [ImpairmentProxy] = []
        var members: [(PeerID, Conference, EventLog)] = []
        for index in 0..<peers {
            var impairment = ImpairmentConfiguration()
            impairment.loss = 0.10
            impairment.seed = UInt64(100 + index)
            let proxy = try await ImpairmentProxy.start(.init(
                listen: UDPEndpoint(host: "127.0.0.1", port: 0),
                upstream: UDPEndpoint(host: "127.0.0.1", port: bound.port!),
                impairment: impairment
            ))
            proxies.append(proxy)
            let peer = PeerID(stringLiteral: "peer\(index)")
            let token = RelayToken(room: "lossy", peer: peer, canPublish: true, canSubscribe: true, expiresAt: RelayServer.unixTime() + 600).signed(with: secret)
            let conference = try await runtime.join(relay: "udp://127.0.0.1:\(proxy.localAddress.port!)", room: "lossy", as: peer, token: token)
            members.append((peer, conference, EventLog(conference)))
        }
        do {
            try await Self.exchange(members: members, perPeer: perPeer)
        } catch {
            Issue.record(error)
        }
        for (_, conference, log) in members {
            log.cancel()
            await conference.leave()
        }
        await server.shutdown()
        var dropped = 0
        for proxy in proxies {
            let statistics = await proxy.statistics()
            dropped += statistics.clientToUpstream.dropped + statistics.upstreamToClient.dropped
            await proxy.stop()
        }
        #expect(dropped > 0, "the proxies dropped nothing: the test did not test loss")
        print("rooms over lossy UDP: \(peers) peers × \(perPeer) messages, \(dropped) datagrams dropped by the proxies")
    }

    static func exchange(members: [(PeerID, Conference, EventLog)], perPeer: Int, streamID: StreamID = 100) async throws {
        let peers = members.count
        // Everyone knows everyone before anyone sends.
        for (_, conference, _) in members {
            try await within("the full peer list") { while await conference.peers.count < peers - 1 { try await Task.sleep(for: .milliseconds(10)) } }
        }
        var outbound: [OutboundDataSession] = []
        for (_, conference, _) in members {
            outbound.append(try await conference.makeOutboundDataSession(streamID: streamID, type: .reliableMessage))
        }
        var inbound: [InboundDataSession] = []
        for (_, conference, log) in members {
            try await log.wait(for: "incoming", limit: .seconds(30)) { if case .dataSessionIncoming(streamID, nil, .reliableMessage, _) = $0 { true } else { false } }
            inbound.append(try await conference.makeInboundDataSession(streamID: streamID, expecting: .reliableMessage))
        }

        let expected = (peers - 1) * perPeer
        let receivers = inbound.map { session in
            Task { () -> [PeerID: [Int]] in
                var bySender: [PeerID: [Int]] = [:]
                var count = 0
                for await event in session.events {
                    guard case .message(let message) = event else { continue }
                    let text = String(decoding: message.bytes, as: UTF8.self)
                    let index = Int(text.split(separator: "#")[1]) ?? -1
                    bySender[message.sender ?? "?", default: []].append(index)
                    // The payload names its sender too: the relay's stamp must agree with it.
                    #expect(text.hasPrefix("\(message.sender?.rawValue ?? "?")#"))
                    count += 1
                    if count == expected { break }
                }
                return bySender
            }
        }
        // Every wait below ends: a send waiting for window space and a receiver waiting for a
        // message that never comes are cancelled when their time is up, and the test then fails
        // saying what arrived. A wait that did not end kept the test past its time limit, and the
        // whole test run with it (under AddressSanitizer in a CI check of stop 28).
        let senders = outbound
        let names = members.map(\.0.rawValue)
        try await within("every member sends \(perPeer) messages", limit: .seconds(150)) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (index, session) in senders.enumerated() {
                    let name = names[index]
                    group.addTask {
                        for sequence in 0..<perPeer {
                            let padding = String(repeating: ".", count: 40 + (sequence * 37 + index * 11) % 400)
                            try await session.send(Array("\(name)#\(sequence)#\(padding)".utf8))
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        let receiveDeadline = ContinuousClock.now + .seconds(150)
        for (index, receiver) in receivers.enumerated() {
            let timer = Task {
                try await Task.sleep(until: receiveDeadline)
                receiver.cancel()
            }
            let bySender = await receiver.value
            timer.cancel()
            #expect(ContinuousClock.now < receiveDeadline, "peer\(index) was still waiting for messages after 150 s")
            #expect(bySender.count == peers - 1, "peer\(index) heard from \(bySender.count) senders")
            #expect(bySender[members[index].0] == nil, "peer\(index) heard itself")
            for (sender, indices) in bySender {
                #expect(indices == Array(0..<perPeer), "peer\(index) from \(sender): \(indices.count) messages, in order: \(indices == indices.sorted())")
            }
        }
    }
}

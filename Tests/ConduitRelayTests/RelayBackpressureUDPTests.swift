import Conduit
import ConduitRelay
import ConduitRelayCore
import ConduitUDP
import Foundation
import Testing

/// One fast sender (rate cap off) to a room of receivers through a real relay over UDP on
/// 127.0.0.1: the relay slows the sender rather than disconnect receivers, and the sender's
/// leave right after its last send overtakes none of its data. The relay's queues are kept
/// small here so a relay without backpressure would cut every receiver off within the first
/// few hundred messages. CONDUIT_SOAK=1 runs the 20 receivers × 10,000 messages.
@Suite("Rooms under load over UDP", .timeLimit(.minutes(5)))
struct RelayBackpressureUDPTests {
    static let soak = ProcessInfo.processInfo.environment["CONDUIT_SOAK"] == "1"

    @Test("1 sender to many receivers, 1 KiB reliable, cap off: all of it, once, in order; nobody disconnected")
    func oneFastSenderToARoom() async throws {
        let receivers = Self.soak ? 20 : 6
        let messages = Self.soak ? 10_000 : 1_500
        var configuration = ConduitConfiguration()
        configuration.rateLimit = .unlimited
        configuration.queueDelayOn = .seconds(3_600)
        let runtime = ConduitRuntime(configuration: configuration, registry: TransportRegistry.defaults.registering(UDPTransport()))
        let secret = try RelaySecret(bytes: Array("udp-load-secret-0123456789abcdef".utf8))
        let relayConfiguration = Self.soak
            ? RelayConfiguration()
            : RelayConfiguration(maxQueuedBytesPerReceiver: 256 * 1024, receiverHighWater: 64 * 1024)
        let server = RelayServer(authority: RelayTokenAuthority(secret: secret), configuration: relayConfiguration, registry: runtime.registry)
        let bound = try await server.listen(on: "udp://127.0.0.1:0")
        func join(_ name: String) async throws -> Conference {
            let token = RelayToken(room: "load", peer: PeerID(stringLiteral: name), canPublish: true, canSubscribe: true, expiresAt: RelayServer.unixTime() + 600)
                .signed(with: secret)
            return try await runtime.join(relay: "udp://127.0.0.1:\(bound.port!)", room: "load", as: PeerID(stringLiteral: name), token: token)
        }

        var listening: [(Conference, EventLog)] = []
        for index in 0..<receivers {
            let conference = try await join("receiver\(index)")
            listening.append((conference, EventLog(conference)))
        }
        let sender = try await join("sender")
        try await within("the sender sees every receiver") { while await sender.peers.count < receivers { try await Task.sleep(for: .milliseconds(10)) } }
        let outbound = try await sender.makeOutboundDataSession(streamID: 100, type: .reliableMessage)
        var inbound: [InboundDataSession] = []
        for (conference, log) in listening {
            try await log.wait(for: "incoming", limit: .seconds(30)) { if case .dataSessionIncoming(100, nil, .reliableMessage, _) = $0 { true } else { false } }
            inbound.append(try await conference.makeInboundDataSession(streamID: 100, expecting: .reliableMessage))
        }
        let readers = inbound.map { session in
            Task { () -> [Int] in
                var indices: [Int] = []
                for await event in session.events {
                    guard case .message(let message) = event else { continue }
                    indices.append(Int(message.bytes.prefix(8).reduce(0) { $0 << 8 | Int($1) }))
                    if indices.count == messages { break }
                }
                return indices
            }
        }
        for index in 0..<messages {
            var payload = [UInt8](repeating: UInt8(truncatingIfNeeded: index), count: 1_024)
            withUnsafeBytes(of: UInt64(index).bigEndian) { payload.replaceSubrange(0..<8, with: $0) }
            try await outbound.send(payload)
        }
        // Leave at once: the relay must process the leave after every frame sent before it.
        await outbound.close()
        await sender.leave()

        for (index, reader) in readers.enumerated() {
            let indices = try await within("receiver\(index) gets \(messages) messages", limit: .seconds(240)) { await reader.value }
            let allOnceInOrder = indices == Array(0..<messages)
            #expect(allOnceInOrder, "receiver\(index): \(indices.count) messages, in order: \(indices == indices.sorted())")
        }
        let statistics = await server.statistics
        #expect(statistics.slowReceiversDisconnected == 0)
        #expect(statistics.refusals.isEmpty, "refused: \(statistics.refusals)")
        #expect(await server.members(of: "load").count == receivers)
        print("rooms under load: 1 → \(receivers) × \(messages) × 1 KiB; sender paused \(statistics.sendersPaused) times, \(statistics.laggingReceivers) lagging")
        for (conference, log) in listening {
            log.cancel()
            await conference.leave()
        }
        await server.shutdown()
    }
}


import Conduit
import ConduitRelay
import ConduitRelayCore
import ConduitUDP
import Foundation
import Testing

/// Issue 16, through a real relay over UDP on 127.0.0.1: a member that sends but never reads is
/// isolated as a slow receiver while the relay holds its link unread (backpressure). Its messages
/// that the relay's link had acknowledged, so that its `close` returned, used to be refused as
/// `notJoined` once it was isolated. Now the relay reads its closed link to the end and forwards
/// them: the member that reads gets every one, once, in order.
@Suite("An isolated sender over UDP", .serialized, .timeLimit(.minutes(5)))
struct IsolatedSenderUDPTests {
    @Test("a sender isolated while the relay held it unread: every message it was told was delivered reaches the others")
    func anIsolatedSendersAcknowledgedMessagesGoOn() async throws {
        // Three of five stop reading, and nobody lags (laggingAfter is out of reach: with it,
        // whoever filled first lagged before the others filled, and the room moved on): the room
        // is held until the rule for receivers that take nothing isolates them, sam first (its
        // buffers are the smallest, so its queue at the relay went above the mark first). While
        // fay and flo still hold the room, sam's link is not read: what it sent waits there,
        // acknowledged. 5 s: at 2 s, under ThreadSanitizer, a receiver that reads fell that far
        // behind too (RelayBackpressureUDPTests). With the relay of before, reed never got the
        // rest of sam's messages (refused as notJoined): the test ran into its time limit.
        let relay = RelayConfiguration(receiverHighWater: 64 * 1024, laggingAfter: .seconds(60), isolateAfter: .seconds(5))
        let room = try await UDPRoom.start(relay: relay)
        let sam = try await room.join("sam", clientBuffers: 64 * 1024)      // sends, never reads
        let tess = try await room.join("tess", clientBuffers: 512 * 1024)  // sends, reads
        let fay = try await room.join("fay", clientBuffers: 128 * 1024)    // never reads
        let flo = try await room.join("flo", clientBuffers: 128 * 1024)    // never reads
        let reed = try await room.join("reed", clientBuffers: 512 * 1024)  // reads
        for (conference, _) in [sam, tess, fay, flo, reed] {
            try await within("the room fills") { while await conference.peers.count < 4 { try await Task.sleep(for: .milliseconds(10)) } }
        }
        let samOut = try await sam.0.makeOutboundDataSession(streamID: 100, type: .reliableMessage)
        let tessOut = try await tess.0.makeOutboundDataSession(streamID: 200, type: .reliableMessage)
        // Everyone takes every stream as an inbound session; only tess and reed read theirs.
        var unread: [InboundDataSession] = []
        for (conference, log) in [sam, fay, flo] {
            for stream in (conference === sam.0 ? [200] : [100, 200]) as [StreamID] {
                try await log.wait(for: "incoming \(stream)") { if case .dataSessionIncoming(stream, nil, .reliableMessage, _) = $0 { true } else { false } }
                unread.append(try await conference.makeInboundDataSession(streamID: stream, expecting: .reliableMessage))
            }
        }
        try await tess.1.wait(for: "sam's stream") { if case .dataSessionIncoming(100, nil, .reliableMessage, _) = $0 { true } else { false } }
        let atTess = LoadRoom.read(Self.count, from: try await tess.0.makeInboundDataSession(streamID: 100, expecting: .reliableMessage))
        var readers: [Task<[Int], Never>] = []
        for stream in [100, 200] as [StreamID] {
            try await reed.1.wait(for: "incoming \(stream)") { if case .dataSessionIncoming(stream, nil, .reliableMessage, _) = $0 { true } else { false } }
            readers.append(LoadRoom.read(Self.count, from: try await reed.0.makeInboundDataSession(streamID: stream, expecting: .reliableMessage)))
        }
        let atReed = readers

        // tess's messages fill sam's, fay's and flo's queues at the relay, and the room is held.
        // Only then does sam send: its messages wait unread in its link at the relay,
        // acknowledged, so its close returns while the room is held.
        let tessSends = Task { try await Self.send(Self.count, on: tessOut) }
        try await within("the room held", limit: .seconds(60)) { await room.server.waitUntil { $0.statistics.sendersPaused > 0 } }
        try await Self.send(Self.count, on: samOut)
        try await within("tess's messages acknowledged", limit: .seconds(120)) { try await tessSends.value }

        let fromSamAtReed = try await within("reed gets sam's", limit: .seconds(120)) { await atReed[0].value }
        #expect(fromSamAtReed == Array(0..<Self.count), "reed got \(fromSamAtReed.count) of sam's \(Self.count)")
        let fromSamAtTess = try await within("tess gets sam's", limit: .seconds(120)) { await atTess.value }
        #expect(fromSamAtTess == Array(0..<Self.count), "tess got \(fromSamAtTess.count) of sam's \(Self.count)")
        let fromTess = try await within("reed gets tess's", limit: .seconds(120)) { await atReed[1].value }
        #expect(fromTess == Array(0..<Self.count), "reed got \(fromTess.count) of tess's \(Self.count)")

        let statistics = await room.server.statistics
        #expect(statistics.slowReceiversDisconnected == 3, "\(statistics)")
        // sam's frames read after it was isolated: the path this test is about was taken.
        #expect(statistics.framesAfterIsolation > 0, "\(statistics)")
        #expect(statistics.refusals.isEmpty, "refused: \(statistics.refusals)")
        #expect(statistics.isolatedReadsCutShort == 0)
        withExtendedLifetime(unread) {}
        for (conference, log) in [sam, tess, fay, flo, reed] {
            log.cancel()
            await conference.leave()
        }
        await room.server.shutdown()
    }

    static let count = 1_500

    /// `count` 1 KiB messages numbered in their first 8 bytes, then a close that returns once the
    /// relay acknowledged every one (else it throws).
    static func send(_ count: Int, on session: OutboundDataSession) async throws {
        for index in 0..<count {
            var payload = [UInt8](repeating: UInt8(truncatingIfNeeded: index), count: 1_024)
            withUnsafeBytes(of: UInt64(index).bigEndian) { payload.replaceSubrange(0..<8, with: $0) }
            try await session.send(payload)
        }
        try await session.close(timeout: .seconds(120))
    }
}

/// A relay on a UDP loopback port, and members joining it from runtimes of their own.
struct UDPRoom {
    let server: RelayServer
    let port: Int
    static let secret = try! RelaySecret(bytes: Array("udp-isolated-secret-0123456789ab".utf8))

    static func start(relay: RelayConfiguration) async throws -> UDPRoom {
        let registry = TransportRegistry.defaults.registering(UDPTransport())
        let server = RelayServer(authority: RelayTokenAuthority(secret: secret), configuration: relay, registry: registry)
        let bound = try await server.listen(on: "udp://127.0.0.1:0")
        return UDPRoom(server: server, port: bound.port!)
    }

    /// Joins `name` from a runtime whose inbound buffer and reliability receive window hold
    /// `clientBuffers` bytes each: what a member that stops reading takes before its queue at
    /// the relay grows.
    func join(_ name: String, clientBuffers: Int) async throws -> (Conference, EventLog) {
        var configuration = ConduitConfiguration()
        configuration.inboundBufferBytes = clientBuffers
        configuration.rateLimit = .unlimited
        configuration.queueDelayOn = .seconds(3_600)
        let runtime = ConduitRuntime(configuration: configuration, registry: TransportRegistry.defaults.registering(UDPTransport()))
        let peer = PeerID(stringLiteral: name)
        let token = RelayToken(room: "load", peer: peer, canPublish: true, canSubscribe: true, expiresAt: RelayServer.unixTime() + 600).signed(with: Self.secret)
        let conference = try await runtime.join(relay: "udp://127.0.0.1:\(port)?receive-window=\(clientBuffers)", room: "load", as: peer, token: token)
        return (conference, EventLog(conference))
    }
}

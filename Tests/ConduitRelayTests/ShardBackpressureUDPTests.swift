import Conduit
import ConduitRelay
import ConduitRelayCore
import ConduitUDP
import Testing

/// Backpressure across the shards of one relay, over real UDP sockets on 127.0.0.1: one fast
/// sender (rate cap off) on shard 0, ten receivers on shard 1. The receivers' queues are on the
/// other shard, so only its `pressure` can slow the sender. The queues are kept small (16 KiB
/// high-water mark, 256 KiB cap) so that pressure crosses shards many times in a run (printed).
/// Pressure alone came too late under load: what the sending shard had already published (a
/// backlog in the bus, a whole read of the sender's link) reached the receivers past their cap, and
/// a CI run isolated all ten at message 1,744. The in-process bus's flow control (a shard reads no
/// link while another is `backlogLimit` messages behind, a read handed over 32 frames at a time)
/// bounds that; InProcessBusFlowControlTests checks it deterministically, and the sans-IO
/// ClusterPressureTests are the ones that fail without pressure.
@Suite("Backpressure across the shards of one relay", .serialized, .timeLimit(.minutes(5)))
struct ShardBackpressureUDPTests {
    @Test("1 sender on one shard to 10 receivers on the other, 1 KiB reliable, cap off: all of it, once, in order; nobody isolated")
    func oneFastSenderToReceiversOnTheOtherShard() async throws {
        let receivers = 10
        let messages = 3_000
        var configuration = ConduitConfiguration()
        configuration.rateLimit = .unlimited
        configuration.queueDelayOn = .seconds(3_600)
        let runtime = ConduitRuntime(configuration: configuration, registry: TransportRegistry.defaults.registering(UDPTransport()))
        let secret = try RelaySecret(bytes: Array("udp-shard-load-0123456789abcdef!".utf8))
        let group = RelayShardGroup(
            threads: 2, authority: RelayTokenAuthority(secret: secret),
            configuration: RelayConfiguration(maxQueuedBytesPerReceiver: 256 * 1024, receiverHighWater: 16 * 1024), registry: runtime.registry)
        let bound = try await group.listen(on: "udp://127.0.0.1:0")
        #expect(await group.spread == .inTurn)
        func join(_ name: PeerID, room: RoomID = "load") async throws -> Conference {
            let token = RelayToken(room: room, peer: name, canPublish: true, canSubscribe: true, expiresAt: RelayServer.unixTime() + 600).signed(with: secret)
            return try await runtime.join(relay: "udp://127.0.0.1:\(bound.port!)", room: room, as: name, token: token)
        }
        // Links alternate between the shards: the sender on shard 0, each receiver on shard 1
        // with a member of another room on shard 0 between them.
        let sender = try await join("sender")
        var listening: [(Conference, EventLog)] = []
        var others: [Conference] = []
        for index in 0..<receivers {
            let conference = try await join(PeerID(stringLiteral: "receiver\(index)"))
            listening.append((conference, EventLog(conference)))
            others.append(try await join(PeerID(stringLiteral: "elsewhere\(index)"), room: "elsewhere"))
        }
        #expect(await group.shards[0].members(of: "load").count == receivers + 1)
        #expect(await group.shards[1].statistics.joins == receivers)
        try await within("the sender sees every receiver") { while await sender.peers.count < receivers { try await Task.sleep(for: .milliseconds(10)) } }
        let outbound = try await sender.makeOutboundDataSession(streamID: 100, type: .reliableMessage)
        var readers: [Task<[Int], Never>] = []
        for (conference, log) in listening {
            try await log.wait(for: "incoming", limit: .seconds(30)) { if case .dataSessionIncoming(100, nil, .reliableMessage, _) = $0 { true } else { false } }
            readers.append(LoadRoom.read(messages, from: try await conference.makeInboundDataSession(streamID: 100, expecting: .reliableMessage)))
        }
        for index in 0..<messages {
            var payload = [UInt8](repeating: UInt8(truncatingIfNeeded: index), count: 1_024)
            withUnsafeBytes(of: UInt64(index).bigEndian) { payload.replaceSubrange(0..<8, with: $0) }
            try await outbound.send(payload)
        }
        try await outbound.close(timeout: .seconds(120))
        for (index, reader) in readers.enumerated() {
            let indices = try await within("receiver\(index) gets \(messages) messages", limit: .seconds(240)) { await reader.value }
            #expect(indices == Array(0..<messages), "receiver\(index): \(indices.count) messages, in order: \(indices == indices.sorted())")
        }
        let statistics = await group.statistics
        #expect(statistics.slowReceiversDisconnected == 0)
        #expect(statistics.refusals.isEmpty, "refused: \(statistics.refusals)")
        #expect(statistics.cluster.messagesLost == 0)
        #expect(await group.shards[0].members(of: "load").count == receivers + 1)
        let sendingShard = await group.shards[0].statistics
        print("""
            shards under load: 1 → \(receivers) on the other shard × \(messages) × 1 KiB; pressure announced \(statistics.cluster.pressureAnnounced) times, \
            applied \(sendingShard.cluster.remotePressureApplied), sender paused \(sendingShard.sendersPaused) times, reads waited for the bus \
            \(await group.shards[0].clusterBusWaits) times, \(statistics.laggingReceivers) lagging
            """)
        try await sender.leave(timeout: .seconds(30))
        for (conference, log) in listening {
            log.cancel()
            await conference.leave()
        }
        for conference in others { await conference.leave() }
        await group.shutdown()
    }
}

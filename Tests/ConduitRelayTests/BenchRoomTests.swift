import Conduit
import ConduitNetworkTestSupport
import ConduitRelay
import ConduitTooling
import ConduitUDP
import Foundation
import Testing

/// `conduit bench --room`: a real `conduit relay` child, members in this process.
@Suite("conduit bench --room")
struct BenchRoomTests {
    /// The `conduit` executable the test command built beside this test bundle.
    static let conduit: String? = {
        let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let candidates = [directory, directory.deletingLastPathComponent()].map { $0.appendingPathComponent("conduit").path }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    @Test("1 sender to 3 receivers through a conduit relay process: 3 × 300 deliveries, each exactly once and in order, with latency and relay CPU",
          .enabled(if: conduit != nil, "needs the conduit executable beside the test bundle (swift build --build-tests builds it)"),
          .timeLimit(.minutes(2)))
    func roomThroughARelayProcess() async throws {
        let report = try await Self.run(relays: 1, receivers: 3, messages: 300)
        #expect(report.expected == 900)
        #expect(report.isComplete, "\(report)")
        #expect(report.ended == "complete")
        #expect(report.forwardedMessagesPerSecond > 0 && report.forwardedBytesPerSecond == report.forwardedMessagesPerSecond * 512)
        #expect(report.latencyP50Micros > 0 && report.latencyP99Micros >= report.latencyP50Micros)
        #expect(report.perRelay.count == 1 && report.relayCPUSeconds == report.perRelay[0].cpuSeconds)
    }

    @Test("2 relays clustered through a nats-server the bench starts: 1 sender to 4 receivers, every delivery exactly once and in order, figures per relay",
          .enabled(if: conduit != nil && NATSServerProcess.isInstalled, "needs the conduit executable and nats-server (Debian: nats-server)"),
          .timeLimit(.minutes(2)))
    func roomThroughTwoClusteredRelays() async throws {
        let report = try await Self.run(relays: 2, receivers: 4, messages: 200)
        #expect(report.isComplete, "\(report)")
        #expect(report.perRelay.count == 2)
        #expect(report.perRelay.allSatisfy { $0.forwardedMessagesPerSecond > 0 }, "each relay delivered to its own receivers: \(report.perRelay)")
    }

    @Test("a conduit relay process on 2 threads (--threads 2): 1 sender to 4 receivers spread over its shards, every delivery exactly once and in order",
          .enabled(if: conduit != nil, "needs the conduit executable beside the test bundle (swift build --build-tests builds it)"),
          .timeLimit(.minutes(2)))
    func roomThroughARelayOnTwoThreads() async throws {
        let report = try await Self.run(relays: 1, receivers: 4, messages: 300, relayArguments: ["--threads", "2"])
        #expect(report.expected == 1_200)
        #expect(report.isComplete, "\(report)")
        #expect(report.ended == "complete")
    }

    static func run(relays: Int, senders: Int = 1, receivers: Int, messages: Int, size: Int = 512, relayArguments: [String] = []) async throws -> BenchRoom.Report {
        let secret: [UInt8] = (UInt8(0)..<32).map { $0 &* 7 &+ 3 }
        let key = try RelaySecret(bytes: secret)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("conduit-bench-room-test-\(UUID().uuidString)").path
        #expect(FileManager.default.createFile(atPath: file, contents: Data(secret)))
        defer { try? FileManager.default.removeItem(atPath: file) }
        var options = BenchRoom.Options(relayExecutable: try #require(Self.conduit), secretFile: file) { room, peer in
            RelayToken(room: room, peer: peer, canPublish: true, canSubscribe: true, allowedSubgroups: nil,
                       expiresAt: RelayServer.unixTime() + 600).signed(with: key)
        }
        options.senders = senders
        options.receivers = receivers
        options.messages = messages
        options.size = size
        options.relays = relays
        options.relayArguments = relayArguments
        if let nats = NATSServerProcess.executable { options.natsServer = nats }
        options.timeout = .seconds(90)
        var configuration = ConduitConfiguration()
        configuration.rateLimit = .unlimited
        let runtime = ConduitRuntime(configuration: configuration, registry: TransportRegistry.defaults.registering(UDPTransport()))
        return try await BenchRoom(runtime: runtime, options: options).run()
    }

    @Test("the tally sees a duplicate, a gap and a stranger's message, and counts only in-order deliveries")
    func tallyClassifiesDeliveries() async {
        let tally = BenchRoomTally(senders: 2, expectedPerReceiver: 4, receivers: 1)
        tally.start(origin: .now)
        func message(sender: Int, seq: Int) -> [UInt8] {
            var payload = [UInt8](repeating: 0, count: 16)
            BenchRoomTally.stamp(&payload, sender: sender, seq: seq)
            return payload
        }
        for (sender, seq) in [(0, 0), (1, 0), (0, 0), (0, 2), (1, 1), (7, 0)] {
            tally.add(message(sender: sender, seq: seq), timestamp: 0, receiver: 0)
        }
        tally.add([1, 2, 3], timestamp: 0, receiver: 0)
        var report = BenchRoom.Report(senders: 2, receivers: 1, messagesPerSender: 2, size: 16, expected: 4)
        tally.fill(&report)
        #expect(report.delivered == 4)  // 0:0, 1:0, 0:2 (after a gap), 1:1
        #expect(report.duplicates == 1)
        #expect(report.outOfOrder == 3)  // the gap before 0:2, sender 7, the short message
        #expect(report.missing == 0 && !report.isComplete)
        #expect(await tally.waitForAll(until: .now))
    }
}

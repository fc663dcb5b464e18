import ArgumentParser
import Conduit
import ConduitRelay
import ConduitTooling
import Foundation

/// `conduit bench --room`: the options of a group-room run and the run itself (see `BenchRoom`).
struct BenchRoomOptions: ParsableArguments {
    @Flag(name: .customLong("room"), help: "Measure a group room instead: --senders and --receivers in one room on a 'conduit relay' child over the first --transport (udp://127.0.0.1:0 by default), --messages reliable messages of the first --size per sender; prints forwarded messages/s and bytes/s, p50/p99 sender-to-receiver latency and the relay's CPU per forwarded message; exits non-zero unless every receiver got every message exactly once and in order.")
    var enabled = false

    @Option(help: "Room bench: members that send.")
    var senders = 1

    @Option(help: "Room bench: members that only receive.")
    var receivers = 10

    @Option(help: "Room bench: messages per sender.")
    var messages = 2_000

    @Option(name: .customLong("room-rate"), help: "Room bench: messages per second per sender (0: as fast as the room takes them).")
    var rate = 0

    @Option(help: "Room bench: relays; more than one run as a cluster through a nats-server the bench starts on 127.0.0.1, the members spread over them in turn.")
    var relays = 1

    @Option(name: .customLong("nats-server"), help: "Room bench: the nats-server executable, for --relays above 1 (Debian: nats-server).")
    var natsServer = "/usr/sbin/nats-server"

    @Option(name: .customLong("relay-arg"), parsing: .unconditionalSingleValue, help: "Room bench: one more argument for 'conduit relay' (repeatable).")
    var relayArguments: [String] = []

    @Option(
        name: .customLong("relay-threads"),
        parsing: .upToNextOption,
        help: "Room bench: run the room once per value, the relay started with --threads N each time (e.g. --relay-threads 1 2), and print how each run's forwarded messages/s compares with the first's."
    )
    var relayThreads: [Int] = []

    @Flag(
        name: .customLong("in-process"),
        help: "Room bench: measure the relay itself, not a room of full members. The relay's shard group (the code of 'conduit relay --threads N') runs in this process on loopback links, the links handed to its shards in turn so the room spans them; synthetic members join with signed tokens, senders write pre-encoded frames in batches, receivers check each sender's messages exactly once and in order by their headers. Each --relay-threads value (default 1 2) runs --runs times, alternating; prints forwarded messages/s (median, min-max), the ratio to the first value and this process's CPU per forwarded message; exits non-zero if anything was missed, duplicated or reordered. --messages is per sender (try 20000), --size at most 1196."
    )
    var inProcess = false

    func run(transport: String?, size: Int?, runs: Int, json: Bool) async throws {
        if inProcess { return try await runInProcess(size: size, runs: runs, json: json) }
        guard relayThreads.allSatisfy({ (1...1_024).contains($0) }) else { throw ValidationError("--relay-threads values must be 1...1024") }
        var first: BenchRoom.Report?
        for threads in relayThreads.isEmpty ? [nil] : relayThreads.map(Optional.some) {
            let report = try await runOnce(transport: transport, size: size, json: json, threads: threads)
            let baseline = first ?? report
            first = baseline
            if let threads, !json {
                print(String(format: "relay threads %d: %.0f forwarded messages/s, %.2f× the first run's; relay CPU %.1f µs per forwarded message",
                             threads, report.forwardedMessagesPerSecond, report.forwardedMessagesPerSecond / max(baseline.forwardedMessagesPerSecond, 1),
                             report.relayCPUMicrosPerMessage))
            }
            guard report.isComplete else {
                throw ValidationError("the room lost or reordered reliable messages: \(report.missing) missing, \(report.duplicates) duplicates, \(report.outOfOrder) out of order")
            }
        }
    }

    /// One room run (the relay on `threads` shards, if given); prints its report.
    private func runOnce(transport: String?, size: Int?, json: Bool, threads: Int?) async throws -> BenchRoom.Report {
        var secret = [UInt8](repeating: 0, count: 32)
        // No whitespace bytes: the relay trims them from a secret file's ends (a key that began
        // or ended with one would not be the key the tokens were signed with).
        for index in secret.indices { secret[index] = UInt8.random(in: 0x21...0xFF) }
        let key = try ReportOutput.checked { () throws(ConduitError) in try RelaySecret(bytes: secret) }
        let secretFile = FileManager.default.temporaryDirectory.appendingPathComponent("conduit-bench-room-\(getpid()).secret").path
        guard FileManager.default.createFile(atPath: secretFile, contents: Data(secret), attributes: [.posixPermissions: 0o600]) else {
            throw ValidationError("cannot write the relay's secret to \(secretFile)")
        }
        defer { try? FileManager.default.removeItem(atPath: secretFile) }
        var options = BenchRoom.Options(relayExecutable: "/proc/self/exe".resolvedExecutable, secretFile: secretFile) { room, peer in
            RelayToken(room: room, peer: peer, canPublish: true, canSubscribe: true, allowedSubgroups: nil,
                       expiresAt: RelayServer.unixTime() + 3_600).signed(with: key)
        }
        options.senders = senders
        options.receivers = receivers
        options.messages = messages
        options.size = size ?? 1_024
        options.rate = rate
        options.transport = transport ?? options.transport
        options.relayArguments = relayArguments + (threads.map { ["--threads", "\($0)"] } ?? [])
        options.relays = relays
        options.natsServer = natsServer
        var configuration = ConduitConfiguration()
        configuration.rateLimit = .unlimited
        let report: BenchRoom.Report
        do throws(ConduitError) {
            report = try await BenchRoom(runtime: ConduitRuntime(configuration: configuration, registry: CommandRegistry.make()), options: options).run()
        } catch {
            throw ValidationError(error.message)
        }
        if json {
            try ReportOutput.printJSON(report)
        } else {
            for (index, relay) in report.perRelay.enumerated() where report.perRelay.count > 1 {
                print(String(format: "relay %d: %.0f messages/s to its receivers, CPU %.2f s", index, relay.forwardedMessagesPerSecond, relay.cpuSeconds))
            }
            print(String(
                format: "room: %d → %d through %d relay(s) over %@, %d × %d B per sender: %.0f forwarded messages/s, %.1f MB/s; latency p50 %.0f µs, p99 %.0f µs; relay CPU %.2f s (%.1f µs per forwarded message); %d of %d delivered, %d duplicates, %d out of order (%@)",
                report.senders, report.receivers, options.relays, options.transport, report.messagesPerSender, report.size,
                report.forwardedMessagesPerSecond, report.forwardedBytesPerSecond / 1e6, report.latencyP50Micros, report.latencyP99Micros,
                report.relayCPUSeconds, report.relayCPUMicrosPerMessage, report.delivered, report.expected, report.duplicates, report.outOfOrder, report.ended
            ))
        }
        return report
    }
}

extension String {
    /// The path a symbolic link such as /proc/self/exe points to (itself if it is none).
    fileprivate var resolvedExecutable: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: self)) ?? self
    }
}

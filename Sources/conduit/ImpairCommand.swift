import ArgumentParser
import Conduit
import ConduitUDP
import Foundation
import ConduitImpairment

struct ImpairCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "impair",
        abstract: "User-space network impairment between UDP clients and their upstreams (netem in user space).",
        discussion: """
            Listens on --listen; whoever sends there is the client, and its datagrams go to --upstream, and \
            the upstream's replies back to it. Give --upstream several times for several clients: the first \
            client to send goes to the first upstream, the next to the next, each from a socket of its own, \
            and all of them share one bottleneck per direction (--rate). Each direction is impaired \
            independently with the same settings and its own seed (seed, seed+1), so a run replays exactly. \
            Ends on SIGINT/SIGTERM or after --duration, then prints its statistics as one JSON object (per \
            direction: received, forwarded, dropped, droppedByPartition, droppedOverSize, droppedAtBottleneck, duplicated, \
            reordered, corrupted, bytesForwarded, maxQueueDelayMilliseconds, meanQueueDelayMilliseconds; \
            and strayDatagrams).
            """
    )

    @Option(help: "Address to listen on, HOST:PORT (IP literal).") var listen: String
    @Option(help: "Where to forward, HOST:PORT (IP literal); repeat it, one per client, for clients sharing a bottleneck.") var upstream: [String]
    @Option(help: "Probability of dropping a datagram (0...1).") var loss: Double = 0
    @Option(help: "Probability of holding a datagram back so later ones overtake it.") var reorder: Double = 0
    @Option(help: "Probability of delivering a datagram twice.") var dup: Double = 0
    @Option(help: "Probability of flipping one bit of a datagram.") var corrupt: Double = 0
    @Option(name: .customLong("delay-ms"), help: "One-way delay in milliseconds.") var delayMs: Double = 0
    @Option(name: .customLong("jitter-ms"), help: "Extra delay drawn from 0...J ms (never reorders by itself).") var jitterMs: Double = 0
    @Option(name: .customLong("reorder-hold-ms"), help: "How long a reordered datagram is held back.") var reorderHoldMs: Double = 10
    @Option(help: "Bottleneck rate: bits/s, 10mbps, unlimited.") var rate: String = "unlimited"
    @Option(name: .customLong("queue-ms"), help: "The bottleneck's buffer in milliseconds of queueing: a datagram that would wait longer is dropped (default: never full).") var queueMs: Double?
    @Option(help: "Seed for every random decision.") var seed: UInt64 = 1
    @Option(name: .customLong("max-size"), help: "Drop datagrams larger than this many bytes (a smaller path MTU).") var maxSize: Int?
    @Option(help: "A total blackout, START:DURATION in seconds from start (e.g. 2:5).") var blackout: String?
    @Option(help: "Stop after this many seconds (default: run until interrupted).") var duration: Double?

    func run() async throws {
        let impairment: ImpairmentConfiguration
        let listenEndpoint: UDPEndpoint
        var upstreamEndpoints: [UDPEndpoint] = []
        do {
            var options = [
                "loss": "\(loss)", "reorder": "\(reorder)", "dup": "\(dup)", "corrupt": "\(corrupt)",
                "delay-ms": "\(delayMs)", "jitter-ms": "\(jitterMs)", "reorder-hold-ms": "\(reorderHoldMs)",
                "rate": rate, "seed": "\(seed)",
            ]
            if let maxSize { options["max-size"] = "\(maxSize)" }
            if let queueMs { options["queue-ms"] = "\(queueMs)" }
            impairment = try ImpairmentConfiguration(options: options)
            listenEndpoint = try UDPEndpoint(parsing: listen)
            for text in upstream { upstreamEndpoints.append(try UDPEndpoint(parsing: text)) }
        } catch {
            throw ValidationError(error.message)
        }
        let window = try blackout.map(Self.parseBlackout)
        if let duration, !(duration > 0) { throw ValidationError("--duration must be positive") }

        let proxy = try await ImpairmentProxy.start(.init(listen: listenEndpoint, upstreams: upstreamEndpoints, impairment: impairment))
        FileHandle.standardError.write(Data("conduit impair: \(listenEndpoint) -> \(upstreamEndpoints.map { "\($0)" }.joined(separator: ", "))\n".utf8))

        await withTaskGroup(of: Void.self) { group in
            group.addTask { await Self.waitForSignal() }
            if let duration { group.addTask { try? await Task.sleep(for: .milliseconds(Int(duration * 1000))) } }
            if let window {
                group.addTask {
                    try? await Task.sleep(for: .milliseconds(Int(window.start * 1000)))
                    await proxy.setPartitioned(true)
                    try? await Task.sleep(for: .milliseconds(Int(window.length * 1000)))
                    await proxy.setPartitioned(false)
                    try? await Task.sleep(for: .seconds(86_400 * 365))
                }
            }
            await group.next()
            group.cancelAll()
        }
        let statistics = await proxy.statistics()
        await proxy.stop()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        print(String(decoding: try encoder.encode(statistics), as: UTF8.self))
    }

    static func parseBlackout(_ text: String) throws -> (start: Double, length: Double) {
        let parts = text.split(separator: ":")
        guard parts.count == 2, let start = Double(parts[0]), let length = Double(parts[1]), start >= 0, length > 0 else {
            throw ValidationError("--blackout takes START:DURATION in seconds, e.g. 2:5")
        }
        return (start, length)
    }

    /// Returns on SIGINT or SIGTERM.
    static func waitForSignal() async {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self)
        let sources = [SIGINT, SIGTERM].map { signalNumber -> any DispatchSourceSignal in
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber)
            source.setEventHandler { continuation.yield() }
            source.resume()
            return source
        }
        await withTaskCancellationHandler {
            for await _ in stream { break }
        } onCancel: {
            continuation.finish()
        }
        for source in sources { source.cancel() }
    }
}

import ArgumentParser
import Conduit
import ConduitTooling

/// The receiving end of `conduit bench`'s latency runs in a process of its own (the default,
/// `--latency-peer process`): not for direct use, so hidden from help.
struct BenchLatencyPeerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-latency-peer",
        abstract: "The receiving end of conduit bench's latency runs (started by conduit bench).",
        shouldDisplay: false
    )

    @Option(help: "Transport URL to listen on for the one call.")
    var listen: String

    @Option(help: "Timed messages to expect.")
    var messages: Int

    @Option(help: "Seconds before giving up.")
    var seconds: Int = 60

    func run() async throws {
        guard messages > 0, (1...3_600).contains(seconds) else {
            throw ValidationError("--messages must be positive and --seconds 1...3600")
        }
        var configuration = ConduitConfiguration()
        configuration.rateLimit = .unlimited
        let runtime = ConduitRuntime(configuration: configuration, registry: CommandRegistry.make())
        do throws(ConduitError) {
            try await BenchLatencyPeer.serve(
                runtime: runtime, transport: listen, expected: messages, timeout: .seconds(seconds),
                announce: { ReportOutput.printNow($0) }, report: { ReportOutput.printNow($0) })
        } catch {
            throw ValidationError(error.message)
        }
    }
}

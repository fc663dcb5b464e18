import ArgumentParser
import Conduit

struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Two peers exchange all four session types and show the contract's edge cases; then a room of three through a relay.",
        discussion: """
            Alice calls Bob. Alice opens one session of each type plus a stream Bob does not support; Bob
            accepts the four and declines the fifth. The account shows the messages and fragments with their
            timestamps, every creation failure reason, the oversize send refused, the 2 Mbit/s rate cap raising
            and clearing tooLongQueuedData, and every session closing with sessionEnd when Alice hangs up.
            Exits non-zero if anything did not happen as the contract says.
            """
    )

    @Option(name: .long, help: "Transport URL for the call (default: loopback://demo).")
    var transport: String = "loopback://demo"

    @Option(name: .long, help: "JSON configuration file (keys as in the README).")
    var config: String?

    func run() async throws {
        var configuration = try ConduitConfiguration.resolved(jsonFile: config, transports: [transport], registry: CommandRegistry.make())
        configuration.transport = transport
        let scenario = DemoScenario(runtime: ConduitRuntime(configuration: configuration, registry: CommandRegistry.make()))
        var failures = try await scenario.run()
        print("\nA group room: three peers through an in-process relay on loopback")
        failures += try await DemoRoom(runtime: ConduitRuntime(configuration: configuration, registry: CommandRegistry.make()), transcript: scenario.transcript).run()
        print("\nA call placed and answered with invitations through the relay")
        failures += try await DemoInvitationCall(runtime: ConduitRuntime(configuration: configuration, registry: CommandRegistry.make()), transcript: scenario.transcript).run()
        if failures.isEmpty {
            print("\nDemo complete: every behaviour matched the contract.")
        } else {
            print("\nDemo found \(failures.count) problem(s):")
            for failure in failures { print("  - \(failure)") }
            throw ExitCode.failure
        }
    }
}

import ArgumentParser
import Conduit

/// The options `listen` and `send` share: where configuration comes from and how to report.
struct CommonOptions: ParsableArguments {
    @Flag(help: "Print the report as one JSON object (the last line).")
    var json = false

    @Option(name: .long, help: "JSON configuration file (keys as in the README).")
    var config: String?

    /// A runtime with the configuration file (then CONDUIT_* variables) and every transport the
    /// command line knows.
    func runtime(standardPeers: StandardPeerHandler? = nil) throws -> ConduitRuntime {
        ConduitRuntime(configuration: try ConduitConfiguration.resolved(jsonFile: config), registry: CommandRegistry.make(standardPeers: standardPeers))
    }
}

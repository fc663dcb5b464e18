import ArgumentParser
import Conduit

/// The options `listen` and `send` share: where configuration comes from and how to report.
struct CommonOptions: ParsableArguments {
    @Flag(help: "Print the report as one JSON object (the last line).")
    var json = false

    @Option(name: .long, help: "JSON configuration file (keys as in the README).")
    var config: String?

    @Option(
        name: .customLong("set"),
        help: ArgumentHelp("A configuration key for this run, over the file and CONDUIT_* variables (repeatable).", valueName: "key=value")
    )
    var settings: [String] = []

    /// A runtime with the configuration file, then CONDUIT_* variables, then `--set` options (read
    /// through swift-configuration's providers), and every transport the command line knows.
    /// `url`, the command's transport URL, has its scheme checked here, and variables its `*-env`
    /// options name (`srtp-key-env=CONDUIT_KEY`) are not unknown configuration.
    func runtime(url: String, standardPeers: StandardPeerHandler? = nil) throws -> ConduitRuntime {
        let registry = CommandRegistry.make(standardPeers: standardPeers)
        let configuration = try ConduitConfiguration.resolved(
            jsonFile: config,
            arguments: try Self.configurationArguments(settings),
            transports: [url],
            registry: registry
        )
        return ConduitRuntime(configuration: configuration, registry: registry)
    }

    /// `--set rateLimit=unlimited` (or `rate-limit=unlimited`) → `--rate-limit=unlimited`, the
    /// option `ConduitConfiguration.apply(arguments:)` reads.
    static func configurationArguments(_ settings: [String]) throws -> [String] {
        try settings.map { setting in
            guard let equals = setting.firstIndex(of: "="), equals != setting.startIndex else {
                throw ValidationError("--set takes key=value, got '\(setting)'")
            }
            let key = String(setting[..<equals])
            let option = key.contains("-") ? "--" + key : ConduitConfiguration.optionName(for: key)
            return option + setting[equals...]
        }
    }
}

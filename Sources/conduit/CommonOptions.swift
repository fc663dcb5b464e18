import ArgumentParser
import Conduit
import Logging

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

    @Option(
        name: .customLong("log-level"),
        help: "Log the library's call, session and link lifecycle to standard error at this level (trace, debug, info, notice, warning, error, critical). Default: no logs."
    )
    var logLevel: String?

    /// A runtime with the configuration file, then CONDUIT_* variables, then `--set` options (read
    /// through swift-configuration's providers), and every transport the command line knows.
    /// `url`, the command's transport URL, has its scheme checked here, and variables its `*-env`
    /// options name (`srtp-key-env=CONDUIT_KEY`) are not unknown configuration. With
    /// `--log-level`, the runtime and the transports log to standard error.
    func runtime(url: String, standardPeers: StandardPeerHandler? = nil) throws -> ConduitRuntime {
        let logger = try CommandLogging.logger(level: logLevel)
        let registry = CommandRegistry.make(standardPeers: standardPeers, logger: logger)
        let configuration = try ConduitConfiguration.resolved(
            jsonFile: config,
            arguments: try Self.configurationArguments(settings),
            transports: [url],
            registry: registry
        )
        var runtime = ConduitRuntime(configuration: configuration, registry: registry)
        if let logger { runtime.observability = ConduitObservability(logger: logger) }
        return runtime
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

/// The library's logger for `--log-level`: swift-log's default handler (standard error), label
/// `conduit`. The command line owns the process, so the global default handler is its to use.
enum CommandLogging {
    /// Nil without a level (the library stays silent); a usage error for an unknown level.
    static func logger(level: String?) throws -> Logger? {
        guard let level else { return nil }
        guard let parsed = Logger.Level(rawValue: level.lowercased()) else {
            throw ValidationError("--log-level must be one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")), not '\(level)'")
        }
        var logger = Logger(label: "conduit")
        logger.logLevel = parsed
        return logger
    }
}

import ArgumentParser
import Conduit
import ConduitSCTP
import Logging

/// The options `listen` and `send` share: where configuration comes from and how to report.
struct CommonOptions: ParsableArguments {
    @Flag(help: "Print the report as one JSON object (the last line).")
    var json = false

    @Option(name: .long, help: "JSON configuration file (keys as in the README).")
    var config: String?

    @Option(
        name: .customLong("log-level"),
        help: "Log the library's call, session and link lifecycle to standard error at this level (trace, debug, info, notice, warning, error, critical). Default: no logs."
    )
    var logLevel: String?

    /// A runtime with the configuration file (then CONDUIT_* variables) and every transport the
    /// command line knows; logging to standard error with `--log-level`.
    func runtime(standardPeers: (@Sendable (SCTPAssociation) async -> Void)? = nil) throws -> ConduitRuntime {
        let configuration = try ConduitConfiguration.resolved(jsonFile: config)
        guard let logger = try CommandLogging.logger(level: logLevel) else {
            return ConduitRuntime(configuration: configuration, registry: CommandRegistry.make(standardPeers: standardPeers))
        }
        return ConduitRuntime(configuration: configuration, registry: CommandRegistry.make(standardPeers: standardPeers, logger: logger), logger: logger)
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

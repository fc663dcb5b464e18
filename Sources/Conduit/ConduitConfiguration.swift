public import ConduitCore
import Configuration
import Foundation

/// Everything a host app may configure, from code, a JSON file, the environment or the command
/// line. The file, the environment and the command line are read through apple/swift-configuration
/// (a `ConfigReader` over its JSON, environment-variable and command-line providers); unknown keys
/// in any of them are a typed `ConduitError` naming the key.
///
/// Keys are the same in every source (JSON key, environment variable; the command-line option is
/// the key in dash case, `--rate-limit`):
///
/// | key | environment | meaning | default |
/// |---|---|---|---|
/// | `transport` | `CONDUIT_TRANSPORT` | transport URL | `loopback://conduit` |
/// | `rateLimit` | `CONDUIT_RATE_LIMIT` | per-session cap: bits/s, `2mbps`, `unlimited` | `2mbps` |
/// | `maxQueuedBytesPerSession` | `CONDUIT_MAX_QUEUED_BYTES_PER_SESSION` | send queue cap | 8 MiB |
/// | `queueDelayOnMs` | `CONDUIT_QUEUE_DELAY_ON_MS` | `tooLongQueuedData(true)` threshold | 500 |
/// | `queueDelayOffMs` | `CONDUIT_QUEUE_DELAY_OFF_MS` | `tooLongQueuedData(false)` threshold | 100 |
/// | `maxPendingInboundBytes` | `CONDUIT_MAX_PENDING_INBOUND_BYTES` | held per announced stream before the app accepts it (then unreliable data is dropped, reliable data stops the link being read) | 1 MiB |
/// | `maxPendingInboundBytesTotal` | `CONDUIT_MAX_PENDING_INBOUND_BYTES_TOTAL` | the same, across all announced streams together | 8 MiB |
/// | `inboundBufferBytes` | `CONDUIT_INBOUND_BUFFER_BYTES` | received bytes buffered per inbound session (and per track, and for channel messages) before backpressure | 4 MiB |
/// | `maxIncompleteMessages` | `CONDUIT_MAX_INCOMPLETE_MESSAGES` | reassembly cap per peer | 64 |
/// | `maxReassemblyBytes` | `CONDUIT_MAX_REASSEMBLY_BYTES` | reassembly byte cap per peer | 16 MiB |
/// | `incompleteTimeoutMs` | `CONDUIT_INCOMPLETE_TIMEOUT_MS` | unreliable reassembly timeout | 3000 |
/// | `connectTimeoutMs` | `CONDUIT_CONNECT_TIMEOUT_MS` | connect and handshake limit (a URL's `connect-timeout-ms` overrides it) | 10000 |
/// | `dataSessionsSupported` | `CONDUIT_DATA_SESSIONS_SUPPORTED` | advertise data-session support | true |
public struct ConduitConfiguration: Sendable, Hashable {
    /// The transport URL `connect` and `listen` use when given none (`transport`): `loopback://NAME`, `udp://HOST:PORT`, `sctp+udp://HOST:PORT` or `sctp://HOST:PORT`, with query options.
    public var transport: String = "loopback://conduit"
    /// The pacing cap of each outbound session (`rateLimit`), 2 Mbit/s by default; excess sends queue.
    public var rateLimit: RateLimit = .default
    /// The most bytes queued per outbound session (`maxQueuedBytesPerSession`); `send` suspends past it and `trySend` returns false.
    public var maxQueuedBytesPerSession = 8 * 1024 * 1024
    /// Queueing delay at which an outbound session reports `tooLongQueuedData(enabled: true)` (`queueDelayOnMs`).
    public var queueDelayOn: Duration = .milliseconds(500)
    /// Queueing delay below which it reports `tooLongQueuedData(enabled: false)` again (`queueDelayOffMs`); at most ``queueDelayOn``.
    public var queueDelayOff: Duration = .milliseconds(100)
    /// Bytes held for a stream the peer announced before the app makes its inbound session (`maxPendingInboundBytes`). Past it, unreliable data is dropped and counted; reliable data is never dropped: the link stops being read until the app makes or declines the session.
    public var maxPendingInboundBytes = 1024 * 1024
    /// Bytes held across all streams not yet made (`maxPendingInboundBytesTotal`), handled past it as ``maxPendingInboundBytes`` is.
    public var maxPendingInboundBytesTotal = 8 * 1024 * 1024
    /// Received bytes buffered per inbound session, per subscribed data track and for labeled-channel messages before the link stops being read (`inboundBufferBytes`): the receive side's backpressure (see <doc:StreamsAndBackpressure>).
    public var inboundBufferBytes = 4 * 1024 * 1024
    /// Reassembly caps per peer: incomplete messages, buffered bytes, and how long an incomplete unreliable message may wait (`maxIncompleteMessages`, `maxReassemblyBytes`, `incompleteTimeoutMs`).
    public var reassembly = Reassembler.Configuration()
    /// How long `connect` and `join` may take, handshake included, before they throw `timedOut` (`connectTimeoutMs`).
    public var connectTimeout: Duration = .seconds(10)
    /// Whether this side tells peers it supports data sessions (`dataSessionsSupported`); peers see it as `isDataSessionSupported`.
    public var dataSessionsSupported = true

    /// The defaults: `loopback://conduit`, 2 Mbit/s per session, the caps in the table above.
    public init() {}

    /// The recognised keys, in the order they are documented.
    public static let keys = [
        "transport", "rateLimit", "maxQueuedBytesPerSession", "queueDelayOnMs", "queueDelayOffMs",
        "maxPendingInboundBytes", "maxPendingInboundBytesTotal", "inboundBufferBytes", "maxIncompleteMessages", "maxReassemblyBytes",
        "incompleteTimeoutMs", "connectTimeoutMs", "dataSessionsSupported",
    ]

    /// `rateLimit` → `CONDUIT_RATE_LIMIT`.
    public static func environmentName(for key: String) -> String {
        var name = "CONDUIT_"
        for character in key {
            if character.isUppercase { name += "_" }
            name += character.uppercased()
        }
        return name
    }

    /// Sets one key from its textual value; the one place every source goes through.
    public mutating func set(_ key: String, to value: String) throws(ConduitError) {
        func int(_ range: ClosedRange<Int>) throws(ConduitError) -> Int {
            guard value.allSatisfy({ ("0"..."9").contains($0) }), let number = Int(value), range.contains(number) else {
                throw ConduitError(.invalidConfiguration, "\(key)=\(value): expected an integer in \(range)")
            }
            return number
        }
        switch key {
        case "transport":
            do { _ = try TransportURL(parsing: value) } catch {
                throw ConduitError(.invalidConfiguration, "transport: \(error.message)")
            }
            transport = value
        case "rateLimit": rateLimit = try RateLimit(parsing: value)
        case "maxQueuedBytesPerSession": maxQueuedBytesPerSession = try int(1...(1 << 34))
        case "queueDelayOnMs": queueDelayOn = .milliseconds(try int(1...3_600_000))
        case "queueDelayOffMs": queueDelayOff = .milliseconds(try int(0...3_600_000))
        case "maxPendingInboundBytes": maxPendingInboundBytes = try int(0...(1 << 34))
        case "maxPendingInboundBytesTotal": maxPendingInboundBytesTotal = try int(0...(1 << 36))
        case "inboundBufferBytes": inboundBufferBytes = try int(1...(1 << 34))
        case "maxIncompleteMessages": reassembly.maxIncompleteMessages = try int(1...1_000_000)
        case "maxReassemblyBytes": reassembly.maxBufferedBytes = try int(1...(1 << 34))
        case "incompleteTimeoutMs": reassembly.incompleteTimeout = .milliseconds(try int(1...3_600_000))
        case "connectTimeoutMs": connectTimeout = .milliseconds(try int(1...3_600_000))
        case "dataSessionsSupported":
            switch value.lowercased() {
            case "true", "1", "yes": dataSessionsSupported = true
            case "false", "0", "no": dataSessionsSupported = false
            default: throw ConduitError(.invalidConfiguration, "\(key)=\(value): expected true or false")
            }
        default:
            throw ConduitError(.invalidConfiguration, "unknown configuration key '\(key)' (known: \(Self.keys.joined(separator: ", ")))")
        }
    }

    /// Checks relations between keys, and that `transport` parses.
    public func validate() throws(ConduitError) {
        guard queueDelayOff <= queueDelayOn else {
            throw ConduitError(.invalidConfiguration, "queueDelayOffMs must not exceed queueDelayOnMs")
        }
        _ = try TransportURL(parsing: transport)
    }

    /// ``validate()``, and that `registry` has a transport for the scheme of `transport`, so a
    /// configuration naming a transport this build lacks fails when it loads, not at connect.
    public func validate(registry: TransportRegistry) throws(ConduitError) {
        try validate()
        do { _ = try registry.resolve(transport) } catch {
            throw ConduitError(.invalidConfiguration, "transport \(transport): \(error.message)")
        }
    }

    /// Applies every `CONDUIT_*` variable of `environment` that names a key, read through
    /// swift-configuration's `EnvironmentVariablesProvider`. Unknown `CONDUIT_` variables are an
    /// error, so a typo does not pass silently, except those a `*-env` option of the transport URL
    /// names (`udp://…?srtp-key-env=CONDUIT_KEY`: the key's variable belongs to the transport).
    /// All or nothing: on an error the configuration is unchanged.
    public mutating func apply(environment: [String: String]) throws(ConduitError) {
        try apply([ConfigurationSource(environment: environment)])
    }

    /// Applies a JSON object whose keys are configuration keys (numbers, booleans or strings),
    /// read through swift-configuration's `JSONSnapshot`. All or nothing: on an error the
    /// configuration is unchanged.
    public mutating func apply(json: [UInt8]) throws(ConduitError) {
        try apply([ConfigurationSource(json: json, name: "JSON")])
    }

    /// Applies command-line options, one per key in dash case (`--rate-limit unlimited`,
    /// `--connect-timeout-ms=2000`, `--data-sessions-supported false`), read through
    /// swift-configuration's `CommandLineArgumentsProvider`. Any other `--option` is an error
    /// naming it. `arguments` holds the options only (no program name). All or nothing.
    public mutating func apply(arguments: [String]) throws(ConduitError) {
        try apply([ConfigurationSource(arguments: arguments)])
    }

    /// Loads a JSON configuration file over the defaults.
    public static func load(jsonFile path: String) throws(ConduitError) -> ConduitConfiguration {
        var configuration = ConduitConfiguration()
        try configuration.apply([ConfigurationSource(jsonFile: path)])
        return configuration
    }

    /// Defaults, then the file if given, then the environment (the process's when nil), then the
    /// command-line options (``apply(arguments:)``): one `ConfigReader` over the three providers,
    /// the later source winning. All or nothing: every source is checked before any applies.
    ///
    /// - Parameters:
    ///   - jsonFile: a JSON file of configuration keys, applied over the defaults (nil: none).
    ///   - environment: the variables to read `CONDUIT_*` keys from (nil: the process's).
    ///   - arguments: command-line options such as `--rate-limit=unlimited`, over the environment.
    ///   - transports: transport URLs the host will use besides `transport` (a command line's URL
    ///     argument). Environment variables their `*-env` options name are theirs, not unknown
    ///     configuration (`udp://…?srtp-key-env=CONDUIT_KEY` with `CONDUIT_KEY` set).
    ///   - registry: when given, the scheme of `transport` and of every URL in `transports` must
    ///     have a transport in it (``validate(registry:)``), so a typo fails here, not at connect.
    public static func resolved(
        jsonFile: String? = nil,
        environment: [String: String]? = nil,
        arguments: [String] = [],
        transports: [String] = [],
        registry: TransportRegistry? = nil
    ) throws(ConduitError) -> ConduitConfiguration {
        var sources: [ConfigurationSource] = []
        if !arguments.isEmpty { sources.append(try ConfigurationSource(arguments: arguments)) }
        sources.append(ConfigurationSource(environment: environment ?? ProcessInfo.processInfo.environment))
        if let jsonFile { sources.append(try ConfigurationSource(jsonFile: jsonFile)) }
        var configuration = ConduitConfiguration()
        try configuration.apply(sources, transports: transports)
        if let registry {
            try configuration.validate(registry: registry)
            for url in transports {
                do { _ = try registry.resolve(url) } catch {
                    throw ConduitError(.invalidConfiguration, "\(url): \(error.message)")
                }
            }
        }
        return configuration
    }

    /// Reads every key the sources hold through one `ConfigReader` (the first source wins),
    /// checks each value with ``set(_:to:)`` and the whole with ``validate()``, then applies it.
    private mutating func apply(_ sources: [ConfigurationSource], transports: [String] = []) throws(ConduitError) {
        let reader = ConfigReader(providers: sources.map(\.provider))
        var updated = self
        for key in Self.keys where sources.contains(where: { $0.keys.contains(key) }) {
            try updated.set(key, to: try Self.text(of: key, in: reader))
        }
        // Variables that the transport URL's `*-env` options name are the transport's own.
        let exempt = Set(([updated.transport] + transports).flatMap(TransportURLEnvironment.variables(namedBy:)))
        for source in sources {
            if let unknown = source.unknownVariables.first(where: { !exempt.contains($0) }) {
                let known = Self.keys.map(Self.environmentName(for:)).sorted().joined(separator: ", ")
                throw ConduitError(.invalidConfiguration, "unknown environment variable \(unknown) (known: \(known))")
            }
        }
        try updated.validate()
        self = updated
    }

    /// One key's value as the text ``set(_:to:)`` parses: a string from any source, else (a JSON
    /// number or boolean, a bare command-line flag) the key's own type.
    private static func text(of key: String, in reader: ConfigReader) throws(ConduitError) -> String {
        let configKey = ConfigKey(key)
        if let text = try? reader.requiredString(forKey: configKey) { return text }
        do {
            switch key {
            case "dataSessionsSupported": return String(try reader.requiredBool(forKey: configKey))
            case "transport": return try reader.requiredString(forKey: configKey)
            default: return String(try reader.requiredInt(forKey: configKey))
            }
        } catch {
            throw ConduitError(.invalidConfiguration, "\(key): \(error)")
        }
    }

    /// `rateLimit` → `--rate-limit`, the command-line option's name.
    public static func optionName(for key: String) -> String {
        var name = "--"
        for character in key {
            if character.isUppercase { name += "-" }
            name += character.lowercased()
        }
        return name
    }

    func callConfiguration(fragmentSize: Int) -> CallConfiguration {
        CallConfiguration(
            fragmentSize: fragmentSize,
            rateLimit: rateLimit,
            maxQueuedBytesPerSession: maxQueuedBytesPerSession,
            queueDelayOn: queueDelayOn,
            queueDelayOff: queueDelayOff,
            maxPendingInboundBytes: maxPendingInboundBytes,
            maxPendingInboundBytesTotal: maxPendingInboundBytesTotal,
            reassembly: reassembly,
            dataSessionsSupported: dataSessionsSupported
        )
    }
}


public import ConduitCore
import Foundation

/// Everything a host app may configure, from code, a JSON file, or the environment.
///
/// Keys are the same in every source (JSON key, then environment variable):
///
/// | key | environment | meaning | default |
/// |---|---|---|---|
/// | `transport` | `CONDUIT_TRANSPORT` | transport URL | `loopback://conduit` |
/// | `rateLimit` | `CONDUIT_RATE_LIMIT` | per-session cap: bits/s, `2mbps`, `unlimited` | `2mbps` |
/// | `maxQueuedBytesPerSession` | `CONDUIT_MAX_QUEUED_BYTES_PER_SESSION` | send queue cap | 8 MiB |
/// | `queueDelayOnMs` | `CONDUIT_QUEUE_DELAY_ON_MS` | `tooLongQueuedData(true)` threshold | 500 |
/// | `queueDelayOffMs` | `CONDUIT_QUEUE_DELAY_OFF_MS` | `tooLongQueuedData(false)` threshold | 100 |
/// | `maxPendingInboundBytes` | `CONDUIT_MAX_PENDING_INBOUND_BYTES` | held per announced stream before the app accepts it | 1 MiB |
/// | `inboundBufferBytes` | `CONDUIT_INBOUND_BUFFER_BYTES` | received bytes buffered per inbound session before backpressure | 4 MiB |
/// | `maxIncompleteMessages` | `CONDUIT_MAX_INCOMPLETE_MESSAGES` | reassembly cap per peer | 64 |
/// | `maxReassemblyBytes` | `CONDUIT_MAX_REASSEMBLY_BYTES` | reassembly byte cap per peer | 16 MiB |
/// | `incompleteTimeoutMs` | `CONDUIT_INCOMPLETE_TIMEOUT_MS` | unreliable reassembly timeout | 3000 |
/// | `connectTimeoutMs` | `CONDUIT_CONNECT_TIMEOUT_MS` | connect and handshake limit | 10000 |
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
    /// Bytes held for a stream the peer announced before the app makes its inbound session (`maxPendingInboundBytes`); more is dropped and counted.
    public var maxPendingInboundBytes = 1024 * 1024
    /// Received bytes buffered per inbound session before the transport stops reading (`inboundBufferBytes`): the receive side's backpressure.
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
        "maxPendingInboundBytes", "inboundBufferBytes", "maxIncompleteMessages", "maxReassemblyBytes",
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

    /// Checks relations between keys.
    public func validate() throws(ConduitError) {
        guard queueDelayOff <= queueDelayOn else {
            throw ConduitError(.invalidConfiguration, "queueDelayOffMs must not exceed queueDelayOnMs")
        }
        _ = try TransportURL(parsing: transport)
    }

    /// Applies every `CONDUIT_*` variable of `environment` that names a key. Unknown `CONDUIT_`
    /// variables are an error, so a typo does not pass silently. All or nothing: on an error the
    /// configuration is unchanged.
    public mutating func apply(environment: [String: String]) throws(ConduitError) {
        let byName = Dictionary(uniqueKeysWithValues: Self.keys.map { (Self.environmentName(for: $0), $0) })
        var updated = self
        for (name, value) in environment.sorted(by: { $0.key < $1.key }) where name.hasPrefix("CONDUIT_") {
            guard let key = byName[name] else {
                throw ConduitError(.invalidConfiguration, "unknown environment variable \(name) (known: \(byName.keys.sorted().joined(separator: ", ")))")
            }
            try updated.set(key, to: value)
        }
        try updated.validate()
        self = updated
    }

    /// Applies a JSON object whose keys are configuration keys (numbers, booleans or strings).
    /// All or nothing: on an error the configuration is unchanged.
    public mutating func apply(json: [UInt8]) throws(ConduitError) {
        let object: [String: JSONScalar]
        do { object = try JSONDecoder().decode([String: JSONScalar].self, from: Data(json)) } catch {
            throw ConduitError(.invalidConfiguration, "configuration must be a JSON object of strings, numbers and booleans (\(error))")
        }
        var updated = self
        for (key, value) in object.sorted(by: { $0.key < $1.key }) { try updated.set(key, to: value.text) }
        try updated.validate()
        self = updated
    }

    /// Loads a JSON configuration file over the defaults.
    public static func load(jsonFile path: String) throws(ConduitError) -> ConduitConfiguration {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConduitError(.invalidConfiguration, "cannot read configuration file \(path)")
        }
        var configuration = ConduitConfiguration()
        try configuration.apply(json: Array(data))
        return configuration
    }

    /// Defaults, then the file if given, then the environment (the process's when nil).
    public static func resolved(jsonFile: String? = nil, environment: [String: String]? = nil) throws(ConduitError) -> ConduitConfiguration {
        let environment = environment ?? ProcessInfo.processInfo.environment
        var configuration = try jsonFile.map { (path: String) throws(ConduitError) in try load(jsonFile: path) } ?? ConduitConfiguration()
        try configuration.apply(environment: environment)
        return configuration
    }

    func callConfiguration(fragmentSize: Int) -> CallConfiguration {
        CallConfiguration(
            fragmentSize: fragmentSize,
            rateLimit: rateLimit,
            maxQueuedBytesPerSession: maxQueuedBytesPerSession,
            queueDelayOn: queueDelayOn,
            queueDelayOff: queueDelayOff,
            maxPendingInboundBytes: maxPendingInboundBytes,
            reassembly: reassembly,
            dataSessionsSupported: dataSessionsSupported
        )
    }
}

/// A JSON value that configuration keys accept, kept as the text `set(_:to:)` parses.
private struct JSONScalar: Decodable {
    let text: String

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let flag = try? container.decode(Bool.self) {
            text = flag ? "true" : "false"
        } else if let number = try? container.decode(Int.self) {
            text = String(number)
        } else {
            text = try container.decode(String.self)
        }
    }
}

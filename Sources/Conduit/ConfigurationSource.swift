import ConduitCore
import Configuration
import Foundation

/// One source of configuration: a swift-configuration provider, and what our checks need that a
/// provider does not say (which keys the source holds, which of its names are unknown).
///
/// The providers read the values; the checks here are the ones they leave to us: an unknown JSON
/// key, command-line option or `CONDUIT_*` variable is a typed error naming it, and a JSON value
/// of the wrong kind (a boolean for a number, a number for a boolean, an object, `null`) is refused
/// rather than converted (`JSONSnapshot` reads `true` as 1 and `2` as true).
struct ConfigurationSource {
    let provider: any ConfigProvider
    /// The configuration keys this source holds.
    let keys: Set<String>
    /// `CONDUIT_*` variables that name no key (checked once the transport URL is known, whose
    /// `*-env` options may name some of them).
    var unknownVariables: [String] = []

    /// The `CONDUIT_*` variables of `environment`, through `EnvironmentVariablesProvider`
    /// (key `rateLimit` → `CONDUIT_RATE_LIMIT`). Other variables are not read, and neither are
    /// lower-case ones (the provider itself would match names case-insensitively).
    init(environment: [String: String]) {
        let byName = Dictionary(uniqueKeysWithValues: ConduitConfiguration.keys.map { (ConduitConfiguration.environmentName(for: $0), $0) })
        let ours = environment.filter { $0.key.hasPrefix("CONDUIT_") }
        let known = ours.filter { byName[$0.key] != nil }
        keys = Set(known.keys.compactMap { byName[$0] })
        unknownVariables = ours.keys.filter { byName[$0] == nil }.sorted()
        provider = KeyMappingProvider(upstream: EnvironmentVariablesProvider(environmentVariables: known)) { key in
            AbsoluteConfigKey(["conduit"] + key.components, context: key.context)
        }
    }

    /// A JSON object of configuration keys, through swift-configuration's `JSONSnapshot`.
    init(json: [UInt8], name: String) throws(ConduitError) {
        let object: [String: JSONKind]
        do { object = try JSONDecoder().decode([String: JSONKind].self, from: Data(json)) } catch {
            throw ConduitError(.invalidConfiguration, "configuration must be a JSON object of strings, numbers and booleans (\(error))")
        }
        for (key, kind) in object.sorted(by: { $0.key < $1.key }) {
            guard ConduitConfiguration.keys.contains(key) else {
                throw ConduitError(.invalidConfiguration, "unknown configuration key '\(key)' (known: \(ConduitConfiguration.keys.joined(separator: ", ")))")
            }
            let isFlag = key == "dataSessionsSupported"
            switch kind {
            case .string: break
            case .boolean where isFlag, .integer where !isFlag && key != "transport": break
            default: throw ConduitError(.invalidConfiguration, "\(key): \(kind) is not a value this key takes")
            }
        }
        keys = Set(object.keys)
        do {
            let snapshot = try json.withUnsafeBytes { buffer in
                try JSONSnapshot(data: buffer.bytes, providerName: name, parsingOptions: .default)
            }
            provider = SnapshotProvider(snapshot: snapshot)
        } catch {
            throw ConduitError(.invalidConfiguration, "\(name): \(error)")
        }
    }

    /// A JSON configuration file.
    init(jsonFile path: String) throws(ConduitError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConduitError(.invalidConfiguration, "cannot read configuration file \(path)")
        }
        try self.init(json: Array(data), name: path)
    }

    /// Command-line options, through `CommandLineArgumentsProvider` (`rateLimit` →
    /// `--rate-limit`). Every `--option` must name a key.
    init(arguments: [String]) throws(ConduitError) {
        let byOption = Dictionary(uniqueKeysWithValues: ConduitConfiguration.keys.map { (ConduitConfiguration.optionName(for: $0), $0) })
        var keys: Set<String> = []
        for argument in arguments where argument.hasPrefix("-") {
            let option = String(argument.prefix(while: { $0 != "=" }))
            guard let key = byOption[option] else {
                throw ConduitError(.invalidConfiguration, "unknown configuration option \(option) (known: \(byOption.keys.sorted().joined(separator: ", ")))")
            }
            keys.insert(key)
        }
        self.keys = keys
        // The provider skips the first argument, the program's name.
        provider = CommandLineArgumentsProvider(arguments: ["conduit"] + arguments)
    }
}

/// The kind of a JSON value, for the checks `JSONSnapshot` does not make.
private enum JSONKind: Decodable, CustomStringConvertible {
    case boolean, integer, string, other(String)

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .other("null")
        } else if (try? container.decode(Bool.self)) != nil {
            self = .boolean
        } else if (try? container.decode(Int.self)) != nil {
            self = .integer
        } else if (try? container.decode(String.self)) != nil {
            self = .string
        } else if (try? container.decode(Double.self)) != nil {
            self = .other("a fraction")
        } else {
            self = .other("an array or object")
        }
    }

    var description: String {
        switch self {
        case .boolean: "a boolean"
        case .integer: "a number"
        case .string: "a string"
        case .other(let text): text
        }
    }
}

/// A provider over one fixed snapshot (JSON bytes already in memory: `FileProvider` only reads
/// files, and only asynchronously).
private struct SnapshotProvider<Snapshot: ConfigSnapshot>: ConfigProvider {
    let fixed: Snapshot

    init(snapshot: Snapshot) { fixed = snapshot }

    var providerName: String { fixed.providerName }

    func value(forKey key: AbsoluteConfigKey, type: ConfigType) throws -> LookupResult {
        try fixed.value(forKey: key, type: type)
    }

    func fetchValue(forKey key: AbsoluteConfigKey, type: ConfigType) async throws -> LookupResult {
        try value(forKey: key, type: type)
    }

    func watchValue<Return: ~Copyable>(
        forKey key: AbsoluteConfigKey,
        type: ConfigType,
        updatesHandler: nonisolated(nonsending) (ConfigUpdatesAsyncSequence<Result<LookupResult, any Error>, Never>) async throws -> Return
    ) async throws -> Return {
        try await watchValueFromValue(forKey: key, type: type, updatesHandler: updatesHandler)
    }

    func snapshot() -> any ConfigSnapshot { fixed }

    func watchSnapshot<Return: ~Copyable>(
        updatesHandler: nonisolated(nonsending) (ConfigUpdatesAsyncSequence<any ConfigSnapshot, Never>) async throws -> Return
    ) async throws -> Return {
        try await watchSnapshotFromSnapshot(updatesHandler: updatesHandler)
    }
}

/// The environment variables a transport URL's `*-env` options name (`srtp-key-env=CONDUIT_KEY`):
/// the transport reads them itself, so they are no unknown configuration variables.
enum TransportURLEnvironment {
    static func variables(namedBy transport: String) -> [String] {
        guard let url = try? TransportURL(parsing: transport) else { return [] }
        return url.query.filter { $0.key.hasSuffix("-env") && !$0.value.isEmpty }.map(\.value)
    }
}

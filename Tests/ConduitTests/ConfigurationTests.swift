import Conduit
import Foundation
import Testing

/// Configuration from code, JSON and the environment: every key, and every way to get one wrong.
@Suite("Configuration")
struct ConfigurationTests {
    /// One key: a valid textual value, the configuration it must produce, and refused values.
    struct Case: Sendable, CustomTestStringConvertible {
        let key: String
        let valid: String
        let check: @Sendable (ConduitConfiguration) -> Bool
        let invalid: [String]
        var testDescription: String { key }
    }

    static let cases: [Case] = [
        Case(key: "transport", valid: "loopback://configured?mtu=1400", check: { $0.transport == "loopback://configured?mtu=1400" }, invalid: ["not a url", "://x", ""]),
        Case(key: "rateLimit", valid: "unlimited", check: { $0.rateLimit == .unlimited }, invalid: ["fast", "0", "-5mbps", "12xbps", ""]),
        Case(key: "maxQueuedBytesPerSession", valid: "65536", check: { $0.maxQueuedBytesPerSession == 65_536 }, invalid: ["0", "-1", "lots", "1.5", ""]),
        Case(key: "queueDelayOnMs", valid: "750", check: { $0.queueDelayOn == .milliseconds(750) }, invalid: ["0", "-10", "3600001", "half"]),
        Case(key: "queueDelayOffMs", valid: "0", check: { $0.queueDelayOff == .zero }, invalid: ["-1", "3600001", "none"]),
        Case(key: "maxPendingInboundBytes", valid: "0", check: { $0.maxPendingInboundBytes == 0 }, invalid: ["-1", "many"]),
        Case(key: "maxPendingInboundBytesTotal", valid: "4096", check: { $0.maxPendingInboundBytesTotal == 4_096 }, invalid: ["-1", "lots"]),
        Case(key: "inboundBufferBytes", valid: "131072", check: { $0.inboundBufferBytes == 131_072 }, invalid: ["0", "-1", "4MiB"]),
        Case(key: "maxIncompleteMessages", valid: "7", check: { $0.reassembly.maxIncompleteMessages == 7 }, invalid: ["0", "1000001", "x"]),
        Case(key: "maxReassemblyBytes", valid: "1048576", check: { $0.reassembly.maxBufferedBytes == 1_048_576 }, invalid: ["0", "-1", "big"]),
        Case(key: "incompleteTimeoutMs", valid: "250", check: { $0.reassembly.incompleteTimeout == .milliseconds(250) }, invalid: ["0", "3600001", "soon"]),
        Case(key: "connectTimeoutMs", valid: "1500", check: { $0.connectTimeout == .milliseconds(1_500) }, invalid: ["0", "-1", "later"]),
        Case(key: "dataSessionsSupported", valid: "false", check: { $0.dataSessionsSupported == false }, invalid: ["maybe", "2", ""]),
    ]

    @Test("the cases cover every documented key")
    func everyKeyIsCovered() {
        #expect(Self.cases.map(\.key) == ConduitConfiguration.keys)
        #expect(ConduitConfiguration.keys.count == 13)
    }

    @Test("set accepts a valid value for every key", arguments: cases)
    func setValid(_ testCase: Case) throws {
        var configuration = ConduitConfiguration()
        #expect(!testCase.check(configuration), "the default differs from the test value")
        try configuration.set(testCase.key, to: testCase.valid)
        #expect(testCase.check(configuration))
        // Only that key changed.
        var expected = ConduitConfiguration()
        try expected.set(testCase.key, to: testCase.valid)
        #expect(configuration == expected)
    }

    @Test("set refuses an invalid value for every key, with invalidConfiguration, and changes nothing", arguments: cases.filter { $0.key != "transport" })
    func setInvalid(_ testCase: Case) {
        for value in testCase.invalid {
            var configuration = ConduitConfiguration()
            do {
                try configuration.set(testCase.key, to: value)
                Issue.record("\(testCase.key)=\(value) was accepted")
            } catch {
                #expect(error.code == .invalidConfiguration, "\(testCase.key)=\(value)")
                if !value.isEmpty {
                    #expect(error.message.contains(testCase.key) || error.message.contains(value), "the message names what is wrong: \(error.message)")
                }
            }
            #expect(configuration == ConduitConfiguration(), "\(testCase.key)=\(value) left the configuration unchanged")
        }
    }

    @Test("set refuses a malformed transport URL and changes nothing")
    func setInvalidTransport() {
        for value in ["not a url", "://x", ""] {
            var configuration = ConduitConfiguration()
            #expect(throws: ConduitError.self, "transport=\(value)") { try configuration.set("transport", to: value) }
            #expect(configuration == ConduitConfiguration())
        }
    }

    @Test("set accepts every spelling of the documented values")
    func setSpellings() throws {
        var configuration = ConduitConfiguration()
        for (text, rate) in [("2mbps", RateLimit.bitsPerSecond(2_000_000)), ("500kbps", .bitsPerSecond(500_000)), ("8000000", .bitsPerSecond(8_000_000)), ("1gbps", .bitsPerSecond(1_000_000_000)), ("UNLIMITED", .unlimited)] {
            try configuration.set("rateLimit", to: text)
            #expect(configuration.rateLimit == rate, "rateLimit=\(text)")
        }
        for (text, flag) in [("true", true), ("0", false), ("yes", true), ("no", false), ("FALSE", false), ("1", true)] {
            try configuration.set("dataSessionsSupported", to: text)
            #expect(configuration.dataSessionsSupported == flag, "dataSessionsSupported=\(text)")
        }
    }

    @Test("set refuses an unknown key")
    func setUnknownKey() {
        var configuration = ConduitConfiguration()
        for key in ["rate_limit", "RateLimit", "bogus", ""] {
            do {
                try configuration.set(key, to: "1")
                Issue.record("key '\(key)' was accepted")
            } catch {
                #expect(error.code == .invalidConfiguration)
            }
        }
        #expect(configuration == ConduitConfiguration())
    }

    @Test("defaults are as documented")
    func defaults() {
        let configuration = ConduitConfiguration()
        #expect(configuration.transport == "loopback://conduit")
        #expect(configuration.rateLimit == .bitsPerSecond(2_000_000))
        #expect(configuration.maxQueuedBytesPerSession == 8 * 1024 * 1024)
        #expect(configuration.queueDelayOn == .milliseconds(500))
        #expect(configuration.queueDelayOff == .milliseconds(100))
        #expect(configuration.maxPendingInboundBytes == 1024 * 1024)
        #expect(configuration.maxPendingInboundBytesTotal == 8 * 1024 * 1024)
        #expect(configuration.inboundBufferBytes == 4 * 1024 * 1024)
        #expect(configuration.reassembly.maxIncompleteMessages == 64)
        #expect(configuration.reassembly.maxBufferedBytes == 16 * 1024 * 1024)
        #expect(configuration.reassembly.incompleteTimeout == .seconds(3))
        #expect(configuration.connectTimeout == .seconds(10))
        #expect(configuration.dataSessionsSupported)
    }

    // MARK: JSON

    @Test("apply(json:) takes an object of numbers, strings and booleans")
    func applyJSON() throws {
        let json = """
            {
              "transport": "loopback://from-json",
              "rateLimit": 8000000,
              "maxQueuedBytesPerSession": "262144",
              "queueDelayOnMs": 200,
              "queueDelayOffMs": 50,
              "dataSessionsSupported": false,
              "connectTimeoutMs": 1234
            }
            """
        var configuration = ConduitConfiguration()
        try configuration.apply(json: Array(json.utf8))
        var expected = ConduitConfiguration()
        expected.transport = "loopback://from-json"
        expected.rateLimit = .bitsPerSecond(8_000_000)
        expected.maxQueuedBytesPerSession = 262_144
        expected.queueDelayOn = .milliseconds(200)
        expected.queueDelayOff = .milliseconds(50)
        expected.dataSessionsSupported = false
        expected.connectTimeout = .milliseconds(1_234)
        #expect(configuration == expected)

        // Booleans as strings too, and an empty object changes nothing.
        try configuration.apply(json: Array(#"{"dataSessionsSupported": "true", "rateLimit": "unlimited"}"#.utf8))
        #expect(configuration.dataSessionsSupported)
        #expect(configuration.rateLimit == .unlimited)
        let before = configuration
        try configuration.apply(json: Array("{}".utf8))
        #expect(configuration == before)
    }

    @Test("apply(json:) refuses non-objects, unknown keys and wrong types", arguments: [
        "[1, 2, 3]", "\"rateLimit\"", "42", "true", "null", "", "{", "{\"rateLimit\": }",
        "{\"bogus\": 1}", "{\"RATE_LIMIT\": \"unlimited\"}",
        "{\"rateLimit\": [1]}", "{\"rateLimit\": {\"bps\": 1}}", "{\"transport\": null}",
        "{\"queueDelayOnMs\": 1.5}", "{\"maxQueuedBytesPerSession\": true}", "{\"dataSessionsSupported\": \"maybe\"}",
        "{\"dataSessionsSupported\": 2}", "{\"inboundBufferBytes\": -1}", "{\"rateLimit\": \"fast\"}",
        "{\"queueDelayOnMs\": 10, \"queueDelayOffMs\": 20}",
    ])
    func applyInvalidJSON(_ json: String) {
        var configuration = ConduitConfiguration()
        do {
            try configuration.apply(json: Array(json.utf8))
            Issue.record("\(json) was accepted")
        } catch {
            #expect(error.code == .invalidConfiguration, "\(json): \(error)")
        }
    }

    @Test("load(jsonFile:) reads a file over the defaults; a missing file is an error")
    func loadJSONFile() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("conduit-config-\(UInt64.random(in: 0...UInt64.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("conduit.json")
        try Data(#"{"rateLimit": "500kbps", "inboundBufferBytes": 65536}"#.utf8).write(to: file)

        let loaded = try ConduitConfiguration.load(jsonFile: file.path)
        var expected = ConduitConfiguration()
        expected.rateLimit = .bitsPerSecond(500_000)
        expected.inboundBufferBytes = 65_536
        #expect(loaded == expected)

        // resolved(): the file, then the environment over it.
        let resolved = try ConduitConfiguration.resolved(jsonFile: file.path, environment: ["CONDUIT_RATE_LIMIT": "unlimited", "HOME": "/root"])
        expected.rateLimit = .unlimited
        #expect(resolved == expected)

        let missing = directory.appendingPathComponent("missing.json").path
        let missingError = #expect(throws: ConduitError.self) { try ConduitConfiguration.load(jsonFile: missing) }
        #expect(missingError?.code == .invalidConfiguration)

        let bad = directory.appendingPathComponent("bad.json")
        try Data("[]".utf8).write(to: bad)
        let badError = #expect(throws: ConduitError.self) { try ConduitConfiguration.load(jsonFile: bad.path) }
        #expect(badError?.code == .invalidConfiguration)
    }

    // MARK: Environment

    @Test("environmentName maps every key to CONDUIT_ and upper snake case")
    func environmentNames() {
        #expect(ConduitConfiguration.environmentName(for: "rateLimit") == "CONDUIT_RATE_LIMIT")
        #expect(ConduitConfiguration.keys.map(ConduitConfiguration.environmentName(for:)) == [
            "CONDUIT_TRANSPORT", "CONDUIT_RATE_LIMIT", "CONDUIT_MAX_QUEUED_BYTES_PER_SESSION", "CONDUIT_QUEUE_DELAY_ON_MS",
            "CONDUIT_QUEUE_DELAY_OFF_MS", "CONDUIT_MAX_PENDING_INBOUND_BYTES", "CONDUIT_MAX_PENDING_INBOUND_BYTES_TOTAL", "CONDUIT_INBOUND_BUFFER_BYTES",
            "CONDUIT_MAX_INCOMPLETE_MESSAGES", "CONDUIT_MAX_REASSEMBLY_BYTES", "CONDUIT_INCOMPLETE_TIMEOUT_MS",
            "CONDUIT_CONNECT_TIMEOUT_MS", "CONDUIT_DATA_SESSIONS_SUPPORTED",
        ])
    }

    @Test("apply(environment:) sets CONDUIT_ variables and ignores the others")
    func applyEnvironment() throws {
        var configuration = ConduitConfiguration()
        try configuration.apply(environment: [
            "CONDUIT_RATE_LIMIT": "unlimited",
            "CONDUIT_QUEUE_DELAY_ON_MS": "300",
            "CONDUIT_QUEUE_DELAY_OFF_MS": "30",
            "CONDUIT_DATA_SESSIONS_SUPPORTED": "no",
            "CONDUIT_TRANSPORT": "loopback://from-env",
            "PATH": "/usr/bin:/bin",
            "HOME": "/home/conduit",
            "RATE_LIMIT": "not ours",
            "conduit_rate_limit": "lower case is not ours either",
        ])
        var expected = ConduitConfiguration()
        expected.rateLimit = .unlimited
        expected.queueDelayOn = .milliseconds(300)
        expected.queueDelayOff = .milliseconds(30)
        expected.dataSessionsSupported = false
        expected.transport = "loopback://from-env"
        #expect(configuration == expected)

        var untouched = ConduitConfiguration()
        try untouched.apply(environment: ["PATH": "/usr/bin", "LANG": "C"])
        #expect(untouched == ConduitConfiguration())
    }

    @Test("apply(environment:) refuses unknown CONDUIT_ variables and bad values")
    func applyInvalidEnvironment() {
        for environment in [
            ["CONDUIT_BOGUS": "1"],
            ["CONDUIT_RATELIMIT": "unlimited"],
            ["CONDUIT_": "x"],
            ["CONDUIT_RATE_LIMIT": "fast"],
            ["CONDUIT_CONNECT_TIMEOUT_MS": "0"],
            ["CONDUIT_QUEUE_DELAY_ON_MS": "10", "CONDUIT_QUEUE_DELAY_OFF_MS": "20"],
        ] {
            var configuration = ConduitConfiguration()
            do {
                try configuration.apply(environment: environment)
                Issue.record("\(environment) was accepted")
            } catch {
                #expect(error.code == .invalidConfiguration, "\(environment)")
            }
        }
    }

    // MARK: Through swift-configuration: layering, command line, unknown names, the registry

    @Test("resolved reads the file, then CONDUIT_ variables, then command-line options, the later winning")
    func layering() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("conduit-config-\(UInt64.random(in: 0...UInt64.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("conduit.json")
        try Data(#"{"rateLimit": "500kbps", "inboundBufferBytes": 65536, "connectTimeoutMs": 2000, "queueDelayOnMs": 900}"#.utf8).write(to: file)

        let resolved = try ConduitConfiguration.resolved(
            jsonFile: file.path,
            environment: ["CONDUIT_RATE_LIMIT": "1mbps", "CONDUIT_CONNECT_TIMEOUT_MS": "3000", "HOME": "/root"],
            arguments: ["--rate-limit", "unlimited", "--data-sessions-supported=false"]
        )
        var expected = ConduitConfiguration()
        expected.rateLimit = .unlimited                      // command line over environment over file
        expected.connectTimeout = .milliseconds(3_000)       // environment over file
        expected.inboundBufferBytes = 65_536                 // file
        expected.queueDelayOn = .milliseconds(900)           // file
        expected.dataSessionsSupported = false               // command line
        #expect(resolved == expected)
    }

    @Test("apply(arguments:) reads --key value, --key=value and bare flags, for every key")
    func applyArguments() throws {
        var configuration = ConduitConfiguration()
        configuration.dataSessionsSupported = false
        try configuration.apply(arguments: ["--queue-delay-on-ms", "300", "--queue-delay-off-ms=30", "--data-sessions-supported", "--transport", "loopback://cli"])
        var expected = ConduitConfiguration()
        expected.queueDelayOn = .milliseconds(300)
        expected.queueDelayOff = .milliseconds(30)
        expected.transport = "loopback://cli"
        #expect(configuration == expected)
        // Every case's valid value, through its option.
        for testCase in Self.cases {
            var one = ConduitConfiguration()
            try one.apply(arguments: [ConduitConfiguration.optionName(for: testCase.key), testCase.valid])
            #expect(testCase.check(one), "\(ConduitConfiguration.optionName(for: testCase.key)) \(testCase.valid)")
        }
    }

    @Test("apply(arguments:) refuses unknown options (naming them) and bad values, and changes nothing")
    func applyInvalidArguments() {
        for (arguments, named) in [
            (["--rate-limt", "1mbps"], "--rate-limt"),
            (["--rate-limit", "fast"], "fast"),
            (["--connect-timeout-ms", "0"], "connectTimeoutMs"),
            (["--queue-delay-on-ms", "10", "--queue-delay-off-ms", "20"], "queueDelayOffMs"),
            (["--transport", "udp://127.0.0.1:9000", "--verbose"], "--verbose"),
        ] {
            var configuration = ConduitConfiguration()
            do {
                try configuration.apply(arguments: arguments)
                Issue.record("\(arguments) was accepted")
            } catch {
                #expect(error.code == .invalidConfiguration, "\(arguments)")
                #expect(error.message.contains(named), "\(arguments): \(error.message)")
            }
            #expect(configuration == ConduitConfiguration(), "\(arguments) left the configuration unchanged")
        }
    }

    @Test("an unknown name is a typed error naming it, from every source")
    func unknownNamesAreNamed() {
        var configuration = ConduitConfiguration()
        let json = #expect(throws: ConduitError.self) { try configuration.apply(json: Array(#"{"rateLimit": 1000, "rateLimt": 5}"#.utf8)) }
        #expect(json?.code == .invalidConfiguration)
        #expect(json?.message.contains("'rateLimt'") == true, "\(json?.message ?? "")")
        let environment = #expect(throws: ConduitError.self) { try configuration.apply(environment: ["CONDUIT_RATE_LIMIT": "1mbps", "CONDUIT_RATELIMIT": "1"]) }
        #expect(environment?.code == .invalidConfiguration)
        #expect(environment?.message.contains("CONDUIT_RATELIMIT") == true, "\(environment?.message ?? "")")
        #expect(configuration == ConduitConfiguration(), "all or nothing")
    }

    @Test("the transport's scheme is checked against a registry when the configuration loads")
    func schemeCheckedAtLoad() throws {
        // loopback:// is in the defaults; udp:// is not (the host registers it).
        let loaded = try ConduitConfiguration.resolved(environment: ["CONDUIT_TRANSPORT": "loopback://here"], registry: .defaults)
        #expect(loaded.transport == "loopback://here")
        let error = #expect(throws: ConduitError.self) {
            try ConduitConfiguration.resolved(environment: ["CONDUIT_TRANSPORT": "udp://127.0.0.1:9000"], registry: .defaults)
        }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains("udp://") == true, "\(error?.message ?? "")")
        // A URL the host will use besides the configured one (a command line's argument).
        let argument = #expect(throws: ConduitError.self) {
            try ConduitConfiguration.resolved(environment: [:], transports: ["sctp+udp://127.0.0.1:5000"], registry: .defaults)
        }
        #expect(argument?.message.contains("sctp+udp") == true, "\(argument?.message ?? "")")
        // Without a registry, only the URL's form is checked.
        _ = try ConduitConfiguration.resolved(environment: ["CONDUIT_TRANSPORT": "udp://127.0.0.1:9000"])
        var configuration = ConduitConfiguration()
        configuration.transport = "typo://x"
        #expect(throws: ConduitError.self) { try configuration.validate(registry: .defaults) }
        try configuration.validate()
    }

    @Test("variables a transport URL's *-env option names are the transport's, not unknown configuration")
    func transportEnvironmentVariables() throws {
        let url = "udp://127.0.0.1:9000?srtp-key-env=CONDUIT_KEY"
        let environment = ["CONDUIT_KEY": "c2VjcmV0", "PATH": "/usr/bin"]
        // Named by a URL the host will use (the command line's), or by the configured transport.
        _ = try ConduitConfiguration.resolved(environment: environment, transports: [url])
        let configured = try ConduitConfiguration.resolved(environment: environment.merging(["CONDUIT_TRANSPORT": url]) { $1 })
        #expect(configured.transport == url)
        // Named by nothing: still an unknown CONDUIT_ variable.
        let error = #expect(throws: ConduitError.self) { try ConduitConfiguration.resolved(environment: environment) }
        #expect(error?.message.contains("CONDUIT_KEY") == true, "\(error?.message ?? "")")
        // Only the named variable is exempt.
        let other = #expect(throws: ConduitError.self) {
            try ConduitConfiguration.resolved(environment: environment.merging(["CONDUIT_KEYS": "x"]) { $1 }, transports: [url])
        }
        #expect(other?.message.contains("CONDUIT_KEYS") == true, "\(other?.message ?? "")")
    }

    // MARK: Validation

    @Test("validate refuses queueDelayOff above queueDelayOn and accepts them equal")
    func validateHysteresis() throws {
        var configuration = ConduitConfiguration()
        configuration.queueDelayOn = .milliseconds(100)
        configuration.queueDelayOff = .milliseconds(101)
        let error = #expect(throws: ConduitError.self) { try configuration.validate() }
        #expect(error?.code == .invalidConfiguration)
        configuration.queueDelayOff = .milliseconds(100)
        try configuration.validate()
        configuration.queueDelayOff = .zero
        try configuration.validate()
        try ConduitConfiguration().validate()
    }
}

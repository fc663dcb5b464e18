import Conduit
import ConduitCore
import ConduitARQ
import ConduitNetworkTestSupport
import ConduitReliableTransport
import ConduitUDP
import Foundation
import Testing

/// `udp://` under `ConduitRuntime`: one connect timeout, the URL a listener reports, and the
/// options an unknown-option error lists.
@Suite("UDP configuration", .timeLimit(.minutes(1)))
struct UDPConfigurationTests {
    static func runtime(connectTimeout: Duration) -> ConduitRuntime {
        var configuration = ConduitConfiguration()
        configuration.connectTimeout = connectTimeout
        return ConduitRuntime(configuration: configuration, registry: TransportRegistry.defaults.registering(UDPTransport()))
    }

    /// How long connecting to a port where nothing listens takes to fail, and the error.
    static func failedConnect(_ runtime: ConduitRuntime, query: String = "") async throws -> (seconds: Double, error: ConduitError) {
        let silent = try await SilentUDPPort.bind()
        let start = ContinuousClock.now
        do {
            _ = try await runtime.connect(to: "udp://127.0.0.1:\(silent.port)\(query)", as: "alice")
        } catch {
            let elapsed = ContinuousClock.now - start
            await silent.close()
            return (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18, error)
        }
        await silent.close()
        Issue.record("connected to a port where nothing listens")
        return (0, ConduitError(.connectionFailed, "connected"))
    }

    @Test("the configuration's connectTimeoutMs bounds a udp:// connect (the transport's 5 s no longer wins)")
    func configurationTimeoutApplies() async throws {
        let (seconds, error) = try await Self.failedConnect(Self.runtime(connectTimeout: .milliseconds(1_500)))
        #expect(error.code == .timedOut)
        #expect(error.message.contains("1500 ms"), "the transport was given the configured limit: \(error.message)")
        #expect(seconds >= 1.3 && seconds < 5, "failed after \(seconds) s, not the transport's 5 s")
    }

    @Test("a URL's connect-timeout-ms overrides the configuration's connectTimeoutMs")
    func urlOptionOverrides() async throws {
        // Longer than the configuration's: the URL's wins (it used to be cut short at 0.7 s).
        let (seconds, error) = try await Self.failedConnect(Self.runtime(connectTimeout: .milliseconds(700)), query: "?connect-timeout-ms=1500")
        #expect(error.code == .timedOut)
        #expect(error.message.contains("1500 ms"), "\(error.message)")
        #expect(seconds >= 1.3 && seconds < 5, "failed after \(seconds) s, not the configured 0.7 s")
        // Shorter than the configuration's: the URL's wins too.
        let (short, shortError) = try await Self.failedConnect(Self.runtime(connectTimeout: .seconds(10)), query: "?connect-timeout-ms=700")
        #expect(shortError.message.contains("700 ms"), "\(shortError.message)")
        #expect(short >= 0.5 && short < 5, "failed after \(short) s, not the configured 10 s")
    }

    @Test("the default connect limit is one value: the configuration's, 10 s, for udp:// too")
    func oneDefault() throws {
        #expect(ConduitConfiguration().connectTimeout == .seconds(10))
        let url = try TransportURL(parsing: "udp://127.0.0.1:9000")
        #expect(try url.connectTimeout(default: ConduitConfiguration().connectTimeout) == .seconds(10))
        #expect(url.withConnectTimeout(default: .seconds(10)).query["connect-timeout-ms"] == "10000")
        let own = try TransportURL(parsing: "udp://127.0.0.1:9000?connect-timeout-ms=700")
        #expect(try own.connectTimeout(default: .seconds(10)) == .milliseconds(700))
        #expect(own.withConnectTimeout(default: .seconds(10)) == own)
    }

    @Test("connect(to:) takes the TransportURL a listener reports, as well as its text")
    func connectToListenerURL() async throws {
        let runtime = Self.runtime(connectTimeout: .seconds(10))
        let listener = try await runtime.listen(on: "udp://127.0.0.1:0", as: "bob")
        let url: TransportURL = listener.url
        #expect(url.port != 0)
        async let answered = listener.accept()
        let call = try await runtime.connect(to: url, as: "alice")
        let bob = try #require(try await answered)
        #expect(call.remotePeer == "bob")
        #expect(bob.remotePeer == "alice")
        await call.hangUp()
        // The String form still works.
        async let second = listener.accept()
        let again = try await runtime.connect(to: url.description, as: "carol")
        _ = try await second
        #expect(again.remotePeer == "bob")
        await again.hangUp()
        await listener.close()
    }

    @Test("the unknown-option error for udp:// lists every option udp:// takes, the reliability engine's included")
    func unknownOptionListsEverything() async throws {
        let runtime = Self.runtime(connectTimeout: .seconds(1))
        let error = await #expect(throws: ConduitError.self) {
            _ = try await runtime.connect(to: "udp://127.0.0.1:9?bogus=1", as: "alice")
        }
        #expect(error?.code == .invalidConfiguration)
        let message = error?.message ?? ""
        #expect(message.contains("'bogus'"))
        for option in ["mtu", "connect-timeout-ms", "offload", "srtp", "srtp-key-file", "srtp-key-env"]
            + ARQEngine.Configuration.urlOptionKeys.sorted() {
            #expect(message.contains(option), "\(option) missing from: \(message)")
        }
        // The transport accepts the options it lists (the runtime takes the engine's out first).
        let listener = try await UDPTransport().listen(on: TransportURL(parsing: "udp://127.0.0.1:0?keepalive-ms=1000&ack-every=4"))
        await listener.close()
    }

    @Test("the README's SRTP send command: its configuration is accepted as written")
    func readmeSRTPCommand() throws {
        // The command as the README shows it: VAR=$(cat conduit.key) conduit send "URL" …
        let readme = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("README.md")
        let text = try String(contentsOf: readme, encoding: .utf8)
        let line = try #require(text.split(separator: "\n").first { $0.contains("conduit send") && $0.contains("srtp-key-env=") })
        let variable = String(line.prefix(while: { $0 != "=" }))
        let quoted = line.split(separator: "\"")
        let url = String(try #require(quoted.count > 1 ? quoted[1] : nil))
        #expect(url.contains("srtp-key-env=\(variable)"), "\(line)")
        #expect(variable.hasPrefix("CONDUIT_"), "the case that used to be refused: \(variable)")
        let environment = [variable: "c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0", "PATH": "/usr/bin", "HOME": "/root"]
        let registry = TransportRegistry.defaults.registering(UDPTransport())
        // What `conduit send` does before connecting (CommonOptions.runtime(url:)).
        let configuration = try ConduitConfiguration.resolved(environment: environment, transports: [url], registry: registry)
        #expect(configuration == ConduitConfiguration())
        // Without the URL that names it, the variable is still an unknown CONDUIT_ variable.
        #expect(throws: ConduitError.self) { try ConduitConfiguration.resolved(environment: environment, registry: registry) }
    }
}

import Conduit
import ConduitCore
import ConduitImpairment
import ConduitNetworkTestSupport
import ConduitUDP
import Testing
#if SRTP
import ConduitSRTP
#endif

/// `UDPTransport.Configuration`: the URL query parses into it, bad options are refused by name,
/// typed values connect without a URL's options, and SRTP keys are values.
@Suite("UDP typed configuration", .timeLimit(.minutes(1)))
struct UDPTypedConfigurationTests {
    typealias Configuration = UDPTransport.Configuration

    static func parse(_ text: String, defaults: Configuration = .init()) throws -> Configuration {
        try Configuration(url: TransportURL(parsing: text), defaults: defaults)
    }

    @Test func theQueryParsesIntoTypedFields() throws {
        let parsed = try Self.parse("udp://127.0.0.1:9000?mtu=1400&connect-timeout-ms=700&offload=off&srtp=aes-cm-128-hmac-sha1-32&srtp-key-env=KEY")
        let expected = Configuration(
            mtu: 1_400, connectTimeout: .milliseconds(700), offload: .off,
            srtp: .init(profile: "aes-cm-128-hmac-sha1-32", keys: .reference(.environment(variable: "KEY")))
        )
        #expect(parsed == expected)
        // No query: the defaults, as documented.
        #expect(try Self.parse("udp://127.0.0.1:9000") == Configuration(mtu: 1_232, connectTimeout: nil, offload: .auto, srtp: nil))
    }

    @Test func theQueryOverridesOnlyWhatItNames() throws {
        let defaults = Configuration(mtu: 1_400, offload: .on, srtp: .init(keys: .value("a key")))
        #expect(try Self.parse("udp://127.0.0.1:9000", defaults: defaults) == defaults)
        var expected = defaults
        expected.mtu = 1_300
        expected.srtp?.profile = "aead-aes-128-gcm"
        // `srtp=` alone names a profile; the keys stay the transport's value.
        #expect(try Self.parse("udp://127.0.0.1:9000?mtu=1300&srtp=aead-aes-128-gcm", defaults: defaults) == expected)
    }

    @Test(arguments: [
        ("mtu", "mtu=100"), ("mtu", "mtu=big"), ("connect-timeout-ms", "connect-timeout-ms=0"), ("offload", "offload=maybe"),
        ("bogus", "bogus=1"), ("srtp-key-file", "srtp-key-file=a&srtp-key-env=B"), ("srtp", "srtp=aes-cm-128-hmac-sha1-80"),
    ])
    func badOptionsAreRefusedByName(option: String, query: String) throws {
        let error = #expect(throws: ConduitError.self) { try Self.parse("udp://127.0.0.1:9000?\(query)") }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains(option) == true, "\(error?.message ?? "")")
    }

    @Test func typedValuesAreCheckedLikeTheQuery() {
        for (option, configuration) in [("mtu", Configuration(mtu: 70_000)), ("connect-timeout-ms", Configuration(connectTimeout: .zero))] {
            let error = #expect(throws: ConduitError.self) { try configuration.validate() }
            #expect(error?.code == .invalidConfiguration)
            #expect(error?.message.contains(option) == true)
        }
    }

    @Test func aTypedConfigurationConnectsWithoutAURL() async throws {
        let transport = UDPTransport()
        let listener = try await transport.listenUDP(host: "127.0.0.1", port: 0, configuration: Configuration(mtu: 1_400))
        async let accepted = listener.accept()
        let link = try await transport.connectUDP(host: "127.0.0.1", port: listener.localURL.port!, configuration: Configuration(mtu: 1_300))
        let server = try #require(try await accepted)
        // The two ends agree on the smaller MTU; links carry 12 bytes less (the RTP header).
        #expect(link.capabilities.mtu == 1_288)
        #expect(server.capabilities.mtu == 1_288)
        await link.close()
        await server.close()
        await listener.close()
    }

    @Test func aTransportWithoutAKeyReaderReadsNoFileAndSaysWhich() async throws {
        let error = await #expect(throws: ConduitError.self) {
            let listener = try await UDPTransport().listen(on: TransportURL(parsing: "udp://127.0.0.1:0?srtp-key-file=/etc/hostname"))
            await listener.close()
        }
        #if SRTP
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains("srtp-key-file=/etc/hostname") == true, "\(error?.message ?? "")")
        #else
        #expect(error?.code == .unsupportedByTransport)
        #endif
    }

    #if SRTP
    @Test func anSRTPKeyPassedAsAValueProtectsACall() async throws {
        var random = SeededRandom(seed: 7)
        let key = try SRTPKeyMaterial(profile: .aesCM128HmacSha1_80, keyAndSalt: random.bytes(30))
        let transport = UDPTransport(configuration: Configuration(srtp: .init(keys: .value(key.base64))))
        var configuration = ConduitConfiguration()
        configuration.connectTimeout = .seconds(5)
        let runtime = ConduitRuntime(configuration: configuration, registry: TransportRegistry.defaults.registering(transport))
        let listener = try await runtime.listen(on: "udp://127.0.0.1:0", as: "bob")
        async let accepted = listener.accept()
        let caller = try await runtime.connect(to: "udp://127.0.0.1:\(listener.url.port!)", as: "alice")
        let callee = try #require(try await accepted)
        let outbound = try await caller.makeOutboundDataSession(streamID: 100, type: .reliableMessage)
        #expect(await UDPTransportTests.UDPLossyCallTests.awaitIncoming(callee)?.0 == 100)
        let inbound = try await callee.makeInboundDataSession(streamID: 100, expecting: .reliableMessage)
        for text in ["one", "two", "three"] { try await outbound.send(Array(text.utf8)) }
        var got: [String] = []
        for await event in inbound.events {
            guard case .message(let message) = event else { continue }
            got.append(String(decoding: message.bytes, as: UTF8.self))
            if got.count == 3 { break }
        }
        #expect(got == ["one", "two", "three"])
        // A listener without the key cannot read the handshake: the connect fails.
        let plain = ConduitRuntime(configuration: configuration, registry: TransportRegistry.defaults.registering(UDPTransport()))
        let other = try await plain.listen(on: "udp://127.0.0.1:0", as: "carol")
        var quick = configuration
        quick.connectTimeout = .milliseconds(500)
        var keyed = runtime
        keyed.configuration = quick
        await #expect(throws: ConduitError.self) { _ = try await keyed.connect(to: "udp://127.0.0.1:\(other.url.port!)", as: "alice") }
        await other.close()
        await caller.hangUp()
        await callee.hangUp()
        await listener.close()
    }
    #endif
}

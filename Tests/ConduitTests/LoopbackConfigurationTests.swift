import Conduit
import ConduitCore
import ConduitImpairment
import ConduitLoopback
import Testing

/// `LoopbackTransport.Configuration`: the URL query parses into it, bad options are refused by
/// name, and typed values listen and connect without a URL's options.
@Suite struct LoopbackConfigurationTests {
    typealias Configuration = LoopbackTransport.Configuration

    @Test func theQueryParsesIntoTypedFieldsOverTheDefaults() throws {
        let url = try TransportURL(parsing: "loopback://room?mtu=1400&window=65536&loss=0.1&seed=3")
        let parsed = try Configuration(url: url)
        #expect(parsed.mtu == 1_400 && parsed.window == 65_536)
        #expect(parsed.impairment == (try ImpairmentConfiguration(options: ["loss": "0.1", "seed": "3"])))
        let defaults = Configuration(mtu: 1_000, window: 1_024)
        #expect(try Configuration(url: TransportURL(parsing: "loopback://room"), defaults: defaults) == defaults)
        #expect(try Configuration(url: TransportURL(parsing: "loopback://room?window=2048"), defaults: defaults) == Configuration(mtu: 1_000, window: 2_048))
    }

    @Test(arguments: [("mtu", "mtu=1"), ("window", "window=0"), ("bogus", "bogus=1")])
    func badOptionsAreRefusedByName(option: String, query: String) throws {
        let error = #expect(throws: ConduitError.self) { try Configuration(url: TransportURL(parsing: "loopback://room?\(query)")) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains(option) == true)
        let typed = #expect(throws: ConduitError.self) { try Configuration(mtu: 1, window: 0).validate() }
        #expect(typed?.code == .invalidConfiguration)
    }

    @Test func typedValuesListenAndConnect() async throws {
        let transport = LoopbackTransport(configuration: Configuration(mtu: 1_000))
        let listener = try await transport.listen(name: "typed", configuration: Configuration(mtu: 900))
        let link = try await transport.connect(name: "typed")
        // The two ends agree on the smaller MTU.
        #expect(link.capabilities.mtu == 900)
        await link.close()
        await listener.close()
    }
}

import ConduitConformance
import ConduitCore
import ConduitLoopback
import Testing

@Suite("Loopback transport conformance")
struct LoopbackConformanceTests {
    @Test(arguments: ConformanceSuite.Case.allCases)
    func conforms(_ testCase: ConformanceSuite.Case) async throws {
        let suite = ConformanceSuite(
            transport: LoopbackTransport(hub: LoopbackHub()),
            address: { TransportURL(scheme: "loopback", host: "conformance-\($0)") },
            deadAddress: TransportURL(scheme: "loopback", host: "nobody-listens-here")
        )
        try await suite.run(testCase)
    }
}

@Suite("Loopback options")
struct LoopbackOptionTests {
    @Test func mtuAndWindowComeFromTheURL() async throws {
        let transport = LoopbackTransport(hub: LoopbackHub())
        let listener = try await transport.listen(on: TransportURL(parsing: "loopback://opts?mtu=600"))
        async let accepted = listener.accept()
        let client = try await transport.connect(to: TransportURL(parsing: "loopback://opts?mtu=9000&window=1024"))
        let server = try #require(try await accepted)
        // The smaller MTU of the two ends wins, so neither sends what the other cannot take.
        #expect(client.capabilities.mtu == 600)
        #expect(server.capabilities.mtu == 600)
        #expect(client.capabilities.fragmentSize == 600 - DataFrameHeader.size)
        await client.close()
        await server.close()
        await listener.close()
    }

    @Test(arguments: ["loopback://x?mtu=10", "loopback://x?mtu=abc", "loopback://x?window=0", "loopback://x?colour=red", "loopback://x:99", "loopback://x/path"])
    func badOptionsAreTypedErrors(_ text: String) async throws {
        let transport = LoopbackTransport(hub: LoopbackHub())
        await #expect(throws: ConduitError.self) {
            let listener = try await transport.listen(on: TransportURL(parsing: text))
            await listener.close()
        }
    }

    @Test func closedListenerFreesItsName() async throws {
        let hub = LoopbackHub()
        let transport = LoopbackTransport(hub: hub)
        let url = try TransportURL(parsing: "loopback://reuse")
        let first = try await transport.listen(on: url)
        #expect(hub.boundNames == ["reuse"])
        await first.close()
        #expect(hub.boundNames.isEmpty)
        let second = try await transport.listen(on: url)
        await second.close()
    }
}

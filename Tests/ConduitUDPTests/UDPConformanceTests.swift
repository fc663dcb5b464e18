import ConduitConformance
import ConduitCore
import ConduitNetworkTestSupport
import ConduitReliableTransport
import ConduitUDP
import Testing

extension UDPTransportTests {
    @Suite("UDP transport conformance")
    struct UDPConformanceTests {
        @Test(.timeLimit(.minutes(1)), arguments: ConformanceSuite.Case.datagramCases + [.bothDirections, .closeEndsPeerReads])
        func conforms(_ testCase: ConformanceSuite.Case) async throws {
            let dead = try await SilentUDPPort.bind()
            let suite = ConformanceSuite(
                transport: UDPTransport(),
                address: { _ in TransportURL(scheme: "udp", host: "127.0.0.1", port: 0) },
                deadAddress: TransportURL(scheme: "udp", host: "127.0.0.1", port: dead.port, query: ["connect-timeout-ms": "1000"])
            )
            do { try await suite.run(testCase) } catch {
                await dead.close()
                throw error
            }
            await dead.close()
        }
    }
}

extension UDPTransportTests {
    /// Every case, calls included, over real UDP sockets with the reliability engine on top: what
    /// `ConduitRuntime` does with `udp://` URLs.
    @Suite("UDP transport conformance through the reliability engine")
    struct ReliableUDPConformanceTests {
        @Test(.timeLimit(.minutes(1)), arguments: ConformanceSuite.Case.allCases)
        func conforms(_ testCase: ConformanceSuite.Case) async throws {
            let dead = try await SilentUDPPort.bind()
            let suite = ConformanceSuite(
                transport: ReliableTransport(wrapping: UDPTransport()),
                address: { _ in TransportURL(scheme: "udp", host: "127.0.0.1", port: 0) },
                deadAddress: TransportURL(scheme: "udp", host: "127.0.0.1", port: dead.port, query: ["connect-timeout-ms": "1000"])
            )
            do { try await suite.run(testCase) } catch {
                await dead.close()
                throw error
            }
            await dead.close()
        }
    }
}

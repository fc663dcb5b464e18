import ConduitConformance
import ConduitCore
import ConduitUDP
import NIOCore
import NIOPosix
import Testing

extension UDPTransportTests {
    @Suite("UDP transport conformance")
    struct UDPConformanceTests {
        /// A 127.0.0.1 port where nothing listens: bound once, then released.
        static func deadPort() async throws -> Int {
            let channel = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).get()
            let port = channel.localAddress!.port!
            try await channel.close()
            return port
        }

        @Test(.timeLimit(.minutes(1)), arguments: ConformanceSuite.Case.datagramCases + [.bothDirections, .closeEndsPeerReads])
        func conforms(_ testCase: ConformanceSuite.Case) async throws {
            let dead = try await Self.deadPort()
            let suite = ConformanceSuite(
                transport: UDPTransport(),
                address: { _ in TransportURL(scheme: "udp", host: "127.0.0.1", port: 0) },
                deadAddress: TransportURL(scheme: "udp", host: "127.0.0.1", port: dead, query: ["connect-timeout-ms": "1000"])
            )
            try await suite.run(testCase)
        }
    }
}

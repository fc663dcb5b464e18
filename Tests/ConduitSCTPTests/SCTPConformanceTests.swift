import ConduitConformance
import ConduitCore
import ConduitSCTP
import NIOCore
import NIOPosix
import Testing

@Suite("SCTP over UDP transport conformance")
struct SCTPConformanceTests {
    /// A 127.0.0.1 UDP port where nothing listens: bound once, then released.
    static func deadPort() async throws -> Int {
        let channel = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).get()
        let port = channel.localAddress!.port!
        try await channel.close()
        return port
    }

    @Test(.timeLimit(.minutes(1)), arguments: ConformanceSuite.Case.allCases)
    func conforms(_ testCase: ConformanceSuite.Case) async throws {
        let dead = try await Self.deadPort()
        let suite = ConformanceSuite(
            transport: SCTPTransport(),
            address: { _ in TransportURL(scheme: "sctp+udp", host: "127.0.0.1", port: 0) },
            deadAddress: TransportURL(scheme: "sctp+udp", host: "127.0.0.1", port: dead, query: ["connect-timeout-ms": "1000"])
        )
        try await suite.run(testCase)
    }
}

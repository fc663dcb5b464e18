#if SCTP
import ConduitConformance
import ConduitCore
import ConduitNetworkTestSupport
import ConduitSCTP
import Testing

@Suite("SCTP over UDP transport conformance")
struct SCTPConformanceTests {
    @Test(.timeLimit(.minutes(1)), arguments: ConformanceSuite.Case.allCases)
    func conforms(_ testCase: ConformanceSuite.Case) async throws {
        let dead = try await unusedUDPPort()
        let suite = ConformanceSuite(
            transport: SCTPTransport(),
            address: { _ in TransportURL(scheme: "sctp+udp", host: "127.0.0.1", port: 0) },
            deadAddress: TransportURL(scheme: "sctp+udp", host: "127.0.0.1", port: dead, query: ["connect-timeout-ms": "1000"])
        )
        try await suite.run(testCase)
    }
}
#endif

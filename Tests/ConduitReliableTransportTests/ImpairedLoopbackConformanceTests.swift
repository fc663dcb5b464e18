import ConduitConformance
import ConduitCore
import ConduitLoopback
import ConduitReliableTransport
import Testing

/// The whole conformance suite (calls included) over loopback that loses 10 %, reorders 5 % and
/// duplicates 1 % of datagrams in each direction: the reliability engine must make it a link the
/// call machine cannot tell from a perfect one.
@Suite("Conformance on impaired loopback through the reliability engine")
struct ImpairedLoopbackConformanceTests {
    @Test(arguments: ConformanceSuite.Case.allCases)
    func conforms(_ testCase: ConformanceSuite.Case) async throws {
        let impairment = "loss=0.1&reorder=0.05&dup=0.01&delay-ms=2&jitter-ms=1&seed=7"
        let suite = ConformanceSuite(
            transport: ReliableTransport(wrapping: LoopbackTransport(hub: LoopbackHub())),
            address: { try! TransportURL(parsing: "loopback://impaired-\($0)?\(impairment)") },
            deadAddress: TransportURL(scheme: "loopback", host: "nobody-listens-here"),
            pathIsLossy: true
        )
        try await suite.run(testCase)
    }
}

import Conduit
import ConduitNetworkTestSupport
import ConduitCore
import ConduitImpairment
import ConduitUDP
import Testing

extension UDPTransportTests {
    /// Path MTU discovery (RFC 8899) over real UDP sockets on 127.0.0.1, through the impairment
    /// proxy (`conduit impair --max-size`): both ends allow 1,452-byte UDP payloads, the path
    /// carries 1,400; then the route changes to 1,300 mid-call.
    @Suite("Path MTU discovery over UDP through the impairment proxy", .timeLimit(.minutes(2)))
    struct UDPPathMTUTests {
        /// The link packet sizes within `resolution` below a UDP payload limit (less the RTP header).
        static func sizes(under limit: Int) -> ClosedRange<Int> { (limit - 12 - 7)...(limit - 12) }

        @Test("the call's MTU converges to the path's, falls back when the path shrinks, and every message arrives once, in order")
        func convergesAndSurvivesABlackHole() async throws {
            var impairment = ImpairmentConfiguration()
            impairment.maxDatagramSize = 1_400
            let setup = try await UDPLossyCallTests.connect(impairment: impairment, query: "?mtu=1452")
            let first = UDPLossyCallTests.messages(count: 100, seed: 91)
            #expect(try await setup.transferReliably(on: 100, first).map(\.bytes) == first)
            let converged = try await Self.waitForMTU(in: Self.sizes(under: 1_400), of: setup.caller)
            #expect(Self.sizes(under: 1_400).contains(converged))

            await setup.proxy.setMaxDatagramSize(1_300)
            let second = UDPLossyCallTests.messages(count: 100, seed: 92)
            #expect(try await setup.transferReliably(on: 102, second).map(\.bytes) == second)
            let fallen = try await Self.waitForMTU(in: Self.sizes(under: 1_300), of: setup.caller)
            #expect(Self.sizes(under: 1_300).contains(fallen))
            let stats = await setup.proxy.statistics()
            #expect(stats.clientToUpstream.droppedOverSize > 0)
            print("[udp pmtud] converged to \(converged) (path 1,400), then \(fallen) (path 1,300); \(stats.clientToUpstream.droppedOverSize) datagrams dropped for size")
            await setup.end()
        }

        /// Polls the caller's link statistics until the MTU is in `range` (the search runs on
        /// its own after a transfer; probes time out within milliseconds on loopback).
        static func waitForMTU(in range: ClosedRange<Int>, of call: Call) async throws -> Int {
            var mtu = 0
            for _ in 0..<500 {
                mtu = await call.linkStatistics?.mtu ?? 0
                if range.contains(mtu) { return mtu }
                try await Task.sleep(for: .milliseconds(20))
            }
            return mtu
        }
    }
}

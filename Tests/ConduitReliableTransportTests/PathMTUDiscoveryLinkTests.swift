import ConduitARQ
import ConduitCore
import ConduitLoopback
import ConduitReliableTransport
import ConduitTesting
import MetricsTestKit
import Testing

/// Path MTU discovery (RFC 8899) as a host configures it: the `pmtud` URL options, and a reliable
/// link over impaired loopback, on virtual time, whose path drops datagrams above 1,400 bytes.
@Suite("Path MTU discovery on a reliable link")
struct PathMTUDiscoveryLinkTests {
    @Test("pmtud and pmtud-base: on by default, off, a base size, and bad values refused")
    func urlOptions() throws {
        let defaults = try ARQEngine.Configuration(url: TransportURL(parsing: "udp://127.0.0.1:9"))
        #expect(defaults.pathMTUDiscovery == LinkPathMTUSearch.Settings())
        let off = try ARQEngine.Configuration(url: TransportURL(parsing: "udp://127.0.0.1:9?pmtud=off"))
        #expect(off.pathMTUDiscovery == nil)
        let base = try ARQEngine.Configuration(url: TransportURL(parsing: "udp://127.0.0.1:9?pmtud=on&pmtud-base=1300"))
        #expect(base.pathMTUDiscovery?.basePacketSize == 1_300)
        for bad in ["pmtud=maybe", "pmtud-base=10", "pmtud-base=511", "pmtud-base=big"] {
            let error = #expect(throws: ConduitError.self) { try ARQEngine.Configuration(url: TransportURL(parsing: "udp://127.0.0.1:9?\(bad)")) }
            #expect(error?.code == .invalidConfiguration)
            #expect(error?.message.contains(String(bad.prefix { $0 != "=" })) == true, "\(error?.message ?? "")")
        }
        let stripped = try TransportURL(parsing: "udp://127.0.0.1:9?mtu=1500&pmtud=off&pmtud-base=1300").withoutReliableTransportOptions
        #expect(stripped.query == ["mtu": "1500"])
    }

    @Test("the link's MTU statistic and gauge follow the search to the path's 1,400 bytes; the fragment size stays the base's")
    func linkFollowsTheSearch() async throws {
        let metrics = TestMetrics()
        let pair = try await VirtualReliablePair(
            name: "rtl-pmtud", listenQuery: "?mtu=1500", connectQuery: "?mtu=1500&max-size=1400&delay-ms=10&seed=4", metrics: metrics)
        let (clock, link, peer) = (pair.clock, pair.link, pair.peer)
        #expect(link.capabilities.fragmentSize == ARQEngine.Configuration().maxFramePayload - DataFrameHeader.size)

        let frames = 300
        var batch = DatagramBatch()
        for frame in 0..<frames { batch.append([UInt8](repeating: UInt8(truncatingIfNeeded: frame), count: 100 + frame)) }
        try await link.write(batch)
        let received = try await clock.run(advancingBy: .milliseconds(5), limit: .seconds(60)) {
            var received: [[UInt8]] = []
            while received.count < frames, let batch = try await peer.read() {
                for index in 0..<batch.count { received.append(batch[index]) }
            }
            // Then until the search is over.
            while true {
                let statistics = await link.statistics
                if statistics.pathProbesSent >= 3, statistics.pathMTU >= 1_393 { break }
                try await clock.sleep(until: clock.now() + .milliseconds(10))
            }
            return received
        }
        #expect(received == (0..<frames).map { [UInt8](repeating: UInt8(truncatingIfNeeded: $0), count: 100 + $0) })
        let mtu = try #require(await (link as any TransportLink).linkStatistics()?.mtu)
        #expect((1_393...1_400).contains(mtu))
        try await clock.run(advancingBy: .milliseconds(5), limit: .seconds(30)) { await link.close() }
        #expect(try metrics.expectGauge("conduit_link_mtu_bytes", [("transport", "loopback")]).lastValue == Double(mtu))
        try await clock.run(advancingBy: .milliseconds(5), limit: .seconds(30)) { await peer.close() }
        await pair.listener.close()
    }
}

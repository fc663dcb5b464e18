import ConduitARQ
import ConduitCore
import ConduitLoopback
import ConduitReliableTransport
import ConduitTesting
import MetricsTestKit
import Testing

/// Two reliable links on virtual time over a loopback path: the caller's (its metrics counted in
/// `metrics`, dimension `transport=loopback`) and the listener's, both started.
struct VirtualReliablePair {
    let clock = VirtualClock()
    let hub: LoopbackHub
    let listener: any TransportListener
    let link: ReliableTransportLink
    let peer: ReliableTransportLink

    /// Listens at `loopback://NAME?LISTEN`, connects with `loopback://NAME?CONNECT`; the engine's
    /// options come from the caller's URL.
    init(name: String, listenQuery: String = "", connectQuery: String, metrics: TestMetrics) async throws {
        let hub = LoopbackHub(clock: clock)
        let transport = LoopbackTransport(hub: hub)
        let listener = try await transport.listen(on: TransportURL(parsing: "loopback://\(name)\(listenQuery)"))
        async let accepted = listener.accept()
        let url = try TransportURL(parsing: "loopback://\(name)\(connectQuery)")
        let raw = try await transport.connect(to: url.withoutReliableTransportOptions)
        let peerRaw = try #require(try await accepted)
        (self.hub, self.listener) = (hub, listener)
        let configuration = try ARQEngine.Configuration(url: url)
        link = ReliableTransportLink(wrapping: raw, configuration: configuration, metricsFactory: metrics, transport: "loopback", clock: clock)
        peer = ReliableTransportLink(wrapping: peerRaw, configuration: configuration, clock: clock)
        await link.start()
        await peer.start()
    }
}

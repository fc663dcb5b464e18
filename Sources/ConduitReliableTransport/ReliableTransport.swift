public import ConduitCore

import ConduitARQ
/// Any transport with the core's reliability engine under each of its links, for hosts that use
/// transports directly rather than through `ConduitRuntime` (which wraps unreliable links itself),
/// and for the conformance suite. Links that are already reliable and ordered pass through.
public struct ReliableTransport: Transport {
    /// The transport whose links get the engine.
    public let inner: any Transport

    /// Wraps `inner`: its lossy links get the reliability engine, reliable ones pass through unchanged.
    public init(wrapping inner: any Transport) { self.inner = inner }

    public var schemes: [String] { inner.schemes }

    /// Connects through the inner transport and wraps the link if it may lose, duplicate or reorder datagrams. The engine's options come from `url`'s query.
    public func connect(to url: TransportURL) async throws(ConduitError) -> any TransportLink {
        let configuration = try ARQEngine.Configuration(url: url)
        let link = try await inner.connect(to: url.withoutReliableTransportOptions)
        return await ReliableTransportLink.wrapIfNeeded(link, configuration: configuration)
    }

    /// Listens through the inner transport; each accepted link is wrapped as by ``connect(to:)``.
    public func listen(on url: TransportURL) async throws(ConduitError) -> any TransportListener {
        let configuration = try ARQEngine.Configuration(url: url)
        let listener = try await inner.listen(on: url.withoutReliableTransportOptions)
        return ReliableTransportListener(inner: listener, configuration: configuration)
    }
}

final class ReliableTransportListener: TransportListener {
    let inner: any TransportListener
    let configuration: ARQEngine.Configuration

    init(inner: any TransportListener, configuration: ARQEngine.Configuration) {
        self.inner = inner
        self.configuration = configuration
    }

    var localURL: TransportURL { inner.localURL }

    func accept() async throws(ConduitError) -> (any TransportLink)? {
        guard let link = try await inner.accept() else { return nil }
        return await ReliableTransportLink.wrapIfNeeded(link, configuration: configuration)
    }

    func close() async { await inner.close() }
}

public import ConduitCore

import ConduitARQ
import ConduitImpairment
/// The in-process transport: lossless, ordered, fast. The embedded default and the test double.
///
/// URL: `loopback://NAME[?mtu=BYTES&window=BYTES&loss=P&dup=P&reorder=P&corrupt=P&delay-ms=D&jitter-ms=J&rate=BPS&seed=S]`.
/// Each option is a field of ``Configuration`` (documented there, with its default): the
/// transport's ``configuration`` holds the defaults of every link, and a URL's query overrides
/// the fields it names. ``listen(name:configuration:)`` and ``connect(name:configuration:)`` take
/// a typed value instead of a URL. ``LoopbackHub/setPartitioned(_:_:)`` blacks an impaired link out.
public struct LoopbackTransport: Transport {
    /// The default datagram size, in bytes (the `mtu` option): 1,200-byte payloads after the headers, as on a network.
    public static let defaultMTU = 1_232
    /// The default bytes in flight per direction (the `window` option): 4 MiB.
    public static let defaultWindow = 4 * 1024 * 1024
    /// The largest datagram, in bytes, a loopback link accepts (the `mtu` option's maximum).
    public static let maxDatagramSize = 65_535

    /// Where this transport's listeners bind their names; runtimes that share it reach each other.
    public let hub: LoopbackHub
    /// The defaults of every link this transport makes; a URL's query overrides what it names.
    public let configuration: Configuration
    public var schemes: [String] { ["loopback"] }

    /// Makes a transport on `hub` (a new, private hub by default) with `configuration` as its links' defaults.
    public init(hub: LoopbackHub = LoopbackHub(), configuration: Configuration = .init()) {
        self.hub = hub
        self.configuration = configuration
    }

    /// Binds `url`'s name in the hub. Throws `addressInUse` if a listener already has it, `invalidConfiguration` for bad options.
    public func listen(on url: TransportURL) async throws(ConduitError) -> any TransportListener {
        try listen(url, options: Configuration(url: url, defaults: configuration))
    }

    /// Binds `name` in the hub with a typed configuration (the transport's own by default)
    /// instead of a URL's options.
    public func listen(name: String, configuration: Configuration? = nil) async throws(ConduitError) -> any TransportListener {
        let options = configuration ?? self.configuration
        try options.validate()
        return try listen(TransportURL(scheme: "loopback", host: name), options: options)
    }

    private func listen(_ url: TransportURL, options: Configuration) throws(ConduitError) -> any TransportListener {
        let listener = LoopbackListener(name: url.host, url: url, options: options, hub: hub)
        try hub.bind(url.host, listener)
        return listener
    }

    /// Connects to the listener bound at `url`'s name; throws `connectionFailed` if nothing is bound there.
    public func connect(to url: TransportURL) async throws(ConduitError) -> any TransportLink {
        try await connect(url, options: Configuration(url: url, defaults: configuration))
    }

    /// Connects to the listener bound at `name` with a typed configuration (the transport's own
    /// by default) instead of a URL's options.
    public func connect(name: String, configuration: Configuration? = nil) async throws(ConduitError) -> any TransportLink {
        let options = configuration ?? self.configuration
        try options.validate()
        return try await connect(TransportURL(scheme: "loopback", host: name), options: options)
    }

    private func connect(_ url: TransportURL, options: Configuration) async throws(ConduitError) -> any TransportLink {
        guard let listener = hub.listener(named: url.host) else {
            throw ConduitError(.connectionFailed, "nothing listens at loopback://\(url.host)")
        }
        let impairment = options.impairment ?? listener.options.impairment
        let (client, server) = LoopbackLink.pair(
            capabilities: TransportCapabilities(
                isReliable: impairment == nil,
                isOrdered: impairment == nil,
                supportsPartialReliability: false,
                maxDatagramSize: LoopbackTransport.maxDatagramSize,
                mtu: min(options.mtu, listener.options.mtu)
            ),
            window: min(options.window, listener.options.window),
            name: url.host,
            impairment: impairment.map { ($0, hub.partitionSwitch(for: url.host)) },
            clock: hub.clock
        )
        guard await listener.offer(server) else {
            throw ConduitError(.connectionFailed, "loopback://\(url.host) stopped listening")
        }
        return client
    }
}

/// Accepts links that connect to one name of a ``LoopbackHub``.
public final class LoopbackListener: TransportListener {
    let name: String
    let options: LoopbackTransport.Configuration
    public let localURL: TransportURL
    /// Weak: the hub holds its bound listeners, so a listener never closed would otherwise keep
    /// its hub, and the hub it, alive for good once the transport is gone.
    private weak let hub: LoopbackHub?
    private let backlog = AsyncBoundedChannel<LoopbackLink>(capacity: 128)

    init(name: String, url: TransportURL, options: LoopbackTransport.Configuration, hub: LoopbackHub) {
        self.name = name
        self.localURL = url
        self.options = options
        self.hub = hub
    }

    func offer(_ link: LoopbackLink) async -> Bool { await backlog.send(link) }

    public func accept() async throws(ConduitError) -> (any TransportLink)? { await backlog.next() }

    /// Unbinds the name: a pending `accept` returns nil; links already accepted keep working.
    public func close() async {
        hub?.unbind(name, self)
        backlog.finish()
        while let link = await backlog.next() { await link.close() }
    }
}

public import ConduitCore

import ConduitARQ
import ConduitImpairment
/// The in-process transport: lossless, ordered, fast. The embedded default and the test double.
///
/// URL: `loopback://NAME[?mtu=BYTES&window=BYTES&loss=P&dup=P&reorder=P&corrupt=P&delay-ms=D&jitter-ms=J&rate=BPS&seed=S]`.
/// - `mtu`: datagram size the core fragments to (default 1232, so 1,200-byte payloads as on a network).
/// - `window`: bytes in flight per direction before `write` suspends (default 4 MiB): this is the
///   backpressure a slow reader exerts on its peer. On an impaired link it is the emulated
///   router queue instead: past it, datagrams are tail-dropped.
/// - Impairment (user-space netem, seeded, per direction; see `ImpairmentConfiguration`): taken
///   from the connecting URL, else from the listening one. An impaired link declares itself
///   unreliable and unordered, so the core supplies reliability over it.
///   ``LoopbackHub/setPartitioned(_:_:)`` blacks it out.
public struct LoopbackTransport: Transport {
    /// The default datagram size, in bytes (the `mtu` option): 1,200-byte payloads after the headers, as on a network.
    public static let defaultMTU = 1_232
    /// The default bytes in flight per direction (the `window` option): 4 MiB.
    public static let defaultWindow = 4 * 1024 * 1024
    /// The largest datagram, in bytes, a loopback link accepts (the `mtu` option's maximum).
    public static let maxDatagramSize = 65_535

    /// Where this transport's listeners bind their names; runtimes that share it reach each other.
    public let hub: LoopbackHub
    public var schemes: [String] { ["loopback"] }

    /// Makes a transport on `hub` (a new, private hub by default).
    public init(hub: LoopbackHub = LoopbackHub()) {
        self.hub = hub
    }

    struct Options {
        var mtu: Int
        var window: Int
        var impairment: ImpairmentConfiguration?

        init(_ url: TransportURL) throws(ConduitError) {
            guard url.port == nil, url.path.isEmpty else {
                throw ConduitError(.invalidAddress, "a loopback address is loopback://NAME, got \(url)")
            }
            // The reliability engine's options too: an impaired loopback link runs under it.
            let known: Set<String> = Set(["mtu", "window"]).union(ImpairmentConfiguration.optionNames).union(ReliableLink.Configuration.urlOptionKeys)
            if let unknown = url.query.keys.sorted().first(where: { !known.contains($0) }) {
                throw ConduitError(.invalidConfiguration, "unknown loopback option '\(unknown)' (known: \(known.sorted().joined(separator: ", ")))")
            }
            let impairmentOptions = url.query.filter { ImpairmentConfiguration.optionNames.contains($0.key) }
            impairment = impairmentOptions.isEmpty ? nil : try ImpairmentConfiguration(options: impairmentOptions)
            mtu = try url.intOption("mtu", default: LoopbackTransport.defaultMTU, in: (DataFrameHeader.size + 1)...LoopbackTransport.maxDatagramSize)
            window = try url.intOption("window", default: LoopbackTransport.defaultWindow, in: 1...(1 << 30))
        }
    }

    /// Binds `url`'s name in the hub. Throws `addressInUse` if a listener already has it, `invalidConfiguration` for bad options.
    public func listen(on url: TransportURL) async throws(ConduitError) -> any TransportListener {
        let options = try Options(url)
        let listener = LoopbackListener(name: url.host, url: url, options: options, hub: hub)
        try hub.bind(url.host, listener)
        return listener
    }

    /// Connects to the listener bound at `url`'s name; throws `connectionFailed` if nothing is bound there.
    public func connect(to url: TransportURL) async throws(ConduitError) -> any TransportLink {
        let options = try Options(url)
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
            impairment: impairment.map { ($0, hub.partitionSwitch(for: url.host)) }
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
    let options: LoopbackTransport.Options
    public let localURL: TransportURL
    private let hub: LoopbackHub
    private let backlog = AsyncBoundedChannel<LoopbackLink>(capacity: 128)

    init(name: String, url: TransportURL, options: LoopbackTransport.Options, hub: LoopbackHub) {
        self.name = name
        self.localURL = url
        self.options = options
        self.hub = hub
    }

    func offer(_ link: LoopbackLink) async -> Bool { await backlog.send(link) }

    public func accept() async throws(ConduitError) -> (any TransportLink)? { await backlog.next() }

    /// Unbinds the name: a pending `accept` returns nil; links already accepted keep working.
    public func close() async {
        hub.unbind(name, self)
        backlog.finish()
        while let link = await backlog.next() { await link.close() }
    }
}

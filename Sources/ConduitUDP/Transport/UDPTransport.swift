public import ConduitCore
public import CoreMetrics
public import Logging
public import NIOCore
import NIOPosix

/// The UDP transport: an unreliable, unordered datagram link over SwiftNIO in which every
/// datagram is an RTP packet (data) or an RTCP packet (handshake and close), so that SRTP can
/// protect it unchanged. Reliability comes from the layer above (ConduitReliability).
///
/// URL: `udp://HOST:PORT[?mtu=BYTES&connect-timeout-ms=MS]`.
/// - `mtu`: UDP payload bytes per datagram, RTP header included (default 1232, 256...65507). The
///   link's `maxDatagramSize` and `mtu` are 12 less. The two ends agree on the smaller value.
/// - `connect-timeout-ms`: how long `connect` retries the handshake. Overrides the configuration's
///   `connectTimeoutMs` under `ConduitRuntime`; the default is that value (10000, also when the
///   transport is used on its own).
///
/// Listening on port 0 binds an ephemeral port; the listener's `localURL` has the real one.
///
/// Silent by default; given a `Logger` and a `MetricsFactory` it logs listeners and links
/// (`debug`, metadata `conduit.transport` = `udp`, `conduit.remote`) and counts each link's
/// datagrams, bytes and drops when the link ends (`conduit_transport_*`, `conduit_drops_total`
/// with `kind` = `transport`; see the README's "Logging and metrics").
public struct UDPTransport: Transport {
    /// `udp`.
    public var schemes: [String] { ["udp"] }
    private let group: any EventLoopGroup
    private let observer: UDPObserver

    /// A transport on SwiftNIO's shared event loops.
    public init() {
        self.init(group: MultiThreadedEventLoopGroup.singleton)
    }

    /// A transport on SwiftNIO's shared event loops, logging through `logger` and counting through
    /// `metricsFactory` (silent by default).
    public init(logger: Logger, metricsFactory: any MetricsFactory = NOOPMetricsHandler.instance) {
        self.init(group: MultiThreadedEventLoopGroup.singleton, logger: logger, metricsFactory: metricsFactory)
    }

    /// A transport on `group`'s event loops, logging through `logger` and counting through
    /// `metricsFactory` (both silent by default).
    public init(
        group: any EventLoopGroup,
        logger: Logger = Logger(label: "conduit", factory: { _ in SwiftLogNoOpLogHandler() }),
        metricsFactory: any MetricsFactory = NOOPMetricsHandler.instance
    ) {
        self.group = group
        self.observer = UDPObserver(logger: logger, metricsFactory: metricsFactory)
    }

    /// Binds a UDP socket at `url`'s host and port (port 0: ephemeral; the listener's `localURL` has the real one). Throws `invalidConfiguration` for unknown options and `addressInUse` if the port is taken.
    public func listen(on url: TransportURL) async throws(ConduitError) -> any TransportListener {
        try await listenUDP(on: url)
    }

    /// `listen`, returning the concrete listener (for its statistics).
    public func listenUDP(on url: TransportURL) async throws(ConduitError) -> UDPListener {
        let options = try UDPOptions(url, listening: true)
        let address = try UDPOptions.resolve(url)
        let loop = group.next()
        let filter = try options.srtp.map { configuration throws(ConduitError) in try configuration.makeFilter(isClient: false) }
        let offload = UDPOffloadPolicy(mode: options.offload)
        let core = UDPListenerCore(loop: loop, mtu: options.mtu, offload: offload, srtp: filter, observer: observer)
        let channel = try await UDPSocket.bind(
            to: address,
            on: loop,
            mtu: options.mtu,
            receiveOffload: offload.receives,
            onDatagram: { core.receive($0, via: $1) },
            onBurstEnd: { core.flushReceived() }
        )
        let bound = channel.localAddress ?? address
        let localURL = TransportURL(scheme: "udp", host: bound.ipAddress ?? url.host, port: bound.port ?? url.port, query: url.query)
        observer.logger.debug("udp listening", metadata: ["conduit.url": "\(localURL)"])
        return UDPListener(localURL: localURL, channel: channel, core: core)
    }

    /// Connects to `url` with the cookie handshake, retried with backoff until `connect-timeout-ms`. Throws `timedOut` (with SRTP, saying that keys may be why) or `connectionFailed` when the listener rejects the handshake.
    public func connect(to url: TransportURL) async throws(ConduitError) -> any TransportLink {
        try await connectUDP(to: url)
    }

    /// `connect` within `timeout`, unless the URL has its own `connect-timeout-ms`.
    public func connect(to url: TransportURL, timeout: Duration) async throws(ConduitError) -> any TransportLink {
        try await connectUDP(to: url.withConnectTimeout(default: timeout))
    }

    /// `connect`, returning the concrete link (for its statistics).
    public func connectUDP(to url: TransportURL) async throws(ConduitError) -> UDPLink {
        let options = try UDPOptions(url, listening: false)
        let server = try UDPOptions.resolve(url)
        let loop = group.next()
        let filter = try options.srtp.map { configuration throws(ConduitError) in try configuration.makeFilter(isClient: true) }
        let offload = UDPOffloadPolicy(mode: options.offload)
        let handshake = UDPClientHandshake(loop: loop, server: server, mtu: options.mtu, offload: offload, srtp: filter, observer: observer)
        let channel = try await UDPSocket.bind(
            to: try UDPSocket.ephemeral(for: server),
            on: loop,
            mtu: options.mtu,
            receiveOffload: offload.receives,
            onDatagram: { handshake.receive($0, via: $1) },
            onBurstEnd: { handshake.flushReceived() }
        )
        let timeout = ConduitError(
            .timedOut,
            "no answer from udp://\(UDPSocket.describe(server)) within \(options.connectTimeoutText)"
                + (options.srtp != nil ? " (SRTP is on: a listener without SRTP cannot read our handshake)" : "")
        )
        do {
            let established = handshake.start(
                on: channel,
                timeout: .milliseconds(Int64(options.connectTimeoutMilliseconds)),
                timeoutError: timeout
            )
            return try await withTaskCancellationHandler {
                try await established.get()
            } onCancel: {
                handshake.cancel(ConduitError(.connectionFailed, "connecting to udp://\(UDPSocket.describe(server)) was cancelled"))
            }
        } catch {
            try? await channel.close()
            throw (error as? ConduitError) ?? ConduitError(.connectionFailed, "connecting to \(url) failed: \(error)")
        }
    }
}

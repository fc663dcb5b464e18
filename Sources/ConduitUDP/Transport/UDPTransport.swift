public import ConduitCore
public import CoreMetrics
public import Logging
public import NIOCore
import NIOPosix

/// The UDP transport: an unreliable, unordered datagram link over SwiftNIO in which every
/// datagram is an RTP packet (data) or an RTCP packet (handshake and close), so that SRTP can
/// protect it unchanged. Reliability comes from the layer above (ConduitReliableTransport).
///
/// URL: `udp://HOST:PORT[?mtu=BYTES&connect-timeout-ms=MS&offload=MODE&srtp=...]`. Each option
/// is a field of ``Configuration`` (documented there, with its default): the transport's
/// ``configuration`` holds the defaults of every link, and a URL's query overrides the fields it
/// names. Connect and listen with a typed value instead of a URL with
/// ``connectUDP(host:port:configuration:)`` and ``listenUDP(host:port:configuration:)``.
///
/// SRTP keys are values (``Configuration/SRTP/Keys/value(_:)``): the transport never reads a
/// file or the environment. A URL's `srtp-key-file` and `srtp-key-env` are references that the
/// transport's ``KeyReader`` resolves on the app's behalf; without one they are refused.
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
    /// The defaults of every link this transport makes; a URL's query overrides what it names.
    public let configuration: Configuration
    private let keyReader: KeyReader?
    private let group: any EventLoopGroup
    private let observer: UDPObserver

    /// A transport on SwiftNIO's shared event loops, with `configuration` as its links' defaults
    /// and `keyReader` to resolve the SRTP key references URLs make (none: they are refused).
    public init(configuration: Configuration = .init(), keyReader: KeyReader? = nil) {
        self.init(group: MultiThreadedEventLoopGroup.singleton, configuration: configuration, keyReader: keyReader)
    }

    /// A transport on SwiftNIO's shared event loops, logging through `logger` and counting through
    /// `metricsFactory` (silent by default).
    public init(configuration: Configuration = .init(), keyReader: KeyReader? = nil, logger: Logger, metricsFactory: any MetricsFactory = NOOPMetricsHandler.instance) {
        self.init(group: MultiThreadedEventLoopGroup.singleton, configuration: configuration, keyReader: keyReader, logger: logger, metricsFactory: metricsFactory)
    }

    /// A transport on `group`'s event loops, logging through `logger` and counting through
    /// `metricsFactory` (both silent by default).
    public init(
        group: any EventLoopGroup,
        configuration: Configuration = .init(),
        keyReader: KeyReader? = nil,
        logger: Logger = Logger(label: "conduit", factory: { _ in SwiftLogNoOpLogHandler() }),
        metricsFactory: any MetricsFactory = NOOPMetricsHandler.instance
    ) {
        self.group = group
        self.configuration = configuration
        self.keyReader = keyReader
        self.observer = UDPObserver(logger: logger, metricsFactory: metricsFactory)
    }

    /// The SRTP filter of one end, or nil without SRTP: the keys are the configuration's value,
    /// or what the key reader finds for the URL's reference.
    private func srtpFilter(_ configuration: Configuration, isClient: Bool) throws(ConduitError) -> UDPSRTPFilter? {
        guard let settings = configuration.srtp else { return nil }
        let srtp = try UDPSRTPConfiguration(settings) { () throws(ConduitError) -> String in
            switch settings.keys {
            case .value(let text):
                return text
            case .reference(let reference):
                guard let keyReader else {
                    throw ConduitError(
                        .invalidConfiguration,
                        "option \(reference): UDPTransport reads no files or environment; pass the keys as a value (Configuration.SRTP.Keys.value) or give the transport a KeyReader"
                    )
                }
                return try keyReader.keyText(reference)
            }
        }
        return try srtp.makeFilter(isClient: isClient)
    }

    /// Binds a UDP socket at `url`'s host and port (port 0: ephemeral; the listener's `localURL` has the real one). Throws `invalidConfiguration` for unknown options and `addressInUse` if the port is taken.
    public func listen(on url: TransportURL) async throws(ConduitError) -> any TransportListener {
        try await listenUDP(on: url)
    }

    /// `listen`, returning the concrete listener (for its statistics).
    public func listenUDP(on url: TransportURL) async throws(ConduitError) -> UDPListener {
        try await listenUDP(at: url, configuration: Configuration(url: url, defaults: configuration))
    }

    /// Listens at `host` and `port` (0: ephemeral) with a typed configuration (the transport's
    /// own by default) instead of a URL's options.
    public func listenUDP(host: String, port: Int, configuration: Configuration? = nil) async throws(ConduitError) -> UDPListener {
        let configuration = configuration ?? self.configuration
        try configuration.validate()
        return try await listenUDP(at: TransportURL(scheme: "udp", host: host, port: port), configuration: configuration)
    }

    private func listenUDP(at url: TransportURL, configuration options: Configuration) async throws(ConduitError) -> UDPListener {
        let address = try SocketAddressing.resolve(url)
        let loop = group.next()
        let filter = try srtpFilter(options, isClient: false)
        let offload = UDPOffloadPolicy(mode: options.offload)
        let direct = try UDPDirectSocket.open(boundTo: address, reusePort: options.reusePort)
        if options.reusePort, direct == nil {
            throw ConduitError(.unsupportedByTransport, "reusePort: listeners sharing a UDP port need Linux (SO_REUSEPORT on the transport's own socket)")
        }
        let core = UDPListenerCore(loop: loop, mtu: options.mtu, offload: offload, srtp: filter, observer: observer, directSocket: direct, limits: options.listenerLimits)
        let channel = try await UDPSocket.bind(
            to: address,
            adopting: direct,
            on: loop,
            mtu: options.mtu,
            receiveOffload: offload.receives,
            onDatagram: { core.receive($0, via: $1) },
            onBurstEnd: { core.endBurst(reads: $0) }
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
        try await connectUDP(at: url, configuration: Configuration(url: url, defaults: configuration), timeout: timeout)
    }

    /// `connect`, returning the concrete link (for its statistics).
    public func connectUDP(to url: TransportURL) async throws(ConduitError) -> UDPLink {
        try await connectUDP(at: url, configuration: Configuration(url: url, defaults: configuration), timeout: nil)
    }

    /// Connects to the listener at `host` and `port` with a typed configuration (the
    /// transport's own by default) instead of a URL's options.
    public func connectUDP(host: String, port: Int, configuration: Configuration? = nil) async throws(ConduitError) -> UDPLink {
        let configuration = configuration ?? self.configuration
        try configuration.validate()
        return try await connectUDP(at: TransportURL(scheme: "udp", host: host, port: port), configuration: configuration, timeout: nil)
    }

    private func connectUDP(at url: TransportURL, configuration options: Configuration, timeout caller: Duration?) async throws(ConduitError) -> UDPLink {
        guard url.port != 0 else {
            throw ConduitError(.invalidAddress, "cannot connect to port 0 (\(url))")
        }
        let limit = options.connectLimit(caller: caller)
        let server = try SocketAddressing.resolve(url)
        let loop = group.next()
        let filter = try srtpFilter(options, isClient: true)
        let offload = UDPOffloadPolicy(mode: options.offload)
        let local = try SocketAddressing.ephemeral(for: server)
        let direct = try UDPDirectSocket.open(boundTo: local)
        let handshake = UDPClientHandshake(loop: loop, server: server, mtu: options.mtu, offload: offload, srtp: filter, observer: observer, directSocket: direct)
        let channel = try await UDPSocket.bind(
            to: local,
            adopting: direct,
            on: loop,
            mtu: options.mtu,
            receiveOffload: offload.receives,
            onDatagram: { handshake.receive($0, via: $1) },
            onBurstEnd: { _ in handshake.flushReceived() }
        )
        let timeout = ConduitError(
            .timedOut,
            "no answer from udp://\(SocketAddressing.describe(server)) within \(limit.limitDescription)"
                + (options.srtp != nil ? " (SRTP is on: a listener without SRTP cannot read our handshake)" : "")
        )
        do {
            // A later socket for the link (its client address changes): the same options, no
            // direct writes, the same handshake demultiplexing what it reads.
            let openSocket: @Sendable () async throws(ConduitError) -> any Channel = { [weak handshake] () async throws(ConduitError) -> any Channel in
                guard let handshake else { throw ConduitError(.connectionClosed, "the UDP link to udp://\(SocketAddressing.describe(server)) is gone") }
                return try await UDPSocket.bind(
                    to: local, on: loop, mtu: options.mtu, receiveOffload: offload.receives,
                    onDatagram: { handshake.receive($0, via: $1) }, onBurstEnd: { _ in handshake.flushReceived() })
            }
            let established = handshake.start(
                on: channel,
                timeout: .nanoseconds(Int64(clamping: limit.components.seconds * 1_000_000_000 + limit.components.attoseconds / 1_000_000_000)),
                timeoutError: timeout, openSocket: openSocket
            )
            return try await withTaskCancellationHandler {
                try await established.get()
            } onCancel: {
                handshake.cancel(ConduitError(.connectionFailed, "connecting to udp://\(SocketAddressing.describe(server)) was cancelled"))
            }
        } catch {
            try? await channel.close()
            throw (error as? ConduitError) ?? ConduitError(.connectionFailed, "connecting to \(url) failed: \(error)")
        }
    }
}

#if SCTP
public import ConduitCore
public import CoreMetrics
public import Logging

/// SCTP over UDP (usrsctp, RFC 6951 framing without DTLS) as a Conduit transport, and a home for
/// standard data-channel peers.
///
/// URL: `sctp+udp://HOST:PORT[?sctp-port=5000&connect-timeout-ms=5000&streams=1024&init-attempts=8]`
/// (see ``SCTPOptions``). `HOST:PORT` is the UDP address; both ends use SCTP port 5000 unless
/// told otherwise. Listening on port 0 binds an ephemeral UDP port (the listener's `localURL`).
///
/// A Conduit call maps onto data channels as ``SCTPConduitMapping`` describes. A peer whose first
/// channel is not Conduit's goes to `standardPeers` (for example an echo service), or is closed.
///
/// Silent by default; given a `Logger` and a `MetricsFactory` it logs links (`debug`, metadata
/// `conduit.transport` = `sctp+udp`, `conduit.remote`) and adds each association's packets,
/// messages and drops to counters when its link closes (see the README's "Logging and metrics").
public struct SCTPTransport: Transport {
    /// `sctp+udp`.
    public var schemes: [String] { [SCTPOptions.scheme] }
    private let standardPeers: (@Sendable (SCTPAssociation) async -> Void)?
    private let observer: SCTPObserver

    /// A transport whose listeners hand peers that are not Conduit to `standardPeers` (nil:
    /// closed); logging through `logger` and counting through `metricsFactory` (silent by default).
    public init(
        standardPeers: (@Sendable (SCTPAssociation) async -> Void)? = nil,
        logger: Logger = Logger(label: "conduit", factory: { _ in SwiftLogNoOpLogHandler() }),
        metricsFactory: any MetricsFactory = NOOPMetricsHandler.instance
    ) {
        self.standardPeers = standardPeers
        self.observer = SCTPObserver(logger: logger, metricsFactory: metricsFactory)
    }

    /// Connects an association to `url` and opens the call's channel. Throws `timedOut` after `connect-timeout-ms`, `connectionFailed` when usrsctp gives up.
    public func connect(to url: TransportURL) async throws(ConduitError) -> any TransportLink {
        try await connectSCTP(to: url)
    }

    /// `connect` within `timeout`, unless the URL has its own `connect-timeout-ms`.
    public func connect(to url: TransportURL, timeout: Duration) async throws(ConduitError) -> any TransportLink {
        try await connectSCTP(to: url.withConnectTimeout(default: timeout))
    }

    /// `connect`, returning the concrete link (for its statistics).
    public func connectSCTP(to url: TransportURL) async throws(ConduitError) -> SCTPLink {
        let connection = try await SCTPConnector.connect(to: url, mode: .conduit, logger: observer.logger)
        // The call's own channel, which also tells the listener this is a Conduit caller.
        let result = await SCTPAssociation.onLoop(connection) { () throws(ConduitError) in
            let open = DataChannelOpen(reliability: .reliableOrdered, label: SCTPConduitMapping.callLabel, protocol: SCTPConduitMapping.protocolName)
            let (stream, _) = try connection.openChannel(open, withHandle: false)
            connection.conduitStreams[FrameTag.controlChannel] = stream
        }
        if case .failure(let error) = result {
            try? await connection.stack.run { connection.close() }
            throw error
        }
        let link = SCTPLink(connection: connection, observer: observer)
        observer.linkEstablished(remote: link.remoteDescription, isClient: true)
        return link
    }

    /// Connects to `host` and `port` with a typed configuration instead of a URL's options.
    public func connectSCTP(host: String, port: Int, configuration: Configuration) async throws(ConduitError) -> SCTPLink {
        try configuration.validate()
        return try await connectSCTP(to: TransportURL(scheme: SCTPOptions.scheme, host: host, port: port, query: configuration.query))
    }

    /// Listens at `host` and `port` (0: ephemeral) with a typed configuration instead of a URL's options.
    public func listenSCTP(host: String, port: Int, configuration: Configuration) async throws(ConduitError) -> SCTPListener {
        try configuration.validate()
        return try await listenSCTP(on: TransportURL(scheme: SCTPOptions.scheme, host: host, port: port, query: configuration.query))
    }

    /// Binds a UDP socket at `url` and accepts associations (port 0: an ephemeral port). Throws `addressInUse` if the port is taken.
    public func listen(on url: TransportURL) async throws(ConduitError) -> any TransportListener {
        try await listenSCTP(on: url)
    }

    /// `listen`, returning the concrete listener (for its associations and statistics).
    public func listenSCTP(on url: TransportURL) async throws(ConduitError) -> SCTPListener {
        let listener = SCTPListener(associations: try await SCTPAssociationListener.bind(url, conduitAware: true, logger: observer.logger), standardPeers: standardPeers, observer: observer)
        observer.logger.debug("sctp listening", metadata: ["conduit.url": "\(listener.localURL)"])
        return listener
    }
}

/// Accepts Conduit callers as links; hands standard peers to the transport's handler.
public final class SCTPListener: TransportListener {
    /// The associations this listener accepts, Conduit callers and standard peers alike.
    public let associations: SCTPAssociationListener
    private let standardPeers: (@Sendable (SCTPAssociation) async -> Void)?
    private let observer: SCTPObserver?

    init(associations: SCTPAssociationListener, standardPeers: (@Sendable (SCTPAssociation) async -> Void)?, observer: SCTPObserver? = nil) {
        self.associations = associations
        self.standardPeers = standardPeers
        self.observer = observer
    }

    public var localURL: TransportURL { associations.localURL }

    public func accept() async throws(ConduitError) -> (any TransportLink)? {
        while let connection = await associations.acceptConnection() {
            if connection.mode == .conduit {
                let link = SCTPLink(connection: connection, observer: observer)
                observer?.linkEstablished(remote: link.remoteDescription, isClient: false)
                return link
            }
            let association = SCTPAssociation(connection: connection)
            if let standardPeers {
                Task { await standardPeers(association) }
            } else {
                let reason = SCTPCloseReason.refused("a standard data-channel peer, and this listener takes Conduit callers only (SCTPTransport(standardPeers:) takes the others)")
                try? await connection.stack.run { connection.close(reason) }
            }
        }
        return nil
    }

    /// Stops accepting and closes the UDP socket once its associations are gone; links already accepted keep working.
    public func close() async { await associations.close() }
}
#endif

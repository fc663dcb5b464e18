#if SCTP
public import ConduitCore
import ConduitUDP
public import Logging
import NIOCore

/// An SCTP association over UDP with a standard (RFC 8831/8832) peer: data channels opened by
/// either side. This is the API for peers that are not Conduit (browsers' stacks without DTLS,
/// pion, ...); Conduit calls use ``SCTPTransport`` instead.
///
/// ```swift
/// let association = try await SCTPAssociation.connect(to: TransportURL(parsing: "sctp+udp://127.0.0.1:5000"))
/// let channel = try await association.openChannel(label: "chat", protocol: "text")
/// try await channel.send(.string("hello"))
/// ```
public final class SCTPAssociation: Sendable {
    let connection: SCTPConnection

    init(connection: SCTPConnection) { self.connection = connection }

    /// Connects (as the client: our channels get even stream IDs; the peer's may have either
    /// parity). Options as for ``SCTPOptions``. The association's end is logged to `logger`.
    public static func connect(to url: TransportURL, logger: Logger? = nil) async throws(ConduitError) -> SCTPAssociation {
        SCTPAssociation(connection: try await SCTPConnector.connect(to: url, mode: .channels, logger: logger))
    }

    /// Listens for standard peers at `url` (port 0: an ephemeral UDP port); each association's
    /// end, and each one refused, is logged to `logger`.
    public static func listen(on url: TransportURL, logger: Logger? = nil) async throws(ConduitError) -> SCTPAssociationListener {
        try await SCTPAssociationListener.bind(url, conduitAware: false, logger: logger)
    }

    /// Why the association ended (the peer's ABORT and its reason, a loss, a shutdown, ...);
    /// nil while it is up. Sends after the end throw an error that says the same.
    public func closeReason() async -> SCTPCloseReason? { connection.endReason }

    /// The peer's address, for logs.
    public var remoteDescription: String { connection.remoteDescription }

    /// Whether the peer is Conduit (its first channel spoke ``SCTPConduitMapping/protocolName``).
    public var isConduitPeer: Bool { connection.mode == .conduit }

    /// Opens a channel (DATA_CHANNEL_OPEN on our next free stream). Messages may be sent at once.
    public func openChannel(label: String, protocol: String = "", reliability: Reliability = .reliableOrdered, priority: UInt16 = 256) async throws(ConduitError) -> DataChannel {
        let open = DataChannelOpen(reliability: reliability, priority: priority, label: label, protocol: `protocol`)
        let connection = self.connection
        let result = await Self.onLoop(connection) { () throws(ConduitError) -> DataChannel in
            let (_, handle) = try connection.openChannel(open, withHandle: true)
            return handle!
        }
        return try result.get()
    }

    /// The next channel the peer opens, or nil once the association is closed.
    public func acceptChannel() async -> DataChannel? { await connection.acceptInbox.next(max: 1)?.first }

    /// Counts (channels open, streams held, drops) as of now.
    public func statistics() async -> SCTPAssociationStatistics {
        let connection = self.connection
        return (try? await connection.stack.run { connection.currentStatistics }) ?? SCTPAssociationStatistics()
    }

    /// Ends the association gracefully (SHUTDOWN once sent data is delivered). Returns at once.
    public func close() async {
        let connection = self.connection
        try? await connection.stack.run { connection.close() }
    }

    static func onLoop<T: Sendable>(_ connection: SCTPConnection, _ body: @escaping @Sendable () throws(ConduitError) -> T) async -> Result<T, ConduitError> {
        let result = try? await connection.stack.run { () -> Result<T, ConduitError> in
            do throws(ConduitError) { return .success(try body()) } catch { return .failure(error) }
        }
        return result ?? .failure(connection.closedError)
    }
}

/// Accepts associations on one UDP address. Each is handed out once the peer has opened its
/// first channel (so its kind is known).
public final class SCTPAssociationListener: Sendable {
    let endpoint: SCTPUDPEndpoint
    let queue = SCTPInbox<SCTPConnection>(maxItems: 64, maxBytes: Int.max, size: { _ in 1 })
    /// The UDP address the listener is bound to, with the real port when port 0 was asked.
    public let localURL: TransportURL

    private init(endpoint: SCTPUDPEndpoint, localURL: TransportURL) {
        self.endpoint = endpoint
        self.localURL = localURL
    }

    static func bind(_ url: TransportURL, conduitAware: Bool, logger: Logger?) async throws(ConduitError) -> SCTPAssociationListener {
        let options = try SCTPOptions(url, listening: true)
        let address = try SocketAddressing.resolve(url)
        let endpoint = try await SCTPUDPEndpoint.bind(to: address, isListener: true, limits: options.limits)
        let bound = endpoint.localAddress ?? address
        let localURL = TransportURL(scheme: SCTPOptions.scheme, host: bound.ipAddress ?? url.host, port: bound.port ?? url.port, query: url.query)
        let listener = SCTPAssociationListener(endpoint: endpoint, localURL: localURL)
        let queue = listener.queue
        try? await endpoint.stack.run {
            endpoint.conduitAware = conduitAware
            if let logger { endpoint.logger = logger }
            endpoint.onAssociation = { connection in
                // Bounded: callers that do not accept see further peers closed.
                if !queue.isFinished, queue.hasRoom() {
                    queue.deliver(connection)
                } else {
                    connection.close(.refused(queue.isFinished ? "the listener is closed" : "the listener's accept queue is full"))
                }
            }
        }
        return listener
    }

    /// The next association, or nil once the listener is closed.
    public func accept() async -> SCTPAssociation? {
        await acceptConnection().map(SCTPAssociation.init(connection:))
    }

    func acceptConnection() async -> SCTPConnection? { await queue.next(max: 1)?.first }

    /// What the UDP socket dropped before any association saw it.
    public func statistics() async -> SCTPEndpointStatistics {
        let endpoint = self.endpoint
        return (try? await endpoint.stack.run { endpoint.statistics }) ?? SCTPEndpointStatistics()
    }

    /// Stops accepting; associations already handed out stay up, those never accepted are closed.
    public func close() async {
        let unaccepted = queue.finishTakingAll()
        let endpoint = self.endpoint
        try? await endpoint.stack.run {
            for connection in unaccepted { connection.close(.refused("the listener closed before accepting it")) }
            endpoint.stopListening()
        }
    }
}
#endif

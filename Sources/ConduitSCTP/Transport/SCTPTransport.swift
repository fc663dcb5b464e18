#if SCTP
public import ConduitCore

/// SCTP over UDP (usrsctp, RFC 6951 framing without DTLS) as a Conduit transport, and a home for
/// standard data-channel peers.
///
/// URL: `sctp+udp://HOST:PORT[?sctp-port=5000&connect-timeout-ms=5000&streams=1024&init-attempts=8]`
/// (see ``SCTPOptions``). `HOST:PORT` is the UDP address; both ends use SCTP port 5000 unless
/// told otherwise. Listening on port 0 binds an ephemeral UDP port (the listener's `localURL`).
///
/// A Conduit call maps onto data channels as ``SCTPConduitMapping`` describes. A peer whose first
/// channel is not Conduit's goes to `standardPeers` (for example an echo service), or is closed.
public struct SCTPTransport: Transport {
    public var schemes: [String] { [SCTPOptions.scheme] }
    private let standardPeers: (@Sendable (SCTPAssociation) async -> Void)?

    /// Makes the transport. `standardPeers` receives the associations of peers that are not Conduit (their first channel has another protocol); without it they are closed.
    public init(standardPeers: (@Sendable (SCTPAssociation) async -> Void)? = nil) {
        self.standardPeers = standardPeers
    }

    /// Connects an association to `url` and opens the call's channel. Throws `timedOut` after `connect-timeout-ms`, `connectionFailed` when usrsctp gives up.
    public func connect(to url: TransportURL) async throws(ConduitError) -> any TransportLink {
        try await connectSCTP(to: url)
    }

    /// `connect`, returning the concrete link (for its statistics).
    public func connectSCTP(to url: TransportURL) async throws(ConduitError) -> SCTPLink {
        let connection = try await SCTPConnector.connect(to: url, mode: .conduit)
        // The call's own channel, which also tells the listener this is a Conduit caller.
        let result = await SCTPAssociation.onLoop(connection) { () throws(ConduitError) in
            let open = DataChannelOpen(reliability: .reliableOrdered, label: SCTPConduitMapping.callLabel, protocol: SCTPConduitMapping.protocolName)
            let (stream, _) = try connection.openChannel(open, withHandle: false)
            connection.conduitStreams[LinkChannelMap.callChannel] = stream
        }
        if case .failure(let error) = result {
            try? await connection.stack.loop.submit { connection.close() }.get()
            throw error
        }
        return SCTPLink(connection: connection)
    }

    /// Binds a UDP socket at `url` and accepts associations (port 0: an ephemeral port). Throws `addressInUse` if the port is taken.
    public func listen(on url: TransportURL) async throws(ConduitError) -> any TransportListener {
        try await listenSCTP(on: url)
    }

    /// `listen`, returning the concrete listener (for its associations and statistics).
    public func listenSCTP(on url: TransportURL) async throws(ConduitError) -> SCTPListener {
        SCTPListener(associations: try await SCTPAssociationListener.bind(url, conduitAware: true), standardPeers: standardPeers)
    }
}

/// Accepts Conduit callers as links; hands standard peers to the transport's handler.
public final class SCTPListener: TransportListener {
    /// The associations this listener accepts, Conduit callers and standard peers alike.
    public let associations: SCTPAssociationListener
    private let standardPeers: (@Sendable (SCTPAssociation) async -> Void)?

    init(associations: SCTPAssociationListener, standardPeers: (@Sendable (SCTPAssociation) async -> Void)?) {
        self.associations = associations
        self.standardPeers = standardPeers
    }

    public var localURL: TransportURL { associations.localURL }

    public func accept() async throws(ConduitError) -> (any TransportLink)? {
        while let connection = await associations.acceptConnection() {
            if connection.mode == .conduit { return SCTPLink(connection: connection) }
            let association = SCTPAssociation(connection: connection)
            if let standardPeers {
                Task { await standardPeers(association) }
            } else {
                await association.close()
            }
        }
        return nil
    }

    /// Stops accepting and closes the UDP socket once its associations are gone; links already accepted keep working.
    public func close() async { await associations.close() }
}
#endif

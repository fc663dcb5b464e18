import Conduit
import ConduitTooling
import ConduitUDP
import Logging
#if SCTP
import ConduitSCTP
#endif
#if KernelSCTP
import ConduitKernelSCTP
#endif

#if SCTP
/// What `sctp+udp://` listeners do with peers that are not Conduit (standard RFC 8831 data channels).
typealias StandardPeerHandler = @Sendable (SCTPAssociation) async -> Void
#else
/// Without the SCTP trait there is no `sctp+udp://`, so no standard data-channel peer to serve.
typealias StandardPeerHandler = @Sendable (Never) async -> Void
#endif

/// The transports the commands can reach, built in this one place: a transport module joins the
/// command line with one line here. A transport left out of this build by its package trait is
/// still known by scheme, so its URL gets an error that says how to build it in.
enum CommandRegistry {
    /// `standardPeers`: what `sctp+udp://` listeners do with standard data-channel peers; nil closes them.
    /// `logger`: where the transports log (nil: silent).
    /// `reusePort`: UDP listeners may share a port (a relay with a socket per shard).
    /// `listenerLimits`: what `udp://` listeners let one remote address hold.
    static func make(
        standardPeers: StandardPeerHandler? = nil, logger: Logger? = nil, reusePort: Bool = false,
        listenerLimits: UDPTransport.Configuration.ListenerLimits = .init()
    ) -> TransportRegistry {
        let silent = Logger(label: "conduit", factory: { _ in SwiftLogNoOpLogHandler() })
        var udp = UDPTransport.Configuration()
        udp.reusePort = reusePort
        udp.listenerLimits = listenerLimits
        var registry = TransportRegistry.defaults.registering(UDPTransport(configuration: udp, keyReader: .filesAndEnvironment, logger: logger ?? silent))
        #if SCTP
        registry.register(SCTPTransport(standardPeers: standardPeers, logger: logger ?? silent))
        #else
        registry.register(TransportLeftOut(scheme: "sctp+udp", trait: "SCTP", library: "usrsctp (Debian: libusrsctp-dev)"))
        #endif
        #if KernelSCTP
        registry.register(KernelSCTPTransport(logger: logger ?? silent))
        #else
        registry.register(TransportLeftOut(scheme: "sctp", trait: "KernelSCTP", library: "lksctp-tools (Debian: libsctp-dev)"))
        #endif
        return registry
    }
}

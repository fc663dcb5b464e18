import Conduit
import ConduitSCTP
import ConduitUDP
import ConduitKernelSCTP

/// The transports the commands can reach, built in this one place: a transport module joins the
/// command line with one line here.
enum CommandRegistry {
    /// `standardPeers`: what `sctp+udp://` listeners do with peers that are not Conduit (standard
    /// RFC 8831 data channels); nil closes them.
    static func make(standardPeers: (@Sendable (SCTPAssociation) async -> Void)? = nil) -> TransportRegistry {
        TransportRegistry.defaults.registering(UDPTransport())
            .registering(SCTPTransport(standardPeers: standardPeers))
            .registering(KernelSCTPTransport())
    }
}

import Conduit
import ConduitSCTP
import ConduitUDP
import ConduitKernelSCTP
import Logging

/// The transports the commands can reach, built in this one place: a transport module joins the
/// command line with one line here.
enum CommandRegistry {
    /// `standardPeers`: what `sctp+udp://` listeners do with peers that are not Conduit (standard
    /// RFC 8831 data channels); nil closes them.
    /// `logger`: where the transports log (nil: silent).
    static func make(standardPeers: (@Sendable (SCTPAssociation) async -> Void)? = nil, logger: Logger? = nil) -> TransportRegistry {
        TransportRegistry.defaults.registering(logger.map { UDPTransport(logger: $0) } ?? UDPTransport())
            .registering(logger.map { SCTPTransport(standardPeers: standardPeers, logger: $0) } ?? SCTPTransport(standardPeers: standardPeers))
            .registering(KernelSCTPTransport())
    }
}

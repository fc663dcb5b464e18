import Conduit
import ConduitUDP
import ConduitKernelSCTP

/// The transports the commands can reach, built in this one place: a transport module joins the
/// command line with one line here.
enum CommandRegistry {
    static func make() -> TransportRegistry {
        TransportRegistry.defaults.registering(UDPTransport())
            .registering(KernelSCTPTransport())
    }
}

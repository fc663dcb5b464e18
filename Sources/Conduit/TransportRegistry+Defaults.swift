public import ConduitCore
import ConduitLoopback

extension TransportRegistry {
    /// The transports that ship with `Conduit`: loopback, on a hub of its own. Register more
    /// (UDP, SCTP over UDP) with `TransportRegistry.register(_:)`.
    ///
    /// Each call builds a new loopback hub, so listeners and connectors must share one registry
    /// value (one ``ConduitRuntime``) to find each other.
    public static var defaults: TransportRegistry {
        TransportRegistry([LoopbackTransport(hub: LoopbackHub())])
    }
}

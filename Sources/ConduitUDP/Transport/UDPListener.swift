public import ConduitCore
import NIOCore

/// Accepts UDP links on one bound socket.
public final class UDPListener: TransportListener {
    public let localURL: TransportURL
    private let channel: any Channel
    private let core: UDPListenerCore

    init(localURL: TransportURL, channel: any Channel, core: UDPListenerCore) {
        self.localURL = localURL
        self.channel = channel
        self.core = core
    }

    public func accept() async throws(ConduitError) -> (any TransportLink)? {
        await acceptUDP()
    }

    /// The next link as its concrete type (for its statistics), or nil once closed.
    public func acceptUDP() async -> UDPLink? {
        await core.backlog.next()
    }

    /// Closes every link accepted from this listener (each sends BYE), then the socket.
    public func close() async {
        let core = self.core
        let links = (try? await channel.eventLoop.submit { core.shutDown() }.get()) ?? []
        core.backlog.finishAndDiscard()
        for link in links { await link.close() }
        try? await channel.close()
    }

    /// What the listener did with datagrams that reached no link.
    public func statistics() async -> UDPListenerStatistics {
        let core = self.core
        return (try? await channel.eventLoop.submit { core.state.value.statistics }.get()) ?? UDPListenerStatistics()
    }
}

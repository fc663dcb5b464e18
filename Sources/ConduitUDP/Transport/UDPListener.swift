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

    /// Stops accepting, like closing a listening TCP socket: links not yet accepted are closed
    /// (each sends BYE); accepted ones live on, and the shared socket closes with the last of them.
    public func close() async {
        let core = self.core
        let channel = self.channel
        // First stop establishing (on the loop), then take back what nobody accepted: a link the
        // consumer already popped is its own, whatever the timing.
        try? await channel.eventLoop.submit { core.shutDown() }.get()
        for link in core.backlog.finishAndDiscard() { await link.close() }
        try? await channel.eventLoop.submit { core.closeSocketIfUnused(channel) }.get()
    }

    /// What the listener holds on behalf of remote addresses: established links, links with
    /// output pending, links waiting to be accepted. The cookie exchange keeps nothing, so junk
    /// must leave all three at zero (the flood tests check it).
    package func retainedState() async -> (links: Int, pendingOutput: Int, awaitingAccept: Int) {
        let core = self.core
        let held = (try? await channel.eventLoop.submit { (core.state.value.links.count, core.state.value.dirty.count) }.get()) ?? (0, 0)
        return (held.0, held.1, core.backlog.bufferedCount)
    }

    /// Path validations open now (bounded by the validator's caps; the flood tests check it).
    package func pendingPathValidations() async -> Int {
        let core = self.core
        return (try? await channel.eventLoop.submit { core.state.value.validator.pending.count }.get()) ?? 0
    }

    /// What the listener did with datagrams that reached no link, and with links' new addresses.
    public func statistics() async -> UDPListenerStatistics {
        let core = self.core
        return (try? await channel.eventLoop.submit { core.currentStatistics() }.get()) ?? UDPListenerStatistics()
    }
}

import ConduitCore
package import NIOCore
package import NIOPosix

extension DatagramBootstrap {
    /// `bind(to:)` with `initializer` as the channel initializer, closing the channel when the bind
    /// fails. NIO's `DatagramBootstrap` (2.101) leaves a channel whose bind failed (EADDRINUSE, say)
    /// registered but open: its socket's descriptor stays open and the channel, its pipeline and
    /// handlers (a reference cycle until close) are never freed, one of each per failed bind.
    package func bindClosingOnFailure(
        to address: SocketAddress,
        initializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>
    ) async throws -> any Channel {
        let made = MadeChannel()
        do {
            return try await channelInitializer { channel in
                made.channel.withLock { $0 = channel }
                return initializer(channel)
            }.bind(to: address).get()
        } catch {
            if let channel = made.channel.withLock({ $0 }) { try? await channel.close() }
            throw error
        }
    }
}

/// The channel the bootstrap made, kept to close it if its bind fails.
private final class MadeChannel: Sendable {
    let channel = TSanVisibleMutex<(any Channel)?>(nil)
}

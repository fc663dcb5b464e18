import NIOCore
import NIOPosix

/// A 127.0.0.1 UDP port where nothing listens: bound once, then released, so that datagrams sent
/// to it draw ICMP port-unreachable (what "connect to nothing" and "closed port" tests need).
public func unusedUDPPort() async throws -> Int {
    let channel = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).get()
    let port = channel.localAddress!.port!
    try await channel.close()
    return port
}

/// A 127.0.0.1 UDP port that stays bound and answers nothing until ``close()``: what tests of a
/// connect that hears no answer need. A port from `unusedUDPPort()` is free again once it
/// returns, so in a parallel run another test's listener can bind it and answer the handshake
/// (a timeout test once failed that way, with the call's error instead of the transport's).
public final class SilentUDPPort: Sendable {
    /// The bound port.
    public let port: Int
    private let channel: any Channel

    private init(port: Int, channel: any Channel) {
        self.port = port
        self.channel = channel
    }

    /// Binds a fresh port on 127.0.0.1; datagrams that reach it are discarded unread.
    public static func bind() async throws -> SilentUDPPort {
        let channel = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).get()
        return SilentUDPPort(port: channel.localAddress!.port!, channel: channel)
    }

    /// Releases the port.
    public func close() async {
        try? await channel.close()
    }
}

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

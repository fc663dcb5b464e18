#if SCTP
import ConduitCore
import ConduitUDP
import Logging
import NIOCore

/// Sets up an association from our side (we are the client: even stream IDs).
enum SCTPConnector {
    static func connect(to url: TransportURL, mode: SCTPConnection.Mode, logger: Logger?) async throws(ConduitError) -> SCTPConnection {
        let options = try SCTPOptions(url, listening: false)
        let peer = try SocketAddressing.resolve(url)
        let endpoint = try await SCTPUDPEndpoint.bind(to: try SocketAddressing.ephemeral(for: peer), isListener: false, limits: options.limits)
        let stack = endpoint.stack
        let description = "sctp+udp://\(SocketAddressing.describe(peer))"
        let timeout = ConduitError(.timedOut, "no SCTP association with \(description) within \(options.connectTimeoutText) (INIT unanswered)")
        return try await stack.run(.connectionFailed, "connecting to \(description) failed") { () -> EventLoopFuture<SCTPConnection> in
            let connection = stack.register { address in
                SCTPConnection(stack: stack, address: address, isClient: true, mode: mode, route: SCTPRoute(channel: endpoint.channel, peer: peer), limits: options.limits)
            }
            if let logger { connection.logger = logger }
            endpoint.add(connection, for: peer)
            endpoint.closeWhenIdle()
            let established = connection.startConnecting()
            let timer = stack.loop.scheduleTask(in: .milliseconds(Int64(options.connectTimeoutMilliseconds))) {
                connection.connectTimedOut(timeout)
            }
            return established.always { _ in timer.cancel() }.map { connection }
        }
    }
}
#endif

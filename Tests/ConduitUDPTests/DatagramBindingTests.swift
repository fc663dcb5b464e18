import ConduitCore
import ConduitUDP
import NIOCore
import NIOPosix
import Testing

/// `bindClosingOnFailure`: a channel whose bind fails is closed, not left open with its socket
/// (NIO's `DatagramBootstrap` leaves it open; AddressSanitizer found one leaked per failed bind).
@Suite("Datagram binding", .timeLimit(.minutes(1)))
struct DatagramBindingTests {
    @Test("a bind that fails with EADDRINUSE closes the channel it made, socket included")
    func failedBindClosesItsChannel() async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let first = try await DatagramBootstrap(group: loop).bind(host: "127.0.0.1", port: 0).get()
        defer { first.close(promise: nil) }
        let taken = try #require(first.localAddress)
        let made = MadeChannels()
        await #expect(throws: IOError.self) {
            _ = try await DatagramBootstrap(group: loop).bindClosingOnFailure(to: taken) { channel in
                made.append(channel)
                return channel.eventLoop.makeSucceededVoidFuture()
            }
        }
        let channels = made.all
        try #require(channels.count == 1)
        // Its socket is closed: no option can be read from it any more (left open, it could).
        await #expect(throws: ChannelError.ioOnClosedChannel) {
            _ = try await channels[0].getOption(.socketOption(.so_rcvbuf)).get()
        }
    }

    @Test("a bind that succeeds returns the open channel, initialized")
    func successfulBindKeepsItsChannel() async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let made = MadeChannels()
        let channel = try await DatagramBootstrap(group: loop).bindClosingOnFailure(to: try SocketAddress(ipAddress: "127.0.0.1", port: 0)) { channel in
            made.append(channel)
            return channel.eventLoop.makeSucceededVoidFuture()
        }
        defer { channel.close(promise: nil) }
        #expect(made.all.count == 1 && made.all[0] === channel)
        #expect(channel.isActive)
    }
}

/// The channels an initializer saw, from the event loop to the test.
private final class MadeChannels: Sendable {
    private let channels = TSanVisibleMutex<[any Channel]>([])
    func append(_ channel: any Channel) { channels.withLock { $0.append(channel) } }
    var all: [any Channel] { channels.withLock { $0 } }
}

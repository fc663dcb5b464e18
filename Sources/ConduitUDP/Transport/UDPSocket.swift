import ConduitCore
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Binds the NIO datagram channels of the transport: batched reads sized for the MTU, a few MiB of
/// kernel buffers, and no SO_REUSEADDR (on Linux it would let a second socket bind the same UDP port).
enum UDPSocket {
    static let socketBufferBytes = 4 << 20
    static let maxVectorReads = 32
    /// What one read can return with receive offload on: the kernel coalesces a flow's datagrams.
    static let maxCoalescedRead = 65_536
    /// Receive buffer slices, at most, with receive offload on (64 KiB each).
    static let maxCoalescedVectorReads = 16

    /// Whether this kernel does UDP segmentation (GSO) and receive (GRO) offload.
    static var kernelSupportsOffload: Bool {
        System.supportsUDPSegmentationOffload && System.supportsUDPReceiveOffload
    }

    /// A channel on `direct`'s socket when there is one (bound already, see ``UDPDirectSocket``),
    /// else on a socket the channel binds to `address`.
    static func bind(
        to address: SocketAddress,
        adopting direct: UDPDirectSocket? = nil,
        on loop: any EventLoop,
        mtu: Int,
        receiveOffload offload: Bool,
        onDatagram: @escaping @Sendable (AddressedEnvelope<ByteBuffer>, any Channel) -> Void,
        onBurstEnd: @escaping @Sendable (_ reads: Int) -> Void
    ) async throws(ConduitError) -> any Channel {
        // A slice per message one byte over the MTU, so that a larger datagram shows as too large.
        // With receive offload a read is up to 64 KiB of one flow's datagrams, which the handler
        // splits at the segment size the kernel reports.
        let slice = offload ? maxCoalescedRead : (mtu + 1 + 63) & ~63
        let vectorReads = offload ? maxCoalescedVectorReads : max(1, min(maxVectorReads, (1 << 20) / slice))
        do {
            var bootstrap = DatagramBootstrap(group: loop)
            if offload {
                bootstrap = bootstrap
                    .channelOption(.datagramReceiveOffload, value: true)
                    .channelOption(.datagramReceiveSegmentSize, value: true)
            }
            bootstrap = bootstrap
                .channelOption(.datagramVectorReadMessageCount, value: vectorReads)
                .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: slice * vectorReads))
                .channelOption(.socketOption(.so_rcvbuf), value: SocketOptionValue(socketBufferBytes))
                .channelOption(.socketOption(.so_sndbuf), value: SocketOptionValue(socketBufferBytes))
            #if os(Linux)
            // Don't fragment (RFC 8899 section 3): a datagram over the path MTU must be lost, not
            // split by IP, or path MTU discovery settles above the path. PROBE sets DF without
            // the kernel's own path MTU cache (our search finds the size); a datagram over the
            // interface's MTU then fails with EMSGSIZE, which the link counts as lost.
            if address.protocol == .inet6 {
                bootstrap = bootstrap.channelOption(ChannelOptions.Types.SocketOption(level: .ipv6, name: .init(rawValue: IPV6_MTU_DISCOVER)), value: SocketOptionValue(IPV6_PMTUDISC_PROBE))
            }
            bootstrap = bootstrap.channelOption(ChannelOptions.Types.SocketOption(level: .ip, name: .init(rawValue: IP_MTU_DISCOVER)), value: SocketOptionValue(IP_PMTUDISC_PROBE))
            #endif
            let initializer: @Sendable (any Channel) -> EventLoopFuture<Void> = { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(UDPChannelHandler(onDatagram: onDatagram, onBurstEnd: onBurstEnd))
                }
            }
            if let direct { return try await bootstrap.channelInitializer(initializer).withBoundSocket(direct.descriptor).get() }
            return try await bootstrap.bindClosingOnFailure(to: address, initializer: initializer)
        } catch let error as IOError where error.errnoCode == EADDRINUSE {
            throw ConduitError(.addressInUse, "udp://\(SocketAddressing.describe(address)) is already in use")
        } catch {
            throw ConduitError(.connectionFailed, "cannot bind a UDP socket to \(SocketAddressing.describe(address)): \(error)")
        }
    }

    /// 127.0.0.0/8, ::1, or an IPv4-mapped 127.x address.
    static func isLoopback(_ address: SocketAddress) -> Bool {
        guard let host = address.ipAddress else { return false }
        return host.hasPrefix("127.") || host == "::1" || host.lowercased().hasPrefix("::ffff:127.")
    }

}

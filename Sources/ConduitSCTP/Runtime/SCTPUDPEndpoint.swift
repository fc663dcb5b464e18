#if SCTP
import ConduitCore
import ConduitUDP
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A UDP socket on the stack's loop carrying SCTP packets for its associations, one per peer
/// address. A connecting endpoint has one association; a listening one creates an association
/// for each new peer whose first packet is an INIT, up to `maxPeers`. Everything else from an
/// unknown address is junk: dropped and counted. Loop-confined after `bind`.
final class SCTPUDPEndpoint: @unchecked Sendable {
    static let maxPeers = 256
    /// How long an accepted association may take to open its first channel.
    static let firstChannelTimeout = TimeAmount.seconds(10)
    static let firstChannelTimeoutText = "\(firstChannelTimeout.nanoseconds / 1_000_000_000) s"

    let stack: SCTPStack
    let channel: any Channel
    let isListener: Bool
    let limits: SCTPLimits
    private var peers: [SocketAddress: SCTPConnection] = [:]
    private var listening: Bool
    /// Listener: an association whose kind (Conduit or standard) is now known.
    var onAssociation: ((SCTPConnection) -> Void)?
    var conduitAware = false
    /// Given to each association this endpoint starts, which logs its end there.
    var logger = SCTPConnection.silentLogger
    private(set) var statistics = SCTPEndpointStatistics()

    private init(stack: SCTPStack, channel: any Channel, isListener: Bool, limits: SCTPLimits) {
        self.stack = stack
        self.channel = channel
        self.isListener = isListener
        self.listening = isListener
        self.limits = limits
    }

    static func bind(to address: SocketAddress, isListener: Bool, limits: SCTPLimits) async throws(ConduitError) -> SCTPUDPEndpoint {
        let stack = SCTPStack.shared
        let holder = EndpointHolder()
        do {
            let channel = try await DatagramBootstrap(group: stack.loop)
                // Slices as large as any UDP payload: the peer's packet size is its own choice.
                .channelOption(.datagramVectorReadMessageCount, value: 16)
                .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 16 * 65_536))
                .channelOption(.socketOption(.so_rcvbuf), value: SocketOptionValue(4 << 20))
                .channelOption(.socketOption(.so_sndbuf), value: SocketOptionValue(4 << 20))
                .bindClosingOnFailure(to: address) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(SCTPDatagramHandler(holder: holder))
                    }
                }
            let endpoint = SCTPUDPEndpoint(stack: stack, channel: channel, isListener: isListener, limits: limits)
            try await stack.run { holder.endpoint = endpoint }
            return endpoint
        } catch let error as IOError where error.errnoCode == EADDRINUSE {
            throw ConduitError(.addressInUse, "udp://\(SocketAddressing.describe(address)) is already in use")
        } catch {
            throw ConduitError(.connectionFailed, "cannot bind a UDP socket to \(SocketAddressing.describe(address)): \(error)")
        }
    }

    var localAddress: SocketAddress? { channel.localAddress }

    // MARK: On the loop

    func receive(_ envelope: AddressedEnvelope<ByteBuffer>) {
        if let connection = peers[envelope.remoteAddress] {
            envelope.data.withUnsafeReadableBytes { connection.input($0) }
            return
        }
        guard isListener, listening else {
            statistics.droppedStranger += 1
            return
        }
        guard envelope.data.withUnsafeReadableBytes(Self.looksLikeInit) else {
            statistics.droppedJunk += 1
            return
        }
        guard peers.count < Self.maxPeers else {
            statistics.droppedBusy += 1
            return
        }
        let peer = envelope.remoteAddress
        let connection = stack.register { address in
            SCTPConnection(stack: stack, address: address, isClient: false, mode: .undecided, route: SCTPRoute(channel: channel, peer: peer), limits: limits)
        }
        connection.conduitAware = conduitAware
        connection.logger = logger
        do {
            try connection.startListening()
        } catch {
            stack.release(connection.address)
            statistics.droppedBusy += 1
            return
        }
        peers[peer] = connection
        statistics.associations += 1
        connection.onModeDecided = { [weak self] in self?.onAssociation?($0) }
        connection.onClosed = { [weak self] in self?.forget(peer, $0) }
        stack.loop.scheduleTask(in: Self.firstChannelTimeout) { [weak connection] in
            if let connection, connection.mode == .undecided { connection.close(.noChannelOpened) }
        }
        envelope.data.withUnsafeReadableBytes { connection.input($0) }
    }

    /// RFC 9260 section 3: an INIT is the only chunk in a packet whose verification tag is 0.
    /// Only an INIT can start an association, so nothing else from an unknown address is kept,
    /// nor an INIT whose CRC32c is wrong.
    static func looksLikeInit(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.count >= 32 && bytes[4] == 0 && bytes[5] == 0 && bytes[6] == 0 && bytes[7] == 0 && bytes[12] == 1
            && SCTPChecksum.isValid(bytes)
    }

    /// Connecting side: the one association, to `peer`.
    func add(_ connection: SCTPConnection, for peer: SocketAddress) {
        peers[peer] = connection
        connection.onClosed = { [weak self] in self?.forget(peer, $0) }
    }

    private func forget(_ peer: SocketAddress, _ connection: SCTPConnection) {
        if peers[peer] === connection { peers[peer] = nil }
        closeIfIdle()
    }

    /// Stops taking new peers. Associations not yet handed out are closed; handed-out ones keep the
    /// socket until they end.
    func stopListening() {
        listening = false
        onAssociation = nil
        for connection in peers.values where connection.mode == .undecided {
            connection.close(.refused("the listener closed before the peer opened a channel"))
        }
        closeIfIdle()
    }

    private func closeIfIdle() {
        guard !listening, peers.isEmpty, channel.isActive else { return }
        channel.close(promise: nil)
    }

    /// Connecting side: once the one association is gone.
    func closeWhenIdle() {
        listening = false
        closeIfIdle()
    }
}

/// What a listening UDP socket dropped before any association saw it.
public struct SCTPEndpointStatistics: Sendable, Hashable {
    /// Datagrams from unknown addresses that were not an SCTP INIT.
    public var droppedJunk = 0
    /// Datagrams from addresses that are not this endpoint's peer (connecting side).
    public var droppedStranger = 0
    /// INITs refused because `maxPeers` associations exist.
    public var droppedBusy = 0
    /// Associations started on this endpoint.
    public var associations = 0
    /// All counters at zero.
    public init() {}
}

/// Lets the channel handler reach its endpoint, which exists only once the channel is bound.
final class EndpointHolder: @unchecked Sendable {
    var endpoint: SCTPUDPEndpoint?
}

final class SCTPDatagramHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    private let holder: EndpointHolder

    init(holder: EndpointHolder) { self.holder = holder }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        holder.endpoint?.receive(unwrapInboundIn(data))
    }

    /// Per-datagram errors (an ICMP port-unreachable surfacing as ECONNREFUSED) are never fatal:
    /// SCTP retransmits (INIT included) until its own limits.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {}
}

#endif

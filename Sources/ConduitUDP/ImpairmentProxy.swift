import ConduitCore
public import ConduitImpairment
public import NIOCore
public import NIOPosix

/// `conduit impair`: a user-space network impairment proxy between a UDP client and an upstream.
///
/// ```
///   client ──▶ listen ──[impair client→upstream]──▶ relay socket ──▶ upstream
///   client ◀── listen ◀──[impair upstream→client]── relay socket ◀── upstream
/// ```
///
/// The client is whoever last sent to the listening socket (as behind a NAT). Each direction has
/// its own seeded `ImpairmentModel`; deliveries are scheduled on the proxy's event loop, where
/// all of its state lives. Only what the caller names is ever addressed: the upstream given, and
/// the client that wrote first.
public final class ImpairmentProxy: Sendable {
    /// Where the proxy listens, where it forwards to, and what it does to each direction.
    public struct Configuration: Sendable {
        /// The address clients send to; the proxy binds it (port 0: an ephemeral port).
        public var listen: UDPEndpoint
        /// The address the proxy forwards the client's datagrams to.
        public var upstream: UDPEndpoint
        /// What happens to datagrams from the client on their way upstream.
        public var clientToUpstream: ImpairmentConfiguration
        /// What happens to datagrams from upstream on their way back to the client.
        public var upstreamToClient: ImpairmentConfiguration

        /// Both directions impaired alike, with independent seeds (`seed` and `seed + 1`).
        public init(listen: UDPEndpoint, upstream: UDPEndpoint, impairment: ImpairmentConfiguration) {
            self.listen = listen
            self.upstream = upstream
            self.clientToUpstream = impairment
            var reverse = impairment
            reverse.seed = impairment.seed &+ 1
            self.upstreamToClient = reverse
        }
    }

    /// What the proxy did to one direction's datagrams, counted since it started.
    public struct DirectionStatistics: Sendable, Hashable, Codable {
        /// Datagrams that arrived.
        public var received = 0
        /// Datagrams sent on, duplicates included.
        public var forwarded = 0
        /// Datagrams lost on purpose (the `loss` probability, or the rate limit's queue).
        public var dropped = 0
        /// Datagrams lost while the proxy was partitioned.
        public var droppedByPartition = 0
        /// Datagrams lost for being larger than the path's size limit (`max-size`).
        public var droppedOverSize = 0
        /// Extra copies sent (the `dup` probability).
        public var duplicated = 0
        /// Datagrams held back and sent after later ones (the `reorder` probability).
        public var reordered = 0
        /// Datagrams sent with a flipped bit (the `corrupt` probability).
        public var corrupted = 0
        /// Bytes sent on, duplicates included.
        public var bytesForwarded = 0
    }

    /// What the proxy did in both directions.
    public struct Statistics: Sendable, Hashable, Codable {
        /// From the client to upstream.
        public var clientToUpstream = DirectionStatistics()
        /// From upstream back to the client.
        public var upstreamToClient = DirectionStatistics()
        /// Datagrams dropped because they came from neither the upstream nor (before any client
        /// wrote) could be returned to anyone.
        public var strayDatagrams = 0
    }

    private struct State {
        var toUpstream: ImpairmentModel
        var toClient: ImpairmentModel
        var client: SocketAddress?
        var statistics = Statistics()
    }

    private let state: NIOLoopBoundBox<State>
    private let front: any Channel
    private let back: any Channel
    private let upstream: SocketAddress
    private let origin: NIODeadline
    /// The bound listening address (port filled in when 0 was asked for).
    public let localAddress: SocketAddress
    /// The address the proxy sends to the upstream from.
    public var relayAddress: SocketAddress? { back.localAddress }

    private init(state: NIOLoopBoundBox<State>, front: any Channel, back: any Channel, upstream: SocketAddress, origin: NIODeadline) {
        self.state = state
        self.front = front
        self.back = back
        self.upstream = upstream
        self.origin = origin
        self.localAddress = front.localAddress!
    }

    /// Binds the listening socket and the relay socket, and starts forwarding.
    public static func start(_ configuration: Configuration, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) async throws -> ImpairmentProxy {
        let listen = try configuration.listen.socketAddress()
        let upstream = try configuration.upstream.socketAddress()
        let loop = group.next()
        let state = NIOLoopBoundBox.makeBoxSendingValue(
            State(toUpstream: ImpairmentModel(configuration: configuration.clientToUpstream), toClient: ImpairmentModel(configuration: configuration.upstreamToClient)),
            eventLoop: loop
        )
        let relay = ProxyRelay()
        let front = try await DatagramBootstrap(group: loop).bindClosingOnFailure(to: listen) { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(ForwardingHandler { relay.proxy?.fromClient($0) })
            }
        }
        let back: any Channel
        do {
            back = try await DatagramBootstrap(group: loop)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(ForwardingHandler { relay.proxy?.fromUpstream($0) })
                    }
                }
                .bind(host: upstream.protocol == .inet6 ? "::1" : "127.0.0.1", port: 0).get()
        } catch {
            try? await front.close()
            throw error
        }
        let proxy = ImpairmentProxy(state: state, front: front, back: back, upstream: upstream, origin: .now())
        relay.proxy = proxy
        return proxy
    }

    private func now() -> ConduitInstant {
        ConduitInstant(nanoseconds: NIODeadline.now().uptimeNanoseconds &- origin.uptimeNanoseconds)
    }

    private func deadline(_ instant: ConduitInstant) -> NIODeadline {
        .uptimeNanoseconds(origin.uptimeNanoseconds &+ instant.nanoseconds)
    }

    // MARK: On the event loop

    private func fromClient(_ envelope: AddressedEnvelope<ByteBuffer>) {
        state.value.client = envelope.remoteAddress
        state.value.statistics.clientToUpstream.received += 1
        let decision = state.value.toUpstream.submit(size: envelope.data.readableBytes, now: now())
        record(decision, into: \.clientToUpstream, model: state.value.toUpstream.statistics)
        schedule(decision, envelope.data, to: upstream, via: back, direction: \.clientToUpstream)
    }

    private func fromUpstream(_ envelope: AddressedEnvelope<ByteBuffer>) {
        guard envelope.remoteAddress == upstream, let client = state.value.client else {
            state.value.statistics.strayDatagrams += 1
            return
        }
        state.value.statistics.upstreamToClient.received += 1
        let decision = state.value.toClient.submit(size: envelope.data.readableBytes, now: now())
        record(decision, into: \.upstreamToClient, model: state.value.toClient.statistics)
        schedule(decision, envelope.data, to: client, via: front, direction: \.upstreamToClient)
    }

    private func record(_ decision: ImpairmentModel.Decision, into direction: WritableKeyPath<Statistics, DirectionStatistics>, model: ImpairmentModel.Statistics) {
        state.value.statistics[keyPath: direction].dropped = model.dropped
        state.value.statistics[keyPath: direction].droppedByPartition = model.droppedByPartition
        state.value.statistics[keyPath: direction].droppedOverSize = model.droppedOverSize
        state.value.statistics[keyPath: direction].duplicated = model.duplicated
        state.value.statistics[keyPath: direction].reordered = model.reordered
        state.value.statistics[keyPath: direction].corrupted = model.corrupted
    }

    private func schedule(
        _ decision: ImpairmentModel.Decision,
        _ payload: ByteBuffer,
        to address: SocketAddress,
        via channel: any Channel,
        direction: any WritableKeyPath<Statistics, DirectionStatistics> & Sendable
    ) {
        for delivery in decision.deliveries {
            var data = payload
            if delivery.corruption != nil {
                var bytes = Array(payload.readableBytesView)
                delivery.apply(to: &bytes)
                data = channel.allocator.buffer(bytes: bytes)
            }
            let envelope = AddressedEnvelope(remoteAddress: address, data: data)
            let size = data.readableBytes
            let send = { [state] in
                state.value.statistics[keyPath: direction].forwarded += 1
                state.value.statistics[keyPath: direction].bytesForwarded += size
                channel.writeAndFlush(envelope, promise: nil)
            }
            if delivery.at <= now() {
                send()
            } else {
                channel.eventLoop.assumeIsolated().scheduleTask(deadline: deadline(delivery.at)) { send() }
            }
        }
    }

    // MARK: Control, from anywhere

    /// Cuts or restores both directions (a total blackout while set).
    public func setPartitioned(_ partitioned: Bool) async {
        try? await state.eventLoop.submit { [state] in
            state.value.toUpstream.isPartitioned = partitioned
            state.value.toClient.isPartitioned = partitioned
        }.get()
    }

    /// Changes both directions' size limit (a route change; nil for none): larger datagrams are
    /// dropped from now on.
    public func setMaxDatagramSize(_ size: Int?) async {
        try? await state.eventLoop.submit { [state] in
            state.value.toUpstream.maxDatagramSize = size
            state.value.toClient.maxDatagramSize = size
        }.get()
    }

    /// The counters so far; reads them on the proxy's event loop.
    public func statistics() async -> Statistics {
        (try? await state.eventLoop.submit { [state] in state.value.statistics }.get()) ?? Statistics()
    }

    /// Closes both sockets; datagrams still scheduled are dropped.
    public func stop() async {
        try? await front.close()
        try? await back.close()
    }
}

/// Lets the handlers, created before the proxy exists, reach it once it does. Set once, on
/// start-up, before any datagram can be read; read on the event loop only.
private final class ProxyRelay: @unchecked Sendable {
    var proxy: ImpairmentProxy?
}

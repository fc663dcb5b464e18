import ConduitCore
public import ConduitImpairment
public import NIOCore
public import NIOPosix

/// `conduit impair`: a user-space network impairment proxy between UDP clients and their upstreams.
///
/// ```
///   client ──▶ listen ──[impair client→upstream]──▶ relay socket ──▶ upstream
///   client ◀── listen ◀──[impair upstream→client]── relay socket ◀── upstream
/// ```
///
/// With one upstream, the client is whoever last sent to the listening socket (as behind a NAT:
/// a client that re-binds keeps its path). With several, each is one path with a relay socket of
/// its own: the first client to write takes the first path, the next client the next, and a client
/// beyond the last path is stray. Every path crosses the same two seeded `ImpairmentModel`s, one
/// per direction, so several calls share one bottleneck. Deliveries are scheduled on the proxy's
/// event loop, where all of its state lives. Only what the caller names is ever addressed: the
/// upstreams given, and the clients that wrote first.
public final class ImpairmentProxy: Sendable {
    /// The most upstreams one proxy takes (each holds a socket).
    public static let maxUpstreams = 64

    /// Where the proxy listens, where it forwards to, and what it does to each direction.
    public struct Configuration: Sendable {
        /// The address clients send to; the proxy binds it (port 0: an ephemeral port).
        public var listen: UDPEndpoint
        /// Where clients' datagrams go: the first client's to the first, and so on (1 to ``ImpairmentProxy/maxUpstreams``).
        public var upstreams: [UDPEndpoint]
        /// What happens to datagrams from the client on their way upstream.
        public var clientToUpstream: ImpairmentConfiguration
        /// What happens to datagrams from upstream on their way back to the client.
        public var upstreamToClient: ImpairmentConfiguration

        /// Both directions impaired alike, with independent seeds (`seed` and `seed + 1`).
        public init(listen: UDPEndpoint, upstream: UDPEndpoint, impairment: ImpairmentConfiguration) {
            self.init(listen: listen, upstreams: [upstream], impairment: impairment)
        }

        /// One path per upstream, every path through the same impairment (one shared bottleneck
        /// per direction), with independent seeds per direction (`seed` and `seed + 1`).
        public init(listen: UDPEndpoint, upstreams: [UDPEndpoint], impairment: ImpairmentConfiguration) {
            self.listen = listen
            self.upstreams = upstreams
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
        /// Datagrams lost because the bottleneck's buffer was full (`queue-ms`).
        public var droppedAtBottleneck = 0
        /// Extra copies sent (the `dup` probability).
        public var duplicated = 0
        /// Datagrams held back and sent after later ones (the `reorder` probability).
        public var reordered = 0
        /// Datagrams sent with a flipped bit (the `corrupt` probability).
        public var corrupted = 0
        /// Bytes sent on, duplicates included.
        public var bytesForwarded = 0
        /// The longest a datagram waited behind others at the bottleneck (`rate`), in milliseconds.
        public var maxQueueDelayMilliseconds = 0.0
        /// The mean wait at the bottleneck, in milliseconds (0 without a `rate`).
        public var meanQueueDelayMilliseconds = 0.0
    }

    /// What the proxy did in both directions.
    public struct Statistics: Sendable, Hashable, Codable {
        /// From the client to upstream.
        public var clientToUpstream = DirectionStatistics()
        /// From upstream back to the client.
        public var upstreamToClient = DirectionStatistics()
        /// Datagrams dropped because they came from neither a path's upstream nor a client the
        /// proxy serves (a client beyond the last path), or could be returned to no one yet.
        public var strayDatagrams = 0
    }

    /// One client's way through: its upstream, and the relay socket it is forwarded from.
    private struct Path {
        let upstream: SocketAddress
        let relay: any Channel
        var client: SocketAddress?
    }

    private struct State {
        var toUpstream: ImpairmentModel
        var toClient: ImpairmentModel
        var paths: [Path]
        var statistics = Statistics()
    }

    private let state: NIOLoopBoundBox<State>
    private let front: any Channel
    private let relays: [any Channel]
    private let origin: NIODeadline
    /// The bound listening address (port filled in when 0 was asked for).
    public let localAddress: SocketAddress
    /// The address the proxy sends to the (first) upstream from.
    public var relayAddress: SocketAddress? { relays[0].localAddress }

    private init(state: NIOLoopBoundBox<State>, front: any Channel, relays: [any Channel], origin: NIODeadline) {
        self.state = state
        self.front = front
        self.relays = relays
        self.origin = origin
        self.localAddress = front.localAddress!
    }

    /// Binds the listening socket and one relay socket per upstream, and starts forwarding.
    public static func start(_ configuration: Configuration, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) async throws -> ImpairmentProxy {
        guard (1...maxUpstreams).contains(configuration.upstreams.count) else {
            throw ConduitError(.invalidConfiguration, "an impairment proxy takes 1 to \(maxUpstreams) upstreams, not \(configuration.upstreams.count)")
        }
        let listen = try configuration.listen.socketAddress()
        let upstreams = try configuration.upstreams.map { try $0.socketAddress() }
        let loop = group.next()
        let relay = ProxyRelay()
        let front = try await DatagramBootstrap(group: loop).bindClosingOnFailure(to: listen) { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(ForwardingHandler { relay.proxy?.fromClient($0) })
            }
        }
        var relays: [any Channel] = []
        do {
            for (index, upstream) in upstreams.enumerated() {
                relays.append(
                    try await DatagramBootstrap(group: loop)
                        .channelInitializer { channel in
                            channel.eventLoop.makeCompletedFuture {
                                try channel.pipeline.syncOperations.addHandler(ForwardingHandler { relay.proxy?.fromUpstream($0, path: index) })
                            }
                        }
                        .bind(host: upstream.protocol == .inet6 ? "::1" : "127.0.0.1", port: 0).get()
                )
            }
        } catch {
            for channel in relays { try? await channel.close() }
            try? await front.close()
            throw error
        }
        let paths = zip(upstreams, relays).map { Path(upstream: $0, relay: $1) }
        let state = NIOLoopBoundBox.makeBoxSendingValue(
            State(
                toUpstream: ImpairmentModel(configuration: configuration.clientToUpstream),
                toClient: ImpairmentModel(configuration: configuration.upstreamToClient),
                paths: paths
            ),
            eventLoop: loop
        )
        let proxy = ImpairmentProxy(state: state, front: front, relays: relays, origin: .now())
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

    /// The path a client's datagram takes: the only one (its client is the last sender), the one
    /// the client took before, or the first free one; nil when every path has another client.
    private func path(of client: SocketAddress) -> Int? {
        if state.value.paths.count == 1 {
            state.value.paths[0].client = client
            return 0
        }
        if let index = state.value.paths.firstIndex(where: { $0.client == client }) { return index }
        guard let free = state.value.paths.firstIndex(where: { $0.client == nil }) else { return nil }
        state.value.paths[free].client = client
        return free
    }

    private func fromClient(_ envelope: AddressedEnvelope<ByteBuffer>) {
        guard let index = path(of: envelope.remoteAddress) else {
            state.value.statistics.strayDatagrams += 1
            return
        }
        let path = state.value.paths[index]
        state.value.statistics.clientToUpstream.received += 1
        let decision = state.value.toUpstream.submit(size: envelope.data.readableBytes, now: now())
        record(decision, into: \.clientToUpstream, model: state.value.toUpstream.statistics)
        schedule(decision, envelope.data, to: path.upstream, via: path.relay, direction: \.clientToUpstream)
    }

    private func fromUpstream(_ envelope: AddressedEnvelope<ByteBuffer>, path index: Int) {
        let path = state.value.paths[index]
        guard envelope.remoteAddress == path.upstream, let client = path.client else {
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
        state.value.statistics[keyPath: direction].droppedAtBottleneck = model.droppedAtBottleneck
        state.value.statistics[keyPath: direction].duplicated = model.duplicated
        state.value.statistics[keyPath: direction].reordered = model.reordered
        state.value.statistics[keyPath: direction].corrupted = model.corrupted
        state.value.statistics[keyPath: direction].maxQueueDelayMilliseconds = Double(model.maxQueueDelay.nanosecondsClamped) / 1e6
        state.value.statistics[keyPath: direction].meanQueueDelayMilliseconds =
            model.queuedAtBottleneck == 0 ? 0 : Double(model.totalQueueDelay.nanosecondsClamped) / 1e6 / Double(model.queuedAtBottleneck)
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

    /// Closes every socket; datagrams still scheduled are dropped.
    public func stop() async {
        try? await front.close()
        for channel in relays { try? await channel.close() }
    }
}

/// Lets the handlers, created before the proxy exists, reach it once it does. Set once, on
/// start-up, before any datagram can be read; read on the event loop only.
private final class ProxyRelay: @unchecked Sendable {
    var proxy: ImpairmentProxy?
}

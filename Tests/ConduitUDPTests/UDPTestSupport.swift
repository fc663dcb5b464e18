import ConduitCore
import NIOCore
import NIOPosix
import Testing

@testable import ConduitUDP

enum UDPTestSupport {
    static func url(_ text: String) throws -> TransportURL { try TransportURL(parsing: text) }

    /// A listener on `host` port 0, and a link pair through it. Closes all three after `body`.
    static func withPair<R>(
        host: String = "127.0.0.1",
        query: String = "",
        _ body: (UDPListener, UDPLink, UDPLink) async throws -> R
    ) async throws -> R {
        let transport = UDPTransport()
        let literal = host.contains(":") ? "[\(host)]" : host
        let listener = try await transport.listenUDP(on: url("udp://\(literal):0\(query)"))
        async let accepted = listener.acceptUDP()
        let client: UDPLink
        do {
            client = try await transport.connectUDP(to: listener.localURL)
        } catch {
            await listener.close()
            _ = await accepted
            throw error
        }
        guard let server = await accepted else {
            await client.close()
            await listener.close()
            throw ConduitError(.connectionFailed, "the listener accepted nothing")
        }
        do {
            let result = try await body(listener, client, server)
            await client.close()
            await server.close()
            await listener.close()
            return result
        } catch {
            await client.close()
            await server.close()
            await listener.close()
            throw error
        }
    }

    /// Reads until `count` datagrams arrived or nothing came for `quiet`.
    static func read(_ link: any TransportLink, count: Int, quiet: Duration = .seconds(2)) async throws -> [[UInt8]] {
        var received: [[UInt8]] = []
        while received.count < count {
            let batch = try await withThrowingTaskGroup(of: DatagramBatch?.self) { group in
                group.addTask { try await link.read() }
                group.addTask {
                    try await Task.sleep(for: quiet)
                    return nil
                }
                defer { group.cancelAll() }
                return try await group.next() ?? nil
            }
            guard let batch else { break }
            for index in 0..<batch.count { received.append(batch[index]) }
        }
        return received
    }

    /// Polls `condition` every 10 ms for at most `limit`.
    static func eventually(within limit: Duration = .seconds(5), _ condition: () async -> Bool) async -> Bool {
        let start = ContinuousClock.now
        while ContinuousClock.now - start < limit {
            if await condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return await condition()
    }

    static func rtcp(_ message: UDPControlMessage) -> [UInt8] {
        var buffer = ByteBuffer()
        message.write(into: &buffer)
        return Array(buffer.readableBytesView)
    }

    static func rtp(sequence: UInt16, ssrc: UInt32, payload: [UInt8]) -> [UInt8] {
        var buffer = ByteBuffer()
        RTPHeader(sequence: sequence, timestamp: 0, ssrc: ssrc).write(into: &buffer)
        buffer.writeBytes(payload)
        return Array(buffer.readableBytesView)
    }
}

/// A man in the middle on 127.0.0.1 that forwards between the first client that writes to it and
/// an upstream, recording every datagram in both directions.
final class UDPTap: Sendable {
    struct Record: Sendable {
        let toServer: Bool
        let bytes: [UInt8]
    }

    let records = TSanVisibleMutex<[Record]>([])
    private let client = TSanVisibleMutex<SocketAddress?>(nil)
    private let boxes = TSanVisibleMutex<(front: (any Channel)?, back: (any Channel)?)>((nil, nil))
    let upstream: SocketAddress

    private init(upstream: SocketAddress) {
        self.upstream = upstream
    }

    static func start(upstream: SocketAddress) async throws -> (UDPTap, SocketAddress) {
        let tap = UDPTap(upstream: upstream)
        let front = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(UDPChannelHandler(onDatagram: { envelope, _ in tap.fromClient(envelope) }, onBurstEnd: { _ in }))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let back = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(UDPChannelHandler(onDatagram: { envelope, _ in tap.fromServer(envelope) }, onBurstEnd: { _ in }))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        tap.boxes.withLock { $0 = (front, back) }
        return (tap, front.localAddress!)
    }

    private func fromClient(_ envelope: AddressedEnvelope<ByteBuffer>) {
        client.withLock { $0 = envelope.remoteAddress }
        records.withLock { $0.append(Record(toServer: true, bytes: Array(envelope.data.readableBytesView))) }
        boxes.withLock { $0.back }?.writeAndFlush(AddressedEnvelope(remoteAddress: upstream, data: envelope.data), promise: nil)
    }

    private func fromServer(_ envelope: AddressedEnvelope<ByteBuffer>) {
        records.withLock { $0.append(Record(toServer: false, bytes: Array(envelope.data.readableBytesView))) }
        guard let client = client.withLock({ $0 }) else { return }
        boxes.withLock { $0.front }?.writeAndFlush(AddressedEnvelope(remoteAddress: client, data: envelope.data), promise: nil)
    }

    /// Sends `bytes` to the upstream from the tap's own socket: to the server, it comes from
    /// the client's address (a replay or a forgery on the path).
    func injectToServer(_ bytes: [UInt8]) async throws {
        try await boxes.withLock { $0.back }?.writeAndFlush(AddressedEnvelope(remoteAddress: upstream, data: ByteBuffer(bytes: bytes)))
    }

    func stop() async {
        let (front, back) = boxes.withLock { $0 }
        try? await front?.close()
        try? await back?.close()
    }
}

/// Every UDP transport suite, run one test at a time: they measure the process's resident memory
/// and pace datagrams through the kernel, which concurrent tests would disturb.
@Suite("UDP transport", .serialized)
enum UDPTransportTests {}

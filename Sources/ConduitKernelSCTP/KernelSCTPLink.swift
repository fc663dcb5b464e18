#if KernelSCTP
public import ConduitCore

#if canImport(Glibc)
import Glibc
#endif

/// One kernel SCTP association as a `TransportLink`: each frame is one SCTP user message.
///
/// SCTP itself retransmits, orders per stream and fragments, so the link is reliable and ordered
/// for the call (the core's reliability engine is not stacked on it) and unreliable session types
/// get SCTP's partial reliability instead. Frames are spread over the negotiated outbound streams by
/// the channel their writer tagged them with (`FrameTag`): the call's own frames on stream 0, each
/// data session on `1 + channel % (streams - 1)`, so its frames stay in order and other sessions do
/// not wait for it.
public final class KernelSCTPLink: TransportLink {
    /// Reliable and ordered, with partial reliability (PR-SCTP); 16 KiB frames, messages up to 64 KiB.
    public let capabilities = TransportCapabilities(
        isReliable: true, isOrdered: true, supportsPartialReliability: true,
        maxDatagramSize: KernelSCTPLink.maxMessage, mtu: KernelSCTPLink.frameSize)
    public let remoteDescription: String

    /// The largest message read; the kernel fragments and reassembles anything up to it.
    static let maxMessage = 65_536
    /// Frames the core builds: 16 KiB, several path-MTU packets per SCTP message.
    static let frameSize = 16_384
    /// Messages handed to one `read`, at most.
    static let maxMessagesPerRead = 64

    private let socket: KernelSCTPSocket
    private let streams: UInt16

    init(socket: KernelSCTPSocket, remoteDescription: String) throws(ConduitError) {
        self.socket = socket
        self.remoteDescription = remoteDescription
        self.streams = socket.outboundStreams()
    }

    /// The SCTP stream for a channel (see the type's comment).
    static func stream(for channel: UInt32, streams: UInt16) -> UInt16 {
        guard channel != FrameTag.controlChannel, streams > 1 else { return 0 }
        return UInt16(1 + channel % UInt32(streams - 1))
    }

    /// Sends each datagram of the batch as one SCTP message on its session's stream, with the session type's ordering and partial reliability. Suspends while the socket's send buffer is full; throws `protocolViolation` (sending nothing) when a datagram is over `maxDatagramSize`, `connectionClosed` once the association is gone.
    public func write(_ batch: DatagramBatch) async throws(ConduitError) {
        // The peer reads at most maxMessage bytes and skips a longer message whole: refuse it here.
        for index in 0..<batch.count where batch.range(of: index).count > Self.maxMessage {
            throw ConduitError(.protocolViolation, "a \(batch.range(of: index).count)-byte datagram exceeds this SCTP link's limit of \(Self.maxMessage)")
        }
        for index in 0..<batch.count {
            let tag = batch.tag(at: index)
            let stream = Self.stream(for: tag.channel, streams: streams)
            // A copy per frame: the bytes must outlive a suspension while the socket is full.
            try await socket.send(batch[index], stream: stream, delivery: tag.delivery)
        }
    }

    /// The next SCTP messages received, or nil once the peer shut the association down.
    public func read() async throws(ConduitError) -> DatagramBatch? {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.maxMessage, alignment: 8)
        defer { buffer.deallocate() }
        var batch = DatagramBatch()
        while true {
            switch try socket.receive(into: buffer) {
            case .message(let count):
                batch.append(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
                if batch.count < Self.maxMessagesPerRead { continue }
                return batch
            case .wouldBlock:
                if !batch.isEmpty { return batch }
                guard try await socket.wait(for: Int16(POLLIN)) == .ready else { return nil }
            case .ended:
                return batch.isEmpty ? nil : batch
            }
        }
    }

    /// Shuts the association down gracefully and closes the socket.
    public func close() async {
        socket.shutdownNow()
    }
}

/// Accepts kernel SCTP associations on one address.
public final class KernelSCTPListener: TransportListener {
    public let localURL: TransportURL
    private let socket: KernelSCTPSocket

    init(socket: KernelSCTPSocket, localURL: TransportURL) {
        self.socket = socket
        self.localURL = localURL
    }

    public func accept() async throws(ConduitError) -> (any TransportLink)? {
        guard let (accepted, peer) = try await socket.accept() else { return nil }
        try? accepted.configure()  // SCTP_NODELAY; failing to set it only costs latency
        return try KernelSCTPLink(socket: accepted, remoteDescription: peer)
    }

    /// Stops accepting: a pending `accept` returns nil; accepted links keep working.
    public func close() async {
        socket.shutdownNow()
    }
}
#endif

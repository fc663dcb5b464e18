import NIOCore

/// Hands each datagram read (and the end of each read burst, with how many reads it took) to
/// closures, on the event loop.
/// Errors are swallowed: on a datagram socket they are per datagram (an ICMP port-unreachable
/// surfacing as ECONNREFUSED, say) and never fatal to a link or a handshake.
///
/// With receive offload (UDP_GRO) the kernel hands over several datagrams of one flow in one
/// read, with their size; they are split here, as slices of the read buffer, so everything above
/// sees one datagram at a time.
final class UDPChannelHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    private let onDatagram: (AddressedEnvelope<ByteBuffer>, any Channel) -> Void
    private let onBurstEnd: (_ reads: Int) -> Void
    /// Datagrams (as the socket returned them, before splitting) read in this burst.
    private var reads = 0

    init(onDatagram: @escaping (AddressedEnvelope<ByteBuffer>, any Channel) -> Void, onBurstEnd: @escaping (_ reads: Int) -> Void) {
        self.onDatagram = onDatagram
        self.onBurstEnd = onBurstEnd
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        reads += 1
        guard let segment = envelope.metadata?.segmentSize, segment > 0, envelope.data.readableBytes > segment else {
            onDatagram(envelope, context.channel)
            return
        }
        var rest = envelope.data
        while rest.readableBytes > 0, let piece = rest.readSlice(length: min(segment, rest.readableBytes)) {
            onDatagram(AddressedEnvelope(remoteAddress: envelope.remoteAddress, data: piece), context.channel)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        let burst = reads
        reads = 0
        onBurstEnd(burst)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {}
}

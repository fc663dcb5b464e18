import NIOCore

/// Hands each datagram read (and the end of each read burst) to closures, on the event loop.
/// Errors are swallowed: on a datagram socket they are per datagram (an ICMP port-unreachable
/// surfacing as ECONNREFUSED, say) and never fatal to a link or a handshake.
final class UDPChannelHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    private let onDatagram: (AddressedEnvelope<ByteBuffer>, any Channel) -> Void
    private let onBurstEnd: () -> Void

    init(onDatagram: @escaping (AddressedEnvelope<ByteBuffer>, any Channel) -> Void, onBurstEnd: @escaping () -> Void) {
        self.onDatagram = onDatagram
        self.onBurstEnd = onBurstEnd
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        onDatagram(unwrapInboundIn(data), context.channel)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        onBurstEnd()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {}
}

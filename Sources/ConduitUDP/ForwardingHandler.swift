import NIOCore

/// Hands every datagram a channel reads to a closure, on the channel's event loop.
final class ForwardingHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    private let onDatagram: (AddressedEnvelope<ByteBuffer>) -> Void

    init(_ onDatagram: @escaping (AddressedEnvelope<ByteBuffer>) -> Void) {
        self.onDatagram = onDatagram
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        onDatagram(unwrapInboundIn(data))
    }
}

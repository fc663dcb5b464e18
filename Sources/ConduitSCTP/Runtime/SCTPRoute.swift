#if SCTP
import ConduitUDP
import NIOCore

/// Where an association's packets go: a UDP socket on the stack's loop and the peer's address.
/// RFC 6951 framing without the port negotiation: each UDP payload is one whole SCTP packet.
struct SCTPRoute: @unchecked Sendable {
    let channel: any Channel
    let peer: SocketAddress

    var describe: String { SocketAddressing.describe(peer) }

    /// Copies `bytes` (usrsctp's buffer is only lent) into a datagram with its CRC32c (usrsctp
    /// leaves that to us, see ``SCTPChecksum``); flushed at the end of the loop task.
    func send(_ bytes: UnsafeRawBufferPointer, stack: SCTPStack) {
        var buffer = channel.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        buffer.withUnsafeMutableReadableBytes(SCTPChecksum.seal)
        channel.write(AddressedEnvelope(remoteAddress: peer, data: buffer), promise: nil)
        stack.needsFlush(channel)
    }
}
#endif

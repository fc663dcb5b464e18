import NIOCore

// The handshake and RTP header as plain bytes, for tools that speak the wire from raw sockets
// (the join-storm generator of `conduit bench --join-storm`) without a NIO channel.

extension UDPControlMessage {
    /// The message as one datagram, in the clear (no SRTP).
    package var bytes: [UInt8] {
        var buffer = ByteBuffer()
        write(into: &buffer)
        return Array(buffer.readableBytesView)
    }

    /// The message in `bytes`, or nil if they are not exactly one of ours (see ``init(parsing:)``).
    package init?(bytes: some Sequence<UInt8>) {
        self.init(parsing: ByteBuffer(bytes: bytes))
    }
}

extension RTPHeader {
    /// The 12 header bytes.
    package var bytes: [UInt8] {
        var buffer = ByteBuffer()
        write(into: &buffer)
        return Array(buffer.readableBytesView)
    }
}

extension RTPHeader {
    /// The header at the start of `bytes`, if it is exactly the shape Conduit sends.
    package init?(bytes: some Sequence<UInt8>) {
        self.init(parsing: ByteBuffer(bytes: bytes))
    }
}

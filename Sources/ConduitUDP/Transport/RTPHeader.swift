package import NIOCore

/// The 12-byte RTP (RFC 3550 section 5.1) header of every data datagram: V=2, no padding, no
/// extension, no CSRC, marker 0, payload type 96 (dynamic). The payload is the upper layer's bytes.
package struct RTPHeader: Hashable, Sendable {
    package static let size = 12
    package static let payloadType: UInt8 = 96
    /// V=2, P=0, X=0, CC=0.
    package static let firstByte: UInt8 = 0x80

    package var sequence: UInt16
    package var timestamp: UInt32
    package var ssrc: UInt32

    package func write(into buffer: inout ByteBuffer) {
        buffer.writeInteger(Self.firstByte)
        buffer.writeInteger(Self.payloadType)  // M=0
        buffer.writeInteger(sequence)
        buffer.writeInteger(timestamp)
        buffer.writeInteger(ssrc)
    }

    /// The header of `buffer` (at its reader index) if it is exactly the shape we send.
    package init?(parsing buffer: ByteBuffer) {
        let at = buffer.readerIndex
        guard buffer.readableBytes >= Self.size,
            buffer.getInteger(at: at, as: UInt8.self) == Self.firstByte,
            buffer.getInteger(at: at + 1, as: UInt8.self) == Self.payloadType,
            let sequence = buffer.getInteger(at: at + 2, as: UInt16.self),
            let timestamp = buffer.getInteger(at: at + 4, as: UInt32.self),
            let ssrc = buffer.getInteger(at: at + 8, as: UInt32.self)
        else { return nil }
        self.init(sequence: sequence, timestamp: timestamp, ssrc: ssrc)
    }

    package init(sequence: UInt16, timestamp: UInt32, ssrc: UInt32) {
        self.sequence = sequence
        self.timestamp = timestamp
        self.ssrc = ssrc
    }

    /// RTP and RTCP share a port (RFC 5761 section 4): the second byte of RTCP is 192...223.
    package static func looksLikeRTCP(_ buffer: ByteBuffer) -> Bool {
        guard let second = buffer.getInteger(at: buffer.readerIndex + 1, as: UInt8.self) else { return false }
        return (192...223).contains(second)
    }
}

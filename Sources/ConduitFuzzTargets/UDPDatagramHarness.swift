import ConduitUDP
import NIOCore

extension FuzzTargets {
    /// A datagram at a `udp://` socket, as the listener and the link classify it: the handshake and
    /// close messages (RTCP APP and BYE, with cookies), or an RTP data header. Exactly one reading
    /// may hold, and what parses writes back the same bytes.
    static let udpDatagram = FuzzTarget(
        name: "udp-datagram",
        summary: "UDPControlMessage, UDPCookie, RTPHeader, looksLikeRTCP: one classification, byte-identical rewrite"
    ) { (input) throws(FuzzFailure) in
        let check = Invariants(target: "udp-datagram")
        let buffer = ByteBuffer(bytes: input)
        let isRTCP = RTPHeader.looksLikeRTCP(buffer)
        var accepted = false
        if let message = UDPControlMessage(parsing: buffer) {
            try check.require(isRTCP, "control message \(message) is not classified as RTCP")
            var written = ByteBuffer()
            message.write(into: &written)
            try check.requireSameBytes(written.readableBytesView, input, "control message \(message)")
            accepted = true
        }
        if let header = RTPHeader(parsing: buffer) {
            try check.require(!isRTCP, "RTP header \(header) classified as RTCP")
            var written = ByteBuffer()
            header.write(into: &written)
            try check.requireSameBytes(written.readableBytesView, input[0..<RTPHeader.size], "RTP header \(header)")
            accepted = true
        }
        return accepted
    }
}

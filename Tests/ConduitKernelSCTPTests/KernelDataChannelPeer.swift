#if KernelSCTP && SCTP
import CKernelSCTPTestPeer
import Foundation

/// One end of a WebRTC data channel (RFC 8831, DCEP of RFC 8832) written straight on the kernel's
/// SCTP socket API (`CKernelSCTPTestPeer`), its packets carried in UDP (RFC 6951): an SCTP stack
/// independent of usrsctp, to test our `sctp+udp://` against. The DCEP bytes are encoded here by
/// hand, not by ConduitSCTP. Calls block (up to 10 s each): run it on its own thread.
struct KernelDataChannelPeer: Sendable {
    /// One SCTP user message: its stream, its payload protocol identifier and its bytes.
    struct Message: Sendable, Equatable {
        var stream: UInt16
        var ppid: UInt32
        var bytes: [UInt8]
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ call: String, _ result: Int) { description = "\(call): \(String(cString: strerror(Int32(-result))))" }
        init(message: String) { description = message }
    }

    static let dcepPPID: UInt32 = 50
    let descriptor: Int32

    /// Connects to SCTP port `sctpPort` on 127.0.0.1, encapsulated in UDP to `udpPort` there.
    static func connect(udpPort: Int, sctpPort: Int) throws -> KernelDataChannelPeer {
        let result = conduit_kpeer_connect(UInt16(udpPort), UInt16(sctpPort))
        guard result >= 0 else { throw Failure("connect to SCTP port \(sctpPort) through UDP port \(udpPort)", Int(result)) }
        return KernelDataChannelPeer(descriptor: result)
    }

    /// Listens on SCTP port `sctpPort` of 127.0.0.1 (peers reach it through the guest's UDP port).
    static func listen(sctpPort: Int) throws -> KernelDataChannelPeer {
        let result = conduit_kpeer_listen(UInt16(sctpPort))
        guard result >= 0 else { throw Failure("listen on SCTP port \(sctpPort)", Int(result)) }
        return KernelDataChannelPeer(descriptor: result)
    }

    /// The next association (a listening peer).
    func accept() throws -> KernelDataChannelPeer {
        let result = conduit_kpeer_accept(descriptor)
        guard result >= 0 else { throw Failure("accept", Int(result)) }
        return KernelDataChannelPeer(descriptor: result)
    }

    func close() { conduit_kpeer_close(descriptor) }

    /// Sends DATA_CHANNEL_OPEN (RFC 8832 section 5.1) for a reliable, ordered channel on `stream`.
    func open(stream: UInt16, label: String, protocol proto: String) throws {
        let label = Array(label.utf8), proto = Array(proto.utf8)
        var bytes: [UInt8] = [0x03, 0x00, 0x01, 0x00, 0, 0, 0, 0]  // OPEN, reliable ordered, priority 256, no parameter
        bytes += [UInt8(label.count >> 8), UInt8(label.count & 0xFF), UInt8(proto.count >> 8), UInt8(proto.count & 0xFF)]
        try send(Message(stream: stream, ppid: Self.dcepPPID, bytes: bytes + label + proto))
    }

    /// Reads a DATA_CHANNEL_OPEN: its stream, label and protocol.
    static func parseOpen(_ message: Message) throws -> (stream: UInt16, label: String, protocol: String) {
        let bytes = message.bytes
        guard message.ppid == dcepPPID, bytes.count >= 12, bytes[0] == 0x03 else {
            throw Failure(message: "expected DATA_CHANNEL_OPEN, got PPID \(message.ppid) with \(bytes.prefix(12))")
        }
        let labelLength = Int(bytes[8]) << 8 | Int(bytes[9]), protocolLength = Int(bytes[10]) << 8 | Int(bytes[11])
        guard bytes.count == 12 + labelLength + protocolLength else { throw Failure(message: "DATA_CHANNEL_OPEN of the wrong length") }
        let label = String(decoding: bytes[12..<(12 + labelLength)], as: UTF8.self)
        let proto = String(decoding: bytes[(12 + labelLength)...], as: UTF8.self)
        return (message.stream, label, proto)
    }

    /// DATA_CHANNEL_ACK (RFC 8832 section 5.2) on `stream`.
    func acknowledge(stream: UInt16) throws { try send(Message(stream: stream, ppid: Self.dcepPPID, bytes: [0x02])) }

    static func isAcknowledgement(_ message: Message) -> Bool { message.ppid == dcepPPID && message.bytes == [0x02] }

    func send(_ message: Message) throws {
        let sent = message.bytes.withUnsafeBytes { conduit_kpeer_send(descriptor, $0.baseAddress, $0.count, message.ppid, message.stream) }
        guard sent == message.bytes.count else { throw Failure("send", sent) }
    }

    /// The next whole user message, or nil when the peer ended the association.
    func receive() throws -> Message? {
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        var ppid: UInt32 = 0, stream: UInt16 = 0
        let count = buffer.withUnsafeMutableBytes { conduit_kpeer_receive(descriptor, $0.baseAddress, $0.count, &ppid, &stream) }
        if count == 0 { return nil }
        guard count > 0 else { throw Failure("receive", count) }
        return Message(stream: stream, ppid: ppid, bytes: Array(buffer.prefix(count)))
    }
}

/// Runs blocking `body` on a thread of its own, off the cooperative pool.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
#endif

import ConduitCore
import NIOCore
import Testing

@testable import ConduitUDP

#if canImport(Glibc)
import Glibc
#endif

/// Direct writes (``UDPDirectSocket``): the datagrams a run gathered from a batch arrive as the
/// channel's copying writes would have sent them.
@Suite("UDP direct writes", .timeLimit(.minutes(1)))
struct UDPDirectSocketTests {
    @Test func anRTPHeaderWrittenInPlaceIsTheBufferEncoding() {
        let header = RTPHeader(sequence: 0xBEEF, timestamp: 0x0102_0304, ssrc: 0xA0B0_C0D0)
        var buffer = ByteBuffer()
        header.write(into: &buffer)
        var bytes = [UInt8](repeating: 0, count: RTPHeader.size)
        bytes.withUnsafeMutableBytes { header.write(into: $0) }
        #expect(bytes == Array(buffer.readableBytesView))
    }

    #if os(Linux)
    @Test func aSegmentedRunArrivesAsItsDatagramsWithTheirHeaders() throws {
        guard UDPSocket.kernelSupportsOffload else { return }
        let loopback = try SocketAddress(ipAddress: "127.0.0.1", port: 0)
        let sender = try #require(try UDPDirectSocket.open(boundTo: loopback))
        defer { close(sender.descriptor) }
        let receiver = try #require(try UDPDirectSocket.open(boundTo: loopback))
        defer { close(receiver.descriptor) }
        let destination = try Self.localAddress(of: receiver.descriptor)

        // Three full datagrams and a shorter last one: one run, as `UDPLink.endOfRun` cuts them.
        var batch = DatagramBatch()
        let sizes = [300, 300, 300, 120]
        for (index, size) in sizes.enumerated() { batch.append([UInt8](repeating: UInt8(index + 1), count: size)) }
        let header = { (index: Int) in RTPHeader(sequence: UInt16(100 + index), timestamp: 7, ssrc: 0x1234_5678) }
        #expect(sender.send(batch, 0..<batch.count, to: destination, segmentSize: 300 + RTPHeader.size, header: header))

        for (index, size) in sizes.enumerated() {
            let datagram = try Self.receive(on: receiver.descriptor)
            var expected = [UInt8](repeating: 0, count: RTPHeader.size)
            expected.withUnsafeMutableBytes { header(index).write(into: $0) }
            expected += [UInt8](repeating: UInt8(index + 1), count: size)
            #expect(datagram == expected)
        }
    }

    static func localAddress(of descriptor: CInt) throws -> SocketAddress {
        var storage = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        try #require(result == 0)
        return try SocketAddress(ipAddress: "127.0.0.1", port: Int(UInt16(bigEndian: storage.sin_port)))
    }

    /// One datagram, waiting at most two seconds for it.
    static func receive(on descriptor: CInt) throws -> [UInt8] {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        try #require(poll(&poller, 1, 2_000) == 1, "no datagram within 2 s")
        var bytes = [UInt8](repeating: 0, count: 2_048)
        let count = bytes.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        try #require(count >= 0)
        return Array(bytes[..<count])
    }
    #endif
}

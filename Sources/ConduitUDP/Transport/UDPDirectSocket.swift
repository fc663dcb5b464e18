import ConduitCore
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The transport's own handle on a socket that a NIO datagram channel reads from: a link that
/// segments (UDP_SEGMENT) writes each run of datagrams with one `sendmsg`, every RTP header and
/// payload gathered from where it already is (the headers on the stack, the payloads in the
/// writer's batch), so the payload is not copied into a NIO buffer before the kernel copies it. NIO owns the descriptor and closes it with the
/// channel; a write is only made on the channel's event loop while the channel is active (the
/// channel closes on that loop too, so the descriptor is never used after it was closed).
///
/// A write the kernel does not take at once (a full socket buffer) or refuses goes through the
/// channel instead, which queues it or handles the error as it handles its own writes.
struct UDPDirectSocket: Sendable {
    let descriptor: CInt

    #if os(Linux)
    /// A non-blocking UDP socket bound to `address` (with SO_REUSEPORT if `reusePort`), for a
    /// NIO channel to adopt; nil where direct writes are not supported (then the channel binds its own).
    static func open(boundTo address: SocketAddress, reusePort: Bool = false) throws(ConduitError) -> UDPDirectSocket? {
        let family = CInt(address.protocol.rawValue)
        let descriptor = socket(family, CInt(SOCK_DGRAM.rawValue) | CInt(SOCK_NONBLOCK.rawValue) | CInt(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else {
            throw ConduitError(.connectionFailed, "cannot open a UDP socket for \(SocketAddressing.describe(address)): errno \(errno)")
        }
        var on: CInt = 1
        if reusePort, setsockopt(descriptor, SOL_SOCKET, SO_REUSEPORT, &on, socklen_t(MemoryLayout<CInt>.size)) != 0 {
            let code = errno
            close(descriptor)
            throw ConduitError(.connectionFailed, "cannot set SO_REUSEPORT on a UDP socket for \(SocketAddressing.describe(address)): errno \(code)")
        }
        let bound = address.withSockAddr { pointer, length in bind(descriptor, pointer, socklen_t(length)) }
        guard bound == 0 else {
            let code = errno
            close(descriptor)
            if code == EADDRINUSE {
                throw ConduitError(.addressInUse, "udp://\(SocketAddressing.describe(address)) is already in use")
            }
            throw ConduitError(.connectionFailed, "cannot bind a UDP socket to \(SocketAddressing.describe(address)): errno \(code)")
        }
        return UDPDirectSocket(descriptor: descriptor)
    }
    #else
    static func open(boundTo address: SocketAddress, reusePort: Bool = false) throws(ConduitError) -> UDPDirectSocket? { nil }
    #endif

    /// Datagrams `run` of `batch`, each behind the RTP header `header(index)`, as one write to
    /// `peer`: a single datagram, or, with `segmentSize`, a run the kernel splits at that size
    /// (UDP_SEGMENT). True if the kernel took it; false if the channel should write it instead.
    func send(
        _ batch: DatagramBatch, _ run: Range<Int>, to peer: SocketAddress, segmentSize: Int?, header: (Int) -> RTPHeader
    ) -> Bool {
        #if os(Linux)
        let count = run.count
        return withUnsafeTemporaryAllocation(byteCount: count * RTPHeader.size, alignment: 4) { headers in
            withUnsafeTemporaryAllocation(of: iovec.self, capacity: 2 * count) { vectors in
                batch.storage.withUnsafeBytes { storage in
                    for (slot, index) in run.enumerated() {
                        let headerBytes = UnsafeMutableRawBufferPointer(rebasing: headers[slot * RTPHeader.size..<(slot + 1) * RTPHeader.size])
                        header(index).write(into: headerBytes)
                        let payload = batch.range(of: index)
                        vectors[2 * slot] = iovec(iov_base: headerBytes.baseAddress, iov_len: RTPHeader.size)
                        vectors[2 * slot + 1] = iovec(
                            iov_base: UnsafeMutableRawPointer(mutating: storage.baseAddress.map { $0 + payload.lowerBound }), iov_len: payload.count
                        )
                    }
                    return peer.withSockAddr { address, length in
                        Self.sendMessage(descriptor, vectors: vectors.baseAddress!, count: 2 * count, to: address, length: length, segmentSize: segmentSize)
                    }
                }
            }
        }
        #else
        return false
        #endif
    }

    #if os(Linux)
    /// Control-message space for one UDP_SEGMENT value (a 2-byte segment size).
    private static let segmentControlBytes = 32

    private static func sendMessage(
        _ descriptor: CInt, vectors: UnsafeMutablePointer<iovec>, count: Int, to address: UnsafePointer<sockaddr>, length: Int, segmentSize: Int?
    ) -> Bool {
        withUnsafeTemporaryAllocation(byteCount: segmentControlBytes, alignment: 8) { control in
            var message = msghdr()
            message.msg_name = UnsafeMutableRawPointer(mutating: address)
            message.msg_namelen = socklen_t(length)
            message.msg_iov = vectors
            message.msg_iovlen = count
            if let segmentSize {
                _ = control.initializeMemory(as: UInt8.self, repeating: 0)
                let space = Int(SegmentControl.spaceForSegmentSize)
                let header = control.baseAddress!.assumingMemoryBound(to: cmsghdr.self)
                header.pointee.cmsg_level = CInt(IPPROTO_UDP)
                header.pointee.cmsg_type = Self.udpSegment
                header.pointee.cmsg_len = SegmentControl.lengthForSegmentSize
                let data = control.baseAddress! + MemoryLayout<cmsghdr>.stride
                data.storeBytes(of: UInt16(segmentSize), as: UInt16.self)
                message.msg_control = control.baseAddress
                message.msg_controllen = space
            }
            while true {
                let sent = sendmsg(descriptor, &message, CInt(MSG_DONTWAIT))
                if sent >= 0 { return true }
                if errno == EINTR { continue }
                return false
            }
        }
    }

    /// `UDP_SEGMENT` from `<linux/udp.h>`.
    private static let udpSegment: CInt = 103
    #endif
}

#if os(Linux)
/// The sizes of a control message carrying one `UInt16` (`CMSG_SPACE` and `CMSG_LEN`, which are
/// macros Swift does not import): the header, aligned to `size_t`, then the value, aligned.
private enum SegmentControl {
    static let lengthForSegmentSize = MemoryLayout<cmsghdr>.stride + MemoryLayout<UInt16>.size
    static let spaceForSegmentSize = MemoryLayout<cmsghdr>.stride + ((MemoryLayout<UInt16>.size + MemoryLayout<Int>.size - 1) & ~(MemoryLayout<Int>.size - 1))
}
#endif

extension RTPHeader {
    /// Writes the 12 bytes in network order into `bytes` (exactly 12 long).
    func write(into bytes: UnsafeMutableRawBufferPointer) {
        bytes[0] = Self.firstByte
        bytes[1] = Self.payloadType
        bytes.storeBytes(of: sequence.bigEndian, toByteOffset: 2, as: UInt16.self)
        bytes.storeBytes(of: timestamp.bigEndian, toByteOffset: 4, as: UInt32.self)
        bytes.storeBytes(of: ssrc.bigEndian, toByteOffset: 8, as: UInt32.self)
    }
}

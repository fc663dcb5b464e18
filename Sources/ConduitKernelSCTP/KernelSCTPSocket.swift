#if KernelSCTP
import CLibSCTP
import ConduitCore
import NIOPosix
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One non-blocking kernel SCTP socket, one-to-one style (RFC 6458 section 4). Waiting for it to be
/// readable or writable happens on NIO's blocking-I/O thread pool in short `poll` slices, never on
/// the cooperative pool. The descriptor is closed only in `deinit`, when nothing can use it any
/// more; `shutdownNow` ends the association (SHUTDOWN, RFC 9260 section 9.2) and wakes waiters.
final class KernelSCTPSocket: Sendable {
    let descriptor: Int32
    private let ended = Atomic<Bool>(false)

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit { _ = Glibc.close(descriptor) }

    struct Address: Sendable {
        var storage: sockaddr_storage
        var length: socklen_t
        var family: Int32 { Int32(storage.ss_family) }
    }

    /// Opens an SCTP socket, or the error that says this kernel has no SCTP.
    static func open(family: Int32) -> Result<KernelSCTPSocket, ConduitError> {
        let descriptor = socket(family, Int32(SOCK_STREAM.rawValue), conduit_sctp_protocol())
        guard descriptor >= 0 else {
            let code = errno
            let why = String(cString: strerror(code))
            let call = "socket(\(family == AF_INET6 ? "AF_INET6" : "AF_INET"), SOCK_STREAM, IPPROTO_SCTP)"
            if code == EPROTONOSUPPORT || code == ESOCKTNOSUPPORT || code == EAFNOSUPPORT {
                return .failure(ConduitError(
                    .unsupportedByTransport,
                    "kernel SCTP is not available on this machine (\(call): \(why)); use sctp+udp:// (usrsctp)"))
            }
            return .failure(ConduitError(.connectionFailed, "\(call) failed: \(why)"))
        }
        let flags = fcntl(descriptor, F_GETFL)
        _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK)
        return .success(KernelSCTPSocket(descriptor: descriptor))
    }

    /// Closes a socket that never became a link (deinit does the rest).
    func closeNow() { shutdownNow() }

    /// Ends the association and wakes anyone waiting on the socket.
    func shutdownNow() {
        if ended.exchange(true, ordering: .acquiringAndReleasing) { return }
        _ = Glibc.shutdown(descriptor, Int32(SHUT_RDWR))
    }

    var isEnded: Bool { ended.load(ordering: .acquiring) }

    /// `sctp://HOST:PORT` to a socket address (a name is resolved; IPv4 and IPv6).
    static func resolve(_ url: TransportURL, forListening: Bool) throws(ConduitError) -> (Address, String) {
        guard url.scheme == "sctp", url.path.isEmpty || url.path == "/" else {
            throw ConduitError(.invalidAddress, "a kernel SCTP address is sctp://HOST:PORT, got \(url)")
        }
        guard url.query.isEmpty else {
            throw ConduitError(.invalidConfiguration, "sctp:// takes no options (got \(url.query.keys.sorted().joined(separator: ", ")))")
        }
        guard let port = url.port, forListening || port != 0 else {
            throw ConduitError(.invalidAddress, "a kernel SCTP address needs a port\(forListening ? "" : " other than 0"): \(url)")
        }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(url.host, String(port), &hints, &list)
        guard status == 0, let first = list, let address = first.pointee.ai_addr else {
            throw ConduitError(.invalidAddress, "cannot resolve '\(url.host)' in \(url): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(list) }
        var storage = sockaddr_storage()
        let length = first.pointee.ai_addrlen
        withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(start: address, count: Int(length))) }
        let host = url.host.contains(":") ? "[\(url.host)]" : url.host
        return (Address(storage: storage, length: length), "sctp://\(host):\(port)")
    }

    /// Streams asked for in INIT (the kernel's default is 10) and no Nagle: frames leave at once.
    func configure() throws(ConduitError) {
        var initMessage = sctp_initmsg()
        initMessage.sinit_num_ostreams = 1_024
        initMessage.sinit_max_instreams = 1_024
        try option(SCTP_INITMSG, &initMessage, "SCTP_INITMSG")
        var on: Int32 = 1
        try option(SCTP_NODELAY, &on, "SCTP_NODELAY")
    }

    private func option<T: BitwiseCopyable>(_ name: Int32, _ value: inout T, _ label: String) throws(ConduitError) {
        let result = withUnsafeBytes(of: &value) {
            setsockopt(descriptor, conduit_sctp_protocol(), name, $0.baseAddress, socklen_t($0.count))
        }
        guard result == 0 else {
            throw ConduitError(.connectionFailed, "setsockopt(\(label)): \(String(cString: strerror(errno)))")
        }
    }

    /// Outbound streams the association negotiated (SCTP_STATUS), at least 1.
    func outboundStreams() -> UInt16 {
        var status = sctp_status()
        var length = socklen_t(MemoryLayout<sctp_status>.size)
        guard getsockopt(descriptor, conduit_sctp_protocol(), SCTP_STATUS, &status, &length) == 0 else { return 1 }
        return max(1, status.sstat_outstrms)
    }

    func connect(to address: Address, timeout: Duration, description: String) async throws(ConduitError) {
        var address = address
        let result = withUnsafePointer(to: &address.storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, address.length) }
        }
        if result != 0 && errno != EINPROGRESS {
            throw ConduitError(.connectionFailed, "connecting to \(description): \(String(cString: strerror(errno)))")
        }
        let deadline = ContinuousClock.now + timeout
        while result != 0 {
            switch try await wait(for: Int16(POLLOUT), until: deadline) {
            case .ready: break
            case .ended: throw ConduitError(.connectionClosed, "closed while connecting to \(description)")
            case .timedOut: throw ConduitError(.timedOut, "no SCTP association with \(description) within \(timeout)")
            }
            var problem: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            _ = getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &problem, &length)
            if problem == 0 { return }
            if problem != EINPROGRESS && problem != EALREADY {
                throw ConduitError(.connectionFailed, "connecting to \(description): \(String(cString: strerror(problem)))")
            }
        }
    }

    /// Binds and listens; the bound port.
    func bindAndListen(_ address: Address) throws(ConduitError) -> Int {
        var address = address
        let bound = withUnsafePointer(to: &address.storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, address.length) }
        }
        guard bound == 0 else {
            let code = errno
            throw ConduitError(code == EADDRINUSE ? .addressInUse : .connectionFailed, "bind: \(String(cString: strerror(code)))")
        }
        guard Glibc.listen(descriptor, 64) == 0 else {
            throw ConduitError(.connectionFailed, "listen: \(String(cString: strerror(errno)))")
        }
        var local = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        // sin_port and sin6_port sit at the same offset, in network byte order.
        let port = withUnsafeBytes(of: &local) { UInt16($0[2]) << 8 | UInt16($0[3]) }
        return Int(port)
    }

    /// The next connection, or nil once this listening socket is shut down.
    func accept() async throws(ConduitError) -> (KernelSCTPSocket, String)? {
        while true {
            var peer = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let accepted = withUnsafeMutablePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.accept(descriptor, $0, &length) }
            }
            if accepted >= 0 {
                _ = fcntl(accepted, F_SETFL, fcntl(accepted, F_GETFL) | O_NONBLOCK)
                return (KernelSCTPSocket(descriptor: accepted), Self.describe(peer))
            }
            if isEnded { return nil }
            guard errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR else {
                throw ConduitError(.connectionFailed, "accept: \(String(cString: strerror(errno)))")
            }
            guard try await wait(for: Int16(POLLIN)) == .ready else { return nil }
        }
    }

    /// Sends one frame as one SCTP user message on `stream` with `delivery` (RFC 6458 section
    /// 5.3: SCTP_SNDINFO and, for partial reliability, SCTP_PRINFO; see `conduit_sctp_send`).
    func send(_ frame: [UInt8], stream: UInt16, delivery: Reliability) async throws(ConduitError) {
        let flags = delivery.ordered ? 0 : UInt16(SCTP_UNORDERED.rawValue)
        var policy = UInt16(SCTP_PR_SCTP_NONE)
        var value: UInt32 = 0
        switch delivery.limit {
        case .none:
            break
        case .maxRetransmits(let count):
            policy = UInt16(SCTP_PR_SCTP_RTX)
            value = UInt32(count)
        case .maxPacketLifeTime(let milliseconds):
            policy = UInt16(SCTP_PR_SCTP_TTL)
            value = milliseconds
        }
        while true {
            let sent = frame.withUnsafeBytes { conduit_sctp_send(descriptor, $0.baseAddress, $0.count, stream, flags, policy, value) }
            if sent >= 0 { return }
            guard errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR, !isEnded else {
                throw ConduitError(.connectionClosed, "SCTP send failed: \(String(cString: strerror(errno)))")
            }
            guard try await wait(for: Int16(POLLOUT)) == .ready else {
                throw ConduitError(.connectionClosed, "the SCTP association is closed")
            }
        }
    }

    enum Received {
        case message(Int)
        case wouldBlock
        case ended
    }

    /// Reads one whole user message into `buffer` without blocking. Notifications (none are
    /// subscribed) and messages larger than the buffer (no MSG_EOR) are skipped.
    func receive(into buffer: UnsafeMutableRawBufferPointer) throws(ConduitError) -> Received {
        var truncated = false
        while true {
            var vector = iovec(iov_base: buffer.baseAddress, iov_len: buffer.count)
            var header = msghdr()
            let count = withUnsafeMutablePointer(to: &vector) { vectorPointer in
                header.msg_iov = vectorPointer
                header.msg_iovlen = 1
                return recvmsg(descriptor, &header, 0)
            }
            if count == 0 { return .ended }
            if count < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { return .wouldBlock }
                if isEnded { return .ended }
                throw ConduitError(.connectionClosed, "SCTP receive failed: \(String(cString: strerror(errno)))")
            }
            let complete = header.msg_flags & Int32(MSG_EOR) != 0
            let notification = header.msg_flags & Int32(MSG_NOTIFICATION.rawValue) != 0
            if !complete { truncated = true; continue }
            if truncated || notification { truncated = false; continue }
            return .message(count)
        }
    }

    enum Readiness { case ready, ended, timedOut }

    /// Waits (in 200 ms polls on the thread pool) until the socket is ready for `events`, it is shut
    /// down here, or `deadline` passes.
    func wait(for events: Int16, until deadline: ContinuousClock.Instant? = nil) async throws(ConduitError) -> Readiness {
        let descriptor = self.descriptor
        while !isEnded {
            if let deadline, ContinuousClock.now >= deadline { return .timedOut }
            let ready: Bool
            do {
                ready = try await NIOThreadPool.singleton.runIfActive {
                    var entry = pollfd(fd: descriptor, events: events, revents: 0)
                    return poll(&entry, 1, 200) > 0
                }
            } catch {
                throw ConduitError(.connectionClosed, "the I/O thread pool is gone: \(error)")
            }
            if ready { return isEnded ? .ended : .ready }
        }
        return .ended
    }

    static func describe(_ address: sockaddr_storage) -> String {
        var address = address
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let port = withUnsafeBytes(of: &address) { UInt16($0[2]) << 8 | UInt16($0[3]) }
        if Int32(address.ss_family) == AF_INET6 {
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                    var ip = pointer.pointee.sin6_addr
                    _ = inet_ntop(AF_INET6, &ip, &text, socklen_t(text.count))
                }
            }
            return "sctp://[\(Self.string(text))]:\(port)"
        }
        withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                var ip = pointer.pointee.sin_addr
                _ = inet_ntop(AF_INET, &ip, &text, socklen_t(text.count))
            }
        }
        return "sctp://\(Self.string(text)):\(port)"
    }

    private static func string(_ text: [CChar]) -> String {
        String(decoding: text.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
#endif

#if KernelSCTP
public import ConduitCore
public import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Kernel SCTP (RFC 9260) through the socket API of RFC 6458 and lksctp-tools: `sctp://host:port`.
///
/// A second SCTP backend beside usrsctp (`sctp+udp://`, the default): native SCTP packets (IP
/// protocol 132) on one-to-one style sockets (`SOCK_STREAM`, RFC 6458 section 4), where the kernel
/// supports them. Every Conduit frame is one SCTP user message. Frames go on the SCTP stream of their
/// data session (the frame's `FrameTag`), so sessions do not block each other, with the
/// session type's delivery: ordered or unordered (`SCTP_UNORDERED`), and partial reliability
/// (RFC 3758) through `sctp_sendv` with `SCTP_PR_SCTP_RTX` or `SCTP_PR_SCTP_TTL`.
///
/// Where the kernel has no SCTP (no `sctp` module, as on our CI machines and in most containers),
/// `connect` and `listen` throw `ConduitError.Code.unsupportedByTransport` saying so and pointing
/// to `sctp+udp://`. That path is tested on such machines; the socket path runs (the conformance
/// suite) in a qemu guest with Debian's kernel: `Scripts/kernel-sctp-vm.sh`.
///
/// Silent by default; given a `Logger` it logs listeners and associations, and why the kernel
/// refused them, at `debug` (metadata `conduit.transport` = `sctp`, `conduit.remote`).
public struct KernelSCTPTransport: Transport {
    /// `sctp`.
    public var schemes: [String] { ["sctp"] }

    /// How long `connect` waits for the association (INIT, COOKIE) before failing.
    public var connectTimeout: Duration

    /// Where the transport logs (by default nowhere).
    public var logger: Logger

    /// A transport whose `connect` waits up to `connectTimeout`, logging through `logger`.
    public init(connectTimeout: Duration = .seconds(10), logger: Logger = Logger(label: "conduit", factory: { _ in SwiftLogNoOpLogHandler() })) {
        self.connectTimeout = connectTimeout
        var logger = logger
        logger[metadataKey: "conduit.transport"] = "sctp"
        self.logger = logger
    }

    /// Nil when this machine's kernel opens SCTP sockets, else the error `connect` and `listen` throw.
    public static func unavailability() -> ConduitError? {
        switch KernelSCTPSocket.open(family: AF_INET) {
        case .success(let socket):
            socket.closeNow()
            return nil
        case .failure(let error):
            return error
        }
    }

    /// Connects a one-to-one SCTP socket to `url`'s host and port. Throws `unsupportedByTransport` where the kernel has no SCTP, `timedOut` after `connectTimeout`, `connectionFailed` if refused.
    public func connect(to url: TransportURL) async throws(ConduitError) -> any TransportLink {
        do throws(ConduitError) {
            let link = try await connectLink(to: url)
            logger.debug("sctp association connected", metadata: ["conduit.remote": "\(link.remoteDescription)"])
            return link
        } catch {
            logger.debug("sctp connect failed", metadata: ["conduit.url": "\(url)", "conduit.reason": "\(error)"])
            throw error
        }
    }

    /// Connects as ``connect(to:)`` does, waiting up to `timeout` (the runtime's one connect
    /// limit) instead of ``connectTimeout``.
    public func connect(to url: TransportURL, timeout: Duration) async throws(ConduitError) -> any TransportLink {
        var bounded = self
        bounded.connectTimeout = timeout
        return try await bounded.connect(to: url)
    }

    private func connectLink(to url: TransportURL) async throws(ConduitError) -> any TransportLink {
        if let error = Self.unavailability() { throw error }
        let (address, description) = try KernelSCTPSocket.resolve(url, forListening: false)
        let socket = try KernelSCTPSocket.open(family: address.family).get()
        do throws(ConduitError) {
            try socket.configure()
            try await socket.connect(to: address, timeout: connectTimeout, description: description)
            return try KernelSCTPLink(socket: socket, remoteDescription: description)
        } catch {
            socket.closeNow()
            throw error
        }
    }

    /// Listens on `url`'s host and port (port 0: an ephemeral one). Throws `unsupportedByTransport` where the kernel has no SCTP, `addressInUse` if the port is taken.
    public func listen(on url: TransportURL) async throws(ConduitError) -> any TransportListener {
        do throws(ConduitError) {
            let listener = try listenSocket(on: url)
            logger.debug("sctp listening", metadata: ["conduit.url": "\(listener.localURL)"])
            return listener
        } catch {
            logger.debug("sctp listen failed", metadata: ["conduit.url": "\(url)", "conduit.reason": "\(error)"])
            throw error
        }
    }

    private func listenSocket(on url: TransportURL) throws(ConduitError) -> any TransportListener {
        if let error = Self.unavailability() { throw error }
        let (address, _) = try KernelSCTPSocket.resolve(url, forListening: true)
        let socket = try KernelSCTPSocket.open(family: address.family).get()
        do throws(ConduitError) {
            try socket.configure()
            let port = try socket.bindAndListen(address)
            let bound = TransportURL(scheme: "sctp", host: url.host, port: port, path: url.path, query: url.query)
            return KernelSCTPListener(socket: socket, localURL: bound)
        } catch {
            socket.closeNow()
            throw error
        }
    }
}
#endif

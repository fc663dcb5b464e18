import ConduitCore
import ConduitARQ
import NIOCore

/// The options of a `udp://HOST:PORT?...` URL.
struct UDPOptions: Sendable {
    static let defaultMTU = 1_232
    /// `ConduitConfiguration`'s `connectTimeoutMs` default: one default for both.
    static let defaultConnectTimeoutMilliseconds = 10_000
    static let mtuRange = 256...65_507
    /// Every option a `udp://` URL takes: the transport's own, then the reliability engine's
    /// (which the runtime reads and takes out before the transport sees the URL).
    static let known = ["mtu", "connect-timeout-ms", "offload"] + UDPSRTPConfiguration.optionKeys
        + ReliableLink.Configuration.urlOptionKeys.sorted()

    /// UDP payload bytes per datagram (RTP header included).
    var mtu: Int
    var connectTimeoutMilliseconds: Int
    /// Segmentation and receive offload (UDP_SEGMENT, UDP_GRO) where the kernel has them.
    var offload: Offload

    enum Offload: String, Sendable {
        /// Receive offload always; segmentation offload to loopback peers only, where the route
        /// takes any segment size and the device checksums (elsewhere a segmented write the
        /// route or device cannot take fails, and SwiftNIO closes the socket on that error).
        case auto
        /// Both, to any peer: for paths known to take them.
        case on
        case off
    }
    /// SRTP protection, when the URL asks for it.
    var srtp: UDPSRTPConfiguration?

    init(_ url: TransportURL, listening: Bool) throws(ConduitError) {
        guard url.scheme == "udp" else {
            throw ConduitError(.invalidAddress, "\(url) is not a udp:// URL")
        }
        guard let port = url.port, url.path.isEmpty else {
            throw ConduitError(.invalidAddress, "a UDP address is udp://HOST:PORT, got \(url)")
        }
        guard listening || port != 0 else {
            throw ConduitError(.invalidAddress, "cannot connect to port 0 (\(url))")
        }
        if let unknown = url.query.keys.sorted().first(where: { !Self.known.contains($0) }) {
            throw ConduitError(.invalidConfiguration, "unknown udp option '\(unknown)' (known: \(Self.known.joined(separator: ", ")))")
        }
        mtu = try url.intOption("mtu", default: Self.defaultMTU, in: Self.mtuRange)
        connectTimeoutMilliseconds = try url.intOption("connect-timeout-ms", default: Self.defaultConnectTimeoutMilliseconds, in: 1...3_600_000)
        srtp = try UDPSRTPConfiguration(url: url)
        guard let offload = Offload(rawValue: url.query["offload"] ?? "auto") else {
            throw ConduitError(.invalidConfiguration, "offload is auto, on or off, got '\(url.query["offload"] ?? "")' in \(url)")
        }
        self.offload = offload
    }

    var connectTimeoutText: String {
        connectTimeoutMilliseconds % 1000 == 0 ? "\(connectTimeoutMilliseconds / 1000) s" : "\(connectTimeoutMilliseconds) ms"
    }

    /// The capabilities of a link that carries `mtu`-byte UDP payloads.
    static func capabilities(mtu: Int) -> TransportCapabilities {
        TransportCapabilities(
            isReliable: false,
            isOrdered: false,
            supportsPartialReliability: false,
            maxDatagramSize: mtu - RTPHeader.size,
            mtu: mtu - RTPHeader.size
        )
    }

    /// The socket address of `url`: an IP literal, else a name resolved by the system.
    static func resolve(_ url: TransportURL) throws(ConduitError) -> SocketAddress {
        let port = url.port ?? 0
        if let address = try? SocketAddress(ipAddress: url.host, port: port) { return address }
        do {
            return try SocketAddress.makeAddressResolvingHost(url.host, port: port)
        } catch {
            throw ConduitError(.invalidAddress, "cannot resolve '\(url.host)' in \(url): \(error)")
        }
    }
}

/// Where a transport's sockets use offload (see ``UDPOptions/Offload``).
struct UDPOffloadPolicy: Sendable {
    var mode: UDPOptions.Offload
    var kernelSupports = UDPSocket.kernelSupportsOffload

    /// Receive offload on the socket.
    var receives: Bool { kernelSupports && mode != .off }

    /// Segmentation offload for a link to `peer`.
    func segments(to peer: SocketAddress) -> Bool {
        kernelSupports && (mode == .on || (mode == .auto && UDPSocket.isLoopback(peer)))
    }
}

#if SCTP
public import ConduitCore

/// The options of an `sctp+udp://HOST:PORT?...` URL, as typed fields
/// (``SCTPTransport/Configuration``): ``init(_:listening:)`` is the one parse of the query;
/// ``init(sctpPort:connectTimeoutMilliseconds:streams:initAttempts:mtu:sendBufferBytes:receiveBufferBytes:interleaving:)``
/// makes one from values.
///
/// - `sctp-port`: the SCTP port of both ends (default 5000, as WebRTC uses, RFC 8841 section 5).
/// - `connect-timeout-ms`: how long `connect` retransmits its INIT before giving up. Overrides the
///   configuration's `connectTimeoutMs` under `ConduitRuntime`; the default is that value (10000).
/// - `streams`: SCTP streams offered each way (default 1024, 16...65535): at most half of them
///   carry channels this end opens at one time.
/// - `init-attempts`: INIT transmissions before usrsctp itself gives up (default 8).
/// - `mtu`: SCTP packet size, which is the UDP payload size (576...64000: above about 65000
///   usrsctp stalls large messages on our sockets). There is no path MTU discovery: packets are
///   this large. Default: 1232, the largest UDP payload every IPv6 path carries unfragmented
///   (RFC 8200 section 5: 1280 − 40 − 8; the `udp://` transport's default too; WebRTC's 1200
///   leaves room for DTLS, which we do not have), except when the URL's
///   host is a loopback address (127.0.0.0/8, ::1, `localhost`): then 1472, the UDP payload of a
///   1,500-byte IP packet, which is what usrsctp's own UDP encapsulation (and so `tsctp`) sends
///   by default. Loopback has no smaller hop, and 1472 still fits relays that read 2 KiB datagrams
///   (`conduit impair`). A large value (64000) cuts per-packet work many times over on loopback.
/// - `send-buffer`: usrsctp's send buffer in bytes (default and least 262144, the largest message,
///   up to 67108864: a message must fit whole, or it could never be sent): what may wait below
///   Conduit's session scheduler, where priorities no longer reorder it.
/// - `receive-buffer`: the receive buffer in bytes (default 262144, 16384...67108864), which is the
///   window the peer may fill ahead of our reader. SCTP has one window for every stream, so a
///   session whose reader lags fills it and every other session's messages arrive behind that
///   data: the smaller it is, the less one bulk session delays a small one (issue 17, ping under
///   load); the larger, the more a long fat path carries (at most this much per round trip).
/// - `interleaving`: `on` (default) offers I-DATA (RFC 8260), so a large message of one session
///   no longer holds back the others' messages until its last fragment is sent; it takes effect
///   when the peer supports it too (usrsctp does; pion does not, and then DATA is used).
public struct SCTPOptions: Sendable, Hashable {
    /// The URL scheme, `sctp+udp`.
    public static let scheme = "sctp+udp"
    static let known = ["sctp-port", "connect-timeout-ms", "streams", "init-attempts", "mtu", "send-buffer", "receive-buffer", "interleaving"]
    /// `send-buffer`'s and `receive-buffer`'s default: 256 KiB.
    public static let defaultBufferBytes = 256 << 10
    static let sendBufferRange = DataChannel.maxMessageSize...(64 << 20)
    static let receiveBufferRange = (16 << 10)...(64 << 20)

    /// The SCTP port of both ends (`sctp-port`).
    public var sctpPort: Int
    /// How long `connect` retransmits its INIT, in milliseconds (`connect-timeout-ms`).
    public var connectTimeoutMilliseconds: Int
    /// SCTP streams offered each way (`streams`).
    public var streams: Int
    /// INITs sent before usrsctp gives up (`init-attempts`).
    public var initAttempts: Int
    /// SCTP packet size in bytes, which is the UDP payload size (`mtu`).
    public var mtu: Int
    /// usrsctp's send buffer in bytes (`send-buffer`).
    public var sendBufferBytes: Int
    /// The receive buffer in bytes, the window the peer may fill (`receive-buffer`).
    public var receiveBufferBytes: Int
    /// Whether I-DATA (RFC 8260) is offered (`interleaving`).
    public var interleaving: Bool

    /// A configuration from values, each defaulting as its URL option does (`mtu` nil: the
    /// default for the host, see ``SCTPOptions``). Throws `invalidConfiguration` naming the
    /// option out of range.
    public init(
        sctpPort: Int = 5000, connectTimeoutMilliseconds: Int = 10_000, streams: Int = 1024, initAttempts: Int = 8, mtu: Int,
        sendBufferBytes: Int = SCTPOptions.defaultBufferBytes, receiveBufferBytes: Int = SCTPOptions.defaultBufferBytes, interleaving: Bool = true
    ) throws(ConduitError) {
        self.sctpPort = sctpPort
        self.connectTimeoutMilliseconds = connectTimeoutMilliseconds
        self.streams = streams
        self.initAttempts = initAttempts
        self.mtu = mtu
        self.sendBufferBytes = sendBufferBytes
        self.receiveBufferBytes = receiveBufferBytes
        self.interleaving = interleaving
        try validate()
    }

    /// Checks every field; throws `invalidConfiguration` naming the option that is out of range.
    public func validate() throws(ConduitError) {
        for (option, value, range) in [
            ("sctp-port", sctpPort, 1...65_535), ("connect-timeout-ms", connectTimeoutMilliseconds, 1...3_600_000),
            ("streams", streams, 16...65_535), ("init-attempts", initAttempts, 1...255), ("mtu", mtu, 576...64_000),
            ("send-buffer", sendBufferBytes, Self.sendBufferRange), ("receive-buffer", receiveBufferBytes, Self.receiveBufferRange),
        ] where !range.contains(value) {
            throw ConduitError(.invalidConfiguration, "option \(option)=\(value) must be in \(range)")
        }
    }

    /// Reads the options from `url`'s query; `listening` chooses the defaults of a listening end. Throws `invalidConfiguration` naming an unknown option or a value out of range.
    public init(_ url: TransportURL, listening: Bool) throws(ConduitError) {
        guard url.scheme == Self.scheme else {
            throw ConduitError(.invalidAddress, "\(url) is not an sctp+udp:// URL")
        }
        guard let port = url.port, url.path.isEmpty else {
            throw ConduitError(.invalidAddress, "an SCTP-over-UDP address is sctp+udp://HOST:PORT, got \(url)")
        }
        guard listening || port != 0 else {
            throw ConduitError(.invalidAddress, "cannot connect to port 0 (\(url))")
        }
        if let unknown = url.query.keys.sorted().first(where: { !Self.known.contains($0) }) {
            throw ConduitError(.invalidConfiguration, "unknown sctp+udp option '\(unknown)' (known: \(Self.known.joined(separator: ", ")))")
        }
        sctpPort = try url.intOption("sctp-port", default: 5000, in: 1...65_535)
        connectTimeoutMilliseconds = try url.intOption("connect-timeout-ms", default: 10_000, in: 1...3_600_000)
        streams = try url.intOption("streams", default: 1024, in: 16...65_535)
        initAttempts = try url.intOption("init-attempts", default: 8, in: 1...255)
        mtu = try url.intOption("mtu", default: Self.defaultMTU(host: url.host), in: 576...64_000)
        sendBufferBytes = try url.intOption("send-buffer", default: Self.defaultBufferBytes, in: Self.sendBufferRange)
        receiveBufferBytes = try url.intOption("receive-buffer", default: Self.defaultBufferBytes, in: Self.receiveBufferRange)
        switch url.query["interleaving"] ?? "on" {
        case "on": interleaving = true
        case "off": interleaving = false
        case let other: throw ConduitError(.invalidConfiguration, "option interleaving=\(other) in \(url) must be on or off")
        }
    }


    /// Packet size without `mtu=`: 1472 to a loopback host, 1232 to anything else (see above).
    /// usrsctp also works markedly less per byte from 1232 up: on loopback 1228 took ~1.4× the
    /// CPU per byte of 1232 for 16 and 64 KiB messages.
    static func defaultMTU(host: String) -> Int {
        isLoopback(host) ? 1_472 : 1_232
    }

    /// 127.0.0.0/8, ::1 (also spelled out in full) or `localhost`, as written in the URL.
    static func isLoopback(_ host: String) -> Bool {
        if host.lowercased() == "localhost" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        if octets.count == 4, octets[0] == "127", octets.allSatisfy({ UInt8($0) != nil }) { return true }
        guard host.contains(":") else { return false }
        let groups = host.split(separator: ":", omittingEmptySubsequences: true)
        return groups.last.flatMap { UInt16($0, radix: 16) } == 1 && groups.dropLast().allSatisfy { UInt16($0, radix: 16) == 0 }
            && (host.hasPrefix("::") || groups.count == 8)
    }

    /// The URL query that parses back into this configuration (every field spelled out).
    public var query: [String: String] {
        [
            "sctp-port": "\(sctpPort)", "connect-timeout-ms": "\(connectTimeoutMilliseconds)", "streams": "\(streams)",
            "init-attempts": "\(initAttempts)", "mtu": "\(mtu)", "send-buffer": "\(sendBufferBytes)",
            "receive-buffer": "\(receiveBufferBytes)", "interleaving": interleaving ? "on" : "off",
        ]
    }

    var limits: SCTPLimits {
        SCTPLimits(
            streams: UInt16(streams), initAttempts: UInt16(initAttempts), localPort: UInt16(sctpPort), remotePort: UInt16(sctpPort),
            mtu: UInt32(mtu), sendBufferBytes: UInt32(sendBufferBytes), receiveBufferBytes: UInt32(receiveBufferBytes), interleaving: interleaving
        )
    }

    var connectTimeoutText: String {
        connectTimeoutMilliseconds % 1000 == 0 ? "\(connectTimeoutMilliseconds / 1000) s" : "\(connectTimeoutMilliseconds) ms"
    }
}
extension SCTPTransport {
    /// The typed configuration of an `sctp+udp://` link: its URL options as fields.
    public typealias Configuration = SCTPOptions
}
#endif

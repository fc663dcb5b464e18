public import ConduitCore
import ConduitARQ
import NIOCore

extension UDPTransport {
    /// How a ``UDPTransport`` sets up its links: every option of a `udp://` URL as a typed,
    /// documented field with its default.
    ///
    /// A transport holds one (``UDPTransport/configuration``) as the defaults of every link it
    /// makes; a URL's query overrides the fields it names (``init(url:defaults:)`` is the one
    /// parse of a `udp://` query). Key material is a value here (``SRTP/Keys/value(_:)``): the
    /// transport never reads a file or the environment. ``validate()`` checks the fields, with
    /// the same `invalidConfiguration` errors, naming the option, as the URL parse.
    public struct Configuration: Sendable, Hashable {
        /// The default ``mtu``: 1,232 bytes, so 1,200-byte payloads as on most paths.
        public static let defaultMTU = 1_232
        /// The range ``mtu`` takes: the smallest useful datagram to the largest UDP payload.
        public static let mtuRange = 256...65_507
        /// The connect limit when neither the URL, the configuration nor the runtime gives one:
        /// the same 10 s as `ConduitConfiguration`'s `connectTimeoutMs`.
        public static let defaultConnectTimeout: Duration = .seconds(10)
        /// The range ``connectTimeout`` takes (`connect-timeout-ms` 1...3,600,000).
        public static let connectTimeoutRange: ClosedRange<Duration> = .milliseconds(1) ... .seconds(3_600)

        /// UDP payload bytes per datagram, RTP header included (`mtu`, default 1,232,
        /// 256...65,507). The link's datagrams are 12 bytes less; the two ends agree on the smaller.
        public var mtu: Int
        /// How long `connect` retries the handshake (`connect-timeout-ms`). Nil: the limit the
        /// caller gives (`ConduitRuntime`'s `connectTimeout`), else ``defaultConnectTimeout``.
        /// Given, it overrides the runtime's for this transport's links.
        public var connectTimeout: Duration?
        /// Segmentation and receive offload (`offload`, default ``Offload/auto``).
        public var offload: Offload
        /// SRTP protection of every datagram (`srtp`, `srtp-key-file`, `srtp-key-env`), or nil
        /// for none. Needs the package trait `SRTP`.
        public var srtp: SRTP?
        /// What a listener lets remote addresses hold (links in all and per address, handshakes
        /// per second per address, links waiting to be accepted). Not a URL option.
        public var listenerLimits = ListenerLimits()
        /// Listeners bind with SO_REUSEPORT (Linux), so that several listeners, each its own
        /// socket read on its own event loop, may share one port: the kernel spreads the remote
        /// addresses over them by address and port, each address always to the same socket (a
        /// relay on several cores, `RelayShardGroup`). Default off: a second listener on a port in
        /// use fails with `addressInUse`. Not a URL option.
        public var reusePort = false

        /// A configuration; every field defaults as the URL option it stands for.
        public init(mtu: Int = Self.defaultMTU, connectTimeout: Duration? = nil, offload: Offload = .auto, srtp: SRTP? = nil) {
            self.mtu = mtu
            self.connectTimeout = connectTimeout
            self.offload = offload
            self.srtp = srtp
        }

        /// Where UDP segmentation offload (UDP_SEGMENT) and receive offload (UDP_GRO) are used,
        /// on kernels that have them.
        public enum Offload: String, Sendable, Hashable, CaseIterable {
            /// Receive offload always; segmentation offload to loopback peers only, where the route
            /// takes any segment size and the device checksums (elsewhere a segmented write the
            /// route or device cannot take fails, and SwiftNIO closes the socket on that error).
            case auto
            /// Both, to any peer: for paths known to take them.
            case on
            /// Neither.
            case off
        }

        /// SRTP on a link: a profile and its keys, exchanged out of band as with SDES (RFC 4568).
        public struct SRTP: Sendable, Hashable, CustomStringConvertible {
            /// The profile used when none is named: AES-CM-128 with HMAC-SHA1-80.
            public static let defaultProfile = "aes-cm-128-hmac-sha1-80"

            /// The profile's name (`srtp=`): `aes-cm-128-hmac-sha1-80`, `aes-cm-128-hmac-sha1-32`
            /// or `aead-aes-128-gcm`.
            public var profile: String
            /// The keys, or where the app's key reader finds them.
            public var keys: Keys

            /// SRTP with `keys` under `profile`.
            public init(profile: String = Self.defaultProfile, keys: Keys) {
                self.profile = profile
                self.keys = keys
            }

            /// The key text: one or two SDES inline keys (base64 of key‖salt) separated by white
            /// space. The first protects what the client sends, the second what the listener
            /// sends; one key alone serves both directions.
            public enum Keys: Sendable, Hashable {
                /// The key text itself, passed in by the app (which may have read it anywhere).
                case value(String)
                /// A reference the URL made (`srtp-key-file`, `srtp-key-env`), resolved by the
                /// transport's ``UDPTransport/KeyReader``; a transport without one refuses it.
                case reference(KeyReference)
            }

            /// The profile and where the keys come from, never the keys.
            public var description: String {
                switch keys {
                case .value: "SRTP(\(profile), keys: <redacted>)"
                case .reference(let reference): "SRTP(\(profile), keys: \(reference))"
                }
            }
        }

        /// The options a `udp://` URL takes: the transport's own, then the reliability engine's
        /// (which the runtime reads and takes out before the transport sees the URL).
        public static let optionNames = ["mtu", "connect-timeout-ms", "offload", "srtp", "srtp-key-file", "srtp-key-env"]
            + ARQEngine.Configuration.urlOptionKeys.sorted()

        /// Parses a `udp://HOST:PORT?...` URL's query: `defaults` with the fields the query names
        /// replaced. Throws `invalidConfiguration` naming the option for an unknown option or a
        /// bad value, and `invalidAddress` for a URL that is not `udp://HOST:PORT`.
        public init(url: TransportURL, defaults: Configuration = .init()) throws(ConduitError) {
            guard url.scheme == "udp" else {
                throw ConduitError(.invalidAddress, "\(url) is not a udp:// URL")
            }
            guard url.port != nil, url.path.isEmpty else {
                throw ConduitError(.invalidAddress, "a UDP address is udp://HOST:PORT, got \(url)")
            }
            if let unknown = url.query.keys.sorted().first(where: { !Self.optionNames.contains($0) }) {
                throw ConduitError(.invalidConfiguration, "unknown udp option '\(unknown)' (known: \(Self.optionNames.joined(separator: ", ")))")
            }
            self = defaults
            mtu = try url.intOption("mtu", default: defaults.mtu, in: Self.mtuRange)
            if url.query["connect-timeout-ms"] != nil {
                connectTimeout = .milliseconds(try url.intOption("connect-timeout-ms", default: 0, in: 1...3_600_000))
            }
            if let text = url.query["offload"] {
                guard let offload = Offload(rawValue: text) else {
                    throw ConduitError(.invalidConfiguration, "option offload=\(text) in \(url) must be auto, on or off")
                }
                self.offload = offload
            }
            srtp = try Self.parseSRTP(url, defaults: defaults.srtp)
            try validate()
        }

        private static func parseSRTP(_ url: TransportURL, defaults: SRTP?) throws(ConduitError) -> SRTP? {
            let profile = url.query["srtp"]
            let reference: KeyReference?
            switch (url.query["srtp-key-file"], url.query["srtp-key-env"]) {
            case (let path?, nil): reference = .file(path: path)
            case (nil, let variable?): reference = .environment(variable: variable)
            case (nil, nil): reference = nil
            case (_?, _?):
                throw ConduitError(.invalidConfiguration, "options srtp-key-file and srtp-key-env in \(url): give the SRTP keys once, not both")
            }
            guard profile != nil || reference != nil else { return defaults }
            guard let keys = reference.map(SRTP.Keys.reference) ?? defaults?.keys else {
                throw ConduitError(.invalidConfiguration, "option srtp=\(profile ?? "") in \(url) needs its keys: srtp-key-file=PATH or srtp-key-env=VARIABLE")
            }
            return SRTP(profile: profile ?? defaults?.profile ?? SRTP.defaultProfile, keys: keys)
        }

        /// Checks every field; throws `invalidConfiguration` naming the option that is out of range.
        public func validate() throws(ConduitError) {
            guard Self.mtuRange.contains(mtu) else {
                throw ConduitError(.invalidConfiguration, "option mtu=\(mtu) must be in \(Self.mtuRange)")
            }
            if let connectTimeout, !Self.connectTimeoutRange.contains(connectTimeout) {
                throw ConduitError(.invalidConfiguration, "option connect-timeout-ms=\(connectTimeout) must be in 1...3600000 ms")
            }
            try listenerLimits.validate()
        }

        /// The connect limit: this configuration's, else the caller's, else the default.
        func connectLimit(caller: Duration?) -> Duration { connectTimeout ?? caller ?? Self.defaultConnectTimeout }
    }

    /// Where a URL said an SRTP key is (`srtp-key-file=PATH`, `srtp-key-env=VARIABLE`).
    public enum KeyReference: Sendable, Hashable, CustomStringConvertible {
        /// A file holding the key text.
        case file(path: String)
        /// An environment variable holding the key text.
        case environment(variable: String)

        /// The URL option that made the reference, with its value.
        public var description: String {
            switch self {
            case .file(let path): "srtp-key-file=\(path)"
            case .environment(let variable): "srtp-key-env=\(variable)"
            }
        }
    }

    /// Resolves the key references a URL makes, on the app's behalf: the transport itself never
    /// reads a file or the environment. The command-line tool gives its transport one that reads
    /// both; an app that passes keys as values (``Configuration/SRTP/Keys/value(_:)``) needs none.
    public struct KeyReader: Sendable {
        private let read: @Sendable (KeyReference) throws(ConduitError) -> String

        /// A reader that returns the key text for a reference, or throws `invalidConfiguration` saying why not.
        public init(_ read: @escaping @Sendable (KeyReference) throws(ConduitError) -> String) {
            self.read = read
        }

        /// The key text `reference` points at.
        public func keyText(_ reference: KeyReference) throws(ConduitError) -> String { try read(reference) }
    }
}

/// What the socket code needs of the configuration: the MTU range, capabilities, addresses.
enum UDPOptions {
    static let mtuRange = UDPTransport.Configuration.mtuRange

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

}

/// Where a transport's sockets use offload (see ``UDPTransport/Configuration/Offload``).
struct UDPOffloadPolicy: Sendable {
    var mode: UDPTransport.Configuration.Offload
    var kernelSupports = UDPSocket.kernelSupportsOffload

    /// Receive offload on the socket.
    var receives: Bool { kernelSupports && mode != .off }

    /// Segmentation offload for a link to `peer`.
    func segments(to peer: SocketAddress) -> Bool {
        kernelSupports && (mode == .on || (mode == .auto && UDPSocket.isLoopback(peer)))
    }
}

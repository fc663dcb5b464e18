public import ConduitCore

import ConduitARQ
public import ConduitImpairment
extension LoopbackTransport {
    /// How a ``LoopbackTransport`` sets up its links: every option of a `loopback://` URL as a
    /// typed field with its default.
    ///
    /// A transport holds one (``LoopbackTransport/configuration``) as the defaults of every
    /// link; a URL's query overrides the fields it names (``init(url:defaults:)`` is the one
    /// parse of a `loopback://` query). ``validate()`` checks the fields with the same
    /// `invalidConfiguration` errors, naming the option, as the parse.
    public struct Configuration: Sendable, Hashable {
        /// The range ``mtu`` takes: one payload byte after the data frame header, to the largest datagram.
        public static let mtuRange = (DataFrameHeader.size + 1)...LoopbackTransport.maxDatagramSize
        /// The range ``window`` takes: 1 byte to 1 GiB.
        public static let windowRange = 1...(1 << 30)

        /// The datagram size the core fragments to (`mtu`, default 1,232: 1,200-byte payloads
        /// after the headers, as on a network). The two ends agree on the smaller.
        public var mtu: Int
        /// Bytes in flight per direction before `write` suspends (`window`, default 4 MiB): the
        /// backpressure a slow reader exerts on its peer. On an impaired link it is the emulated
        /// router queue instead: past it, datagrams are tail-dropped.
        public var window: Int
        /// User-space netem, seeded, per direction (`loss`, `dup`, `reorder`, `corrupt`,
        /// `delay-ms`, `jitter-ms`, `rate`, `seed`, `reorder-hold-ms`), or nil for a perfect link.
        /// Taken from the connecting side, else from the listening one. An impaired link declares
        /// itself unreliable and unordered, so the core supplies reliability over it.
        public var impairment: ImpairmentConfiguration?

        /// A configuration; every field defaults as the URL option it stands for.
        public init(mtu: Int = LoopbackTransport.defaultMTU, window: Int = LoopbackTransport.defaultWindow, impairment: ImpairmentConfiguration? = nil) {
            self.mtu = mtu
            self.window = window
            self.impairment = impairment
        }

        /// The options a `loopback://` URL takes: the transport's own, the impairment's, and the
        /// reliability engine's (an impaired loopback link runs under it).
        public static var optionNames: [String] {
            Set(["mtu", "window"]).union(ImpairmentConfiguration.optionNames).union(ARQEngine.Configuration.urlOptionKeys).sorted()
        }

        /// Parses a `loopback://NAME?...` URL's query: `defaults` with the fields the query names
        /// replaced. Throws `invalidConfiguration` naming the option for an unknown option or a
        /// bad value, and `invalidAddress` for a URL that is not `loopback://NAME`.
        public init(url: TransportURL, defaults: Configuration = .init()) throws(ConduitError) {
            guard url.port == nil, url.path.isEmpty else {
                throw ConduitError(.invalidAddress, "a loopback address is loopback://NAME, got \(url)")
            }
            let known = Self.optionNames
            if let unknown = url.query.keys.sorted().first(where: { !known.contains($0) }) {
                throw ConduitError(.invalidConfiguration, "unknown loopback option '\(unknown)' (known: \(known.joined(separator: ", ")))")
            }
            self = defaults
            let impairmentOptions = url.query.filter { ImpairmentConfiguration.optionNames.contains($0.key) }
            if !impairmentOptions.isEmpty { impairment = try ImpairmentConfiguration(options: impairmentOptions) }
            mtu = try url.intOption("mtu", default: defaults.mtu, in: Self.mtuRange)
            window = try url.intOption("window", default: defaults.window, in: Self.windowRange)
        }

        /// Checks every field; throws `invalidConfiguration` naming the option that is out of range.
        public func validate() throws(ConduitError) {
            guard Self.mtuRange.contains(mtu) else {
                throw ConduitError(.invalidConfiguration, "option mtu=\(mtu) must be in \(Self.mtuRange)")
            }
            guard Self.windowRange.contains(window) else {
                throw ConduitError(.invalidConfiguration, "option window=\(window) must be in \(Self.windowRange)")
            }
        }
    }
}

/// What a transport provides natively. The core supplies the rest: fragmentation always, and
/// (from the reliability engine) retransmission and ordering where a transport lacks them.
public struct TransportCapabilities: Sendable, Hashable {
    /// Every datagram written arrives (no loss).
    public var isReliable: Bool
    /// Datagrams arrive in the order written.
    public var isOrdered: Bool
    /// The transport can give up on a message by retransmission count or lifetime itself.
    public var supportsPartialReliability: Bool
    /// Largest datagram `write` accepts.
    public var maxDatagramSize: Int
    /// The datagram size the core fragments to (at most `maxDatagramSize`).
    public var mtu: Int

    /// Makes capabilities. `mtu` must not exceed `maxDatagramSize`.
    public init(isReliable: Bool, isOrdered: Bool, supportsPartialReliability: Bool, maxDatagramSize: Int, mtu: Int) {
        self.isReliable = isReliable
        self.isOrdered = isOrdered
        self.supportsPartialReliability = supportsPartialReliability
        self.maxDatagramSize = maxDatagramSize
        self.mtu = mtu
    }

    /// Payload bytes per data frame on this transport.
    public var fragmentSize: Int { mtu - DataFrameHeader.size }
}

/// One established, bidirectional datagram link between two endpoints.
///
/// `write` suspends while the link is full (backpressure); `read` suspends until datagrams
/// arrive and returns nil once the link is closed. One task reads; writers are serialised by the
/// caller. Implementations must survive `close` racing with reads and writes.
///
/// `read` and `write` run on the caller's executor (`nonisolated(nonsending)`): a driver that
/// runs on the link's ``preferredExecutor`` reaches it without a thread hop per batch.
public protocol TransportLink: AnyObject, Sendable {
    /// What the link provides natively; the runtime adds the reliability engine where it lacks reliability or ordering.
    var capabilities: TransportCapabilities { get }
    /// A description of the remote end, for logs and reports.
    var remoteDescription: String { get }
    /// Writes a batch of datagrams. Suspends while the link is full (backpressure); throws `connectionClosed` once the link is closed, `protocolViolation` for a datagram over `maxDatagramSize`.
    nonisolated(nonsending) func write(_ batch: DatagramBatch) async throws(ConduitError)
    /// The next batch of datagrams from the peer; suspends until one arrives. Nil once the link is closed and everything received was read.
    nonisolated(nonsending) func read() async throws(ConduitError) -> DatagramBatch?
    /// Closes the link; the peer's `read` returns nil. Safe to call twice and while reads and writes are in flight.
    func close() async
    /// The serial executor this link does its I/O on (a SwiftNIO event loop, say), or nil. The
    /// actors driving the link (reliability, the call) run on it when it is there, so a batch
    /// goes from socket to engine and back without crossing threads.
    var preferredExecutor: (any SerialExecutor)? { get }
    /// Waits until the peer has acknowledged every frame written so far on `channel` (on every
    /// channel when nil), the link ends, or `timeout` passes, and says what is still not
    /// acknowledged then. Frames written after the call do not count.
    func waitForAcknowledgement(channel: UInt32?, timeout: Duration) async -> LinkAcknowledgement
    /// What the link measures of its path and traffic now (RTT, window, losses), or nil if it
    /// measures nothing (an in-process link).
    func linkStatistics() async -> LinkStatistics?
    /// The largest frame that goes whole in one packet on the link's path now: what the call
    /// cuts fragments to. `capabilities.mtu` unless the link finds its path's MTU (the reliable
    /// link over UDP does: it grows with the path search and falls back with it). Read from any
    /// thread.
    var currentMTU: Int { get }
}

extension TransportLink {
    public var preferredExecutor: (any SerialExecutor)? { nil }

    /// For links whose `write` returns once the peer holds the frames (an in-process link): every
    /// frame written is acknowledged. A link that buffers frames the peer may never get (a
    /// network transport) must implement the wait.
    public func waitForAcknowledgement(channel: UInt32?, timeout: Duration) async -> LinkAcknowledgement { .complete }

    /// Nothing measured: an in-process link has no path to measure.
    public func linkStatistics() async -> LinkStatistics? { nil }

    /// A link whose packet size does not change: its `mtu`.
    public var currentMTU: Int { capabilities.mtu }
}

/// Accepts links on one address.
public protocol TransportListener: AnyObject, Sendable {
    /// The bound address (with the port filled in when 0 was asked for).
    var localURL: TransportURL { get }
    /// The next incoming link, or nil once the listener is closed.
    func accept() async throws(ConduitError) -> (any TransportLink)?
    /// Stops accepting: a pending `accept` returns nil. Links already accepted keep working.
    func close() async
}

/// A transport module: a factory of links for the URL schemes it serves.
public protocol Transport: Sendable {
    /// The URL schemes this transport answers, such as `loopback` or `udp`.
    var schemes: [String] { get }
    /// Connects to the listener at `url`. Throws `connectionFailed`, `timedOut`, `invalidConfiguration` or `unsupportedByTransport`.
    func connect(to url: TransportURL) async throws(ConduitError) -> any TransportLink
    /// Connects, giving up after `timeout` unless the URL says otherwise: a transport whose URLs
    /// take `connect-timeout-ms` uses that option when present (it overrides the configuration's
    /// `connectTimeoutMs`), else `timeout`. The default implementation ignores `timeout` (the
    /// runtime bounds every connect by it anyway).
    func connect(to url: TransportURL, timeout: Duration) async throws(ConduitError) -> any TransportLink
    /// Listens at `url`. Throws `addressInUse`, `invalidConfiguration` or `unsupportedByTransport`.
    func listen(on url: TransportURL) async throws(ConduitError) -> any TransportListener
}

extension Transport {
    public func connect(to url: TransportURL, timeout: Duration) async throws(ConduitError) -> any TransportLink {
        try await connect(to: url)
    }
}

/// Resolves configuration strings to transports. A value, built by the host app: start from an
/// empty registry or a module's `.defaults`, then `register` more. There is no global registry.
public struct TransportRegistry: Sendable {
    private var transports: [String: any Transport] = [:]

    /// An empty registry: no scheme resolves.
    public init() {}

    /// A registry holding `transports`, each under every scheme it names; a later one replaces an earlier one with the same scheme.
    public init(_ transports: [any Transport]) {
        for transport in transports { register(transport) }
    }

    /// Adds a transport, replacing any earlier one for the same schemes.
    public mutating func register(_ transport: any Transport) {
        for scheme in transport.schemes { transports[scheme.lowercased()] = transport }
    }

    /// A copy with `transport` registered under its schemes (replacing any already there).
    public func registering(_ transport: any Transport) -> TransportRegistry {
        var copy = self
        copy.register(transport)
        return copy
    }

    /// The registered schemes, sorted.
    public var schemes: [String] { transports.keys.sorted() }

    /// The transport registered for `scheme` (case-insensitive), or nil.
    public func transport(for scheme: String) -> (any Transport)? { transports[scheme.lowercased()] }

    /// Parses `text` and finds its transport, or says which schemes are known.
    public func resolve(_ text: String) throws(ConduitError) -> (transport: any Transport, url: TransportURL) {
        try resolve(TransportURL(parsing: text))
    }

    /// Finds the transport of `url`, or says which schemes are known.
    public func resolve(_ url: TransportURL) throws(ConduitError) -> (transport: any Transport, url: TransportURL) {
        guard let transport = transports[url.scheme] else {
            throw ConduitError(
                .unknownTransport,
                "no transport for '\(url.scheme)://' (registered: \(schemes.map { "\($0)://" }.joined(separator: ", ")))"
            )
        }
        return (transport, url)
    }
}

public import ConduitCore
import ConduitARQ
public import ConduitDriver
import ConduitReliableTransport
public import CoreMetrics
public import Logging

/// The entry point a host app embeds: a configuration and the transports it may use.
///
/// ```swift
/// let runtime = ConduitRuntime()                        // loopback, 2 Mbit/s per session
/// let listener = try await runtime.listen(as: "bob")    // on configuration.transport
/// let alice = try await runtime.connect(as: "alice")
/// ```
///
/// A value: copy it, change its configuration, register more transports. Listeners and the calls
/// that connect to them must use one registry (on loopback, its hub is where names are bound).
///
/// Silent by default: give it a `Logger` and a `MetricsFactory` (``observability``) to see call,
/// session and link lifecycle logs and the counters listed in ``ConduitObservability``.
public struct ConduitRuntime: Sendable {
    /// Session sizes, rates, queue limits and the default transport.
    public var configuration: ConduitConfiguration
    /// The transports the runtime may resolve URLs to.
    public var registry: TransportRegistry
    /// Where calls and conferences started from this runtime log and count
    /// (default: ``ConduitObservability/disabled``, nothing at all).
    public var observability: ConduitObservability
    /// The clock calls and conferences started from this runtime run on (nil: the system's
    /// monotonic clock). A test gives a `VirtualClock` (`ConduitTesting`) to run them on virtual time.
    public var clock: (any ConduitClock)?

    /// A runtime with `configuration` and `registry`, silent (no logs, no metrics).
    public init(configuration: ConduitConfiguration = .init(), registry: TransportRegistry = .defaults) {
        self.configuration = configuration
        self.registry = registry
        self.observability = .disabled
    }

    /// A runtime that logs through `logger` and counts through `metricsFactory` (by default the
    /// no-op factory). The library never bootstraps `LoggingSystem` or `MetricsSystem`.
    public init(
        configuration: ConduitConfiguration = .init(),
        registry: TransportRegistry = .defaults,
        logger: Logger,
        metricsFactory: any MetricsFactory = NOOPMetricsHandler.instance
    ) {
        self.configuration = configuration
        self.registry = registry
        self.observability = ConduitObservability(logger: logger, metricsFactory: metricsFactory)
    }

    /// Connects to the peer listening at `url` (default: `configuration.transport`) and returns the
    /// call once both sides have greeted each other, or throws `timedOut`.
    ///
    /// One limit bounds the connect and the greeting: the configuration's `connectTimeout`
    /// (`connectTimeoutMs`, 10 s by default), unless the URL has a `connect-timeout-ms` option,
    /// which overrides it for this call (`udp://` and `sctp+udp://` take that option).
    public func connect(to url: String? = nil, as peer: PeerID) async throws(ConduitError) -> Call {
        try configuration.validate()
        let (transport, resolved) = try registry.resolve(url ?? configuration.transport)
        return try await connect(transport, resolved, as: peer)
    }

    /// Connects to the peer listening at `url`, such as the ``CallListener/url`` a listener
    /// reports (`listener.url`), without going through its text. Otherwise as the `String` form.
    public func connect(to url: TransportURL, as peer: PeerID) async throws(ConduitError) -> Call {
        try configuration.validate()
        let (transport, resolved) = try registry.resolve(url)
        return try await connect(transport, resolved, as: peer)
    }

    /// How long after the connect limit the runtime itself gives up on a transport's `connect`:
    /// only for transports that take no limit, so generous (a loaded machine runs a transport's
    /// own timer late, and its error says more than this one).
    static let connectBackstop: Duration = .seconds(2)

    private func connect(_ transport: any Transport, _ resolved: TransportURL, as peer: PeerID) async throws(ConduitError) -> Call {
        let reliability = try ARQEngine.Configuration(url: resolved)
        let timeout = try resolved.connectTimeout(default: configuration.connectTimeout)
        // One limit on the runtime's clock (a test's VirtualClock too): what the connect took
        // of it, the greeting does not get.
        let limitClock: any ConduitClock = clock ?? SystemMonotonicClock()
        let deadline = limitClock.now() + timeout
        // The transport is given the limit (its own error says what went unanswered); this bound,
        // a moment later, is the backstop for transports that take no limit.
        let raw = try await withTimeout(timeout + Self.connectBackstop, what: "connecting to \(resolved)") { () throws(ConduitError) in
            try await transport.connect(to: resolved.withoutReliableTransportOptions, timeout: timeout)
        }
        // A link that loses or reorders datagrams gets the core's reliability engine under the call.
        let link = await ReliableTransportLink.wrapIfNeeded(
            raw, configuration: reliability, logger: observability.logger, metricsFactory: observability.metricsFactory, transport: resolved.scheme,
            clock: clock
        )
        let engine = CallEngine(localPeer: peer, link: link, configuration: configuration, observability: observability, transport: resolved.scheme, clock: clock)
        // The greeting gets what the connect left of the one limit.
        return try await engine.establish(timeout: max(deadline - limitClock.now(), .zero), limit: timeout)
    }

    /// Listens at `url` (default: `configuration.transport`) for calls answered as `peer`.
    public func listen(on url: String? = nil, as peer: PeerID) async throws(ConduitError) -> CallListener {
        try configuration.validate()
        let (transport, resolved) = try registry.resolve(url ?? configuration.transport)
        let reliability = try ARQEngine.Configuration(url: resolved)
        let listener = try await transport.listen(on: resolved.withoutReliableTransportOptions)
        var logger = observability.logger
        logger[metadataKey: ConduitObservability.MetadataKey.localPeer] = "\(peer)"
        logger[metadataKey: ConduitObservability.MetadataKey.transport] = "\(resolved.scheme)"
        logger.info("listening", metadata: ["conduit.url": "\(listener.localURL)"])
        return CallListener(listener: listener, peer: peer, configuration: configuration, reliability: reliability, observability: observability, clock: clock)
    }
}

/// Accepts calls on one transport address.
///
/// Handshakes run side by side (at most ``maxConcurrentHandshakes``), each within the
/// configuration's `connectTimeout`, which nothing the link sends extends: links that connect and
/// never greet hold up no caller that does, and are dropped at their deadline.
public final class CallListener: Sendable {
    /// Handshakes in progress at once; the transport's own backlog holds the links beyond them.
    public static let maxConcurrentHandshakes = 256

    private let listener: any TransportListener
    /// Calls whose handshake completed, waiting for ``accept()``; last, why the transport stopped
    /// accepting if it failed.
    private let established = AsyncBoundedChannel<Result<Call, ConduitError>>(capacity: 16)

    init(
        listener: any TransportListener, peer: PeerID, configuration: ConduitConfiguration, reliability: ARQEngine.Configuration, observability: ConduitObservability,
        clock: (any ConduitClock)?
    ) {
        self.listener = listener
        let established = self.established
        Task {
            await withTaskGroup(of: Void.self) { group in
                var inFlight = 0
                while true {
                    let raw: (any TransportLink)?
                    do throws(ConduitError) { raw = try await listener.accept() } catch {
                        await group.waitForAll()
                        _ = await established.send(.failure(error))
                        break
                    }
                    guard let raw else { break }
                    if inFlight >= Self.maxConcurrentHandshakes {
                        await group.next()
                        inFlight -= 1
                    }
                    inFlight += 1
                    group.addTask {
                        let link = await ReliableTransportLink.wrapIfNeeded(
                            raw, configuration: reliability, logger: observability.logger, metricsFactory: observability.metricsFactory,
                            transport: listener.localURL.scheme, clock: clock
                        )
                        let engine = CallEngine(localPeer: peer, link: link, configuration: configuration, observability: observability, transport: listener.localURL.scheme, clock: clock)
                        // A link whose handshake fails or times out is dropped (the engine closes it).
                        guard let call = try? await engine.establish(timeout: configuration.connectTimeout) else { return }
                        if await !established.send(.success(call)) { await call.hangUp() }
                    }
                }
                await group.waitForAll()
            }
            established.finish()
        }
    }

    /// The address callers reach this listener at.
    public var url: TransportURL { listener.localURL }

    /// The next call whose handshake completed, or nil once the listener is closed. Links whose
    /// handshake fails or times out are dropped; they never delay a call that completes.
    public func accept() async throws(ConduitError) -> Call? {
        try await established.next()?.get()
    }

    /// Stops accepting: ``accept()`` returns nil from then on; calls established but not yet
    /// accepted are hung up.
    public func close() async {
        await Self.close(listener, established)
    }

    /// A listener dropped without ``close()`` closes itself: otherwise its accept loop waits on
    /// the transport forever, keeping the transport's listener (its name or port) and its task.
    deinit {
        Task { [listener, established] in await Self.close(listener, established) }
    }

    private static func close(_ listener: any TransportListener, _ established: AsyncBoundedChannel<Result<Call, ConduitError>>) async {
        await listener.close()
        for case .success(let call) in established.finishAndDiscard() { await call.hangUp() }
    }
}

/// Runs `body`, failing with `timedOut` if it takes longer than `limit`.
func withTimeout<T: Sendable>(_ limit: Duration, what: String, _ body: @escaping @Sendable () async throws(ConduitError) -> T) async throws(ConduitError) -> T {
    let result = await withTaskGroup(of: Result<T, ConduitError>?.self) { group in
        group.addTask {
            do throws(ConduitError) { return .success(try await body()) } catch { return .failure(error) }
        }
        group.addTask {
            try? await Task.sleep(for: limit)
            return Task.isCancelled ? nil : .failure(ConduitError(.timedOut, "\(what) took longer than \(limit)"))
        }
        defer { group.cancelAll() }
        while let next = await group.next() {
            if let next { return next }
        }
        return .failure(ConduitError(.timedOut, "\(what) was cancelled"))
    }
    return try result.get()
}

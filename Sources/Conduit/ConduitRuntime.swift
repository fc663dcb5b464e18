public import ConduitCore
import ConduitReliability

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
public struct ConduitRuntime: Sendable {
    /// What calls and rooms made from this runtime use: transport URL, rate cap, queue and buffer caps, timeouts.
    public var configuration: ConduitConfiguration
    /// The transports this runtime can resolve URLs with; `TransportRegistry.defaults` holds loopback.
    public var registry: TransportRegistry

    /// Makes a runtime from a configuration and the registry of transports its URLs resolve through. Opens nothing.
    public init(configuration: ConduitConfiguration = .init(), registry: TransportRegistry = .defaults) {
        self.configuration = configuration
        self.registry = registry
    }

    /// Connects to the peer listening at `url` (default: `configuration.transport`) and returns the
    /// call once both sides have greeted each other, or throws within `connectTimeout`.
    public func connect(to url: String? = nil, as peer: PeerID) async throws(ConduitError) -> Call {
        try configuration.validate()
        let (transport, resolved) = try registry.resolve(url ?? configuration.transport)
        let reliability = try ReliableLink.Configuration(url: resolved)
        let raw = try await withTimeout(configuration.connectTimeout, what: "connecting to \(resolved)") { () throws(ConduitError) in
            try await transport.connect(to: resolved.withoutReliableLinkOptions)
        }
        // A link that loses or reorders datagrams gets the core's reliability engine under the call.
        let link = await ReliableTransportLink.wrapIfNeeded(raw, configuration: reliability)
        let engine = CallEngine(localPeer: peer, link: link, configuration: configuration)
        return try await engine.establish(timeout: configuration.connectTimeout)
    }

    /// Listens at `url` (default: `configuration.transport`) for calls answered as `peer`.
    public func listen(on url: String? = nil, as peer: PeerID) async throws(ConduitError) -> CallListener {
        try configuration.validate()
        let (transport, resolved) = try registry.resolve(url ?? configuration.transport)
        let reliability = try ReliableLink.Configuration(url: resolved)
        let listener = try await transport.listen(on: resolved.withoutReliableLinkOptions)
        return CallListener(listener: listener, peer: peer, configuration: configuration, reliability: reliability)
    }
}

/// Accepts calls on one transport address.
public final class CallListener: Sendable {
    private let listener: any TransportListener
    private let peer: PeerID
    private let configuration: ConduitConfiguration
    private let reliability: ReliableLink.Configuration

    init(listener: any TransportListener, peer: PeerID, configuration: ConduitConfiguration, reliability: ReliableLink.Configuration) {
        self.listener = listener
        self.peer = peer
        self.configuration = configuration
        self.reliability = reliability
    }

    /// The address callers reach this listener at.
    public var url: TransportURL { listener.localURL }

    /// The next call whose handshake completed, or nil once the listener is closed. A link whose
    /// handshake fails or times out is dropped and the next one is awaited.
    public func accept() async throws(ConduitError) -> Call? {
        while let raw = try await listener.accept() {
            let link = await ReliableTransportLink.wrapIfNeeded(raw, configuration: reliability)
            let engine = CallEngine(localPeer: peer, link: link, configuration: configuration)
            if let call = try? await engine.establish(timeout: configuration.connectTimeout) { return call }
        }
        return nil
    }

    /// Stops accepting calls: a pending ``accept()`` returns nil. Calls already accepted keep running.
    public func close() async { await listener.close() }
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

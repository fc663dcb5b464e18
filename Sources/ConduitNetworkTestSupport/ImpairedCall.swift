public import Conduit
public import ConduitCore
public import ConduitImpairment
public import ConduitUDP

/// A call over a network transport through the user-space impairment proxy (`conduit impair`),
/// set up the same way by every transport's lossy-call tests: bob listens on an ephemeral port of
/// 127.0.0.1, the proxy forwards to him, and alice calls the proxy.
///
///     let call = try await ImpairedCall.connect(
///         scheme: "udp", transport: UDPTransport(), configuration: configuration,
///         impairment: .harsh(seed: 41))
///     let received = try await call.transferReliably(on: 100, messages)
///     #expect(received.map(\.bytes) == messages)
///     await call.end()
public struct ImpairedCall: Sendable {
    public let listener: CallListener
    public let proxy: ImpairmentProxy
    /// Alice, who called through the proxy.
    public let caller: Call
    /// Bob, who accepted.
    public let callee: Call

    /// A step of the setup or the transfer that did not happen as it must.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// Listens on `SCHEME://127.0.0.1:0` followed by `listenQuery`, starts the proxy in front of
    /// it and calls `SCHEME://127.0.0.1:PROXY` followed by `connectQuery`; both calls log and
    /// count through `observability`.
    public static func connect(
        scheme: String,
        transport: any Transport,
        configuration: ConduitConfiguration,
        impairment: ImpairmentConfiguration,
        listenQuery: String = "",
        connectQuery: String = "",
        observability: ConduitObservability = .disabled
    ) async throws -> ImpairedCall {
        var runtime = ConduitRuntime(configuration: configuration, registry: TransportRegistry.defaults.registering(transport))
        runtime.observability = observability
        let listener = try await runtime.listen(on: "\(scheme)://127.0.0.1:0\(listenQuery)", as: "bob")
        let proxy = try await ImpairmentProxy.start(.init(
            listen: UDPEndpoint(host: "127.0.0.1", port: 0),
            upstream: UDPEndpoint(host: "127.0.0.1", port: listener.url.port!),
            impairment: impairment
        ))
        async let accepted = listener.accept()
        let caller = try await runtime.connect(to: "\(scheme)://127.0.0.1:\(proxy.localAddress.port!)\(connectQuery)", as: "alice")
        guard let callee = try await accepted else { throw Failure("the listener ended without accepting the call") }
        return ImpairedCall(listener: listener, proxy: proxy, caller: caller, callee: callee)
    }

    /// The next data session alice announces to bob.
    public func nextIncomingSession() async -> (streamID: StreamID, type: SessionType)? {
        for await event in callee.events {
            if case .dataSessionIncoming(let streamID, _, let type) = event { return (streamID, type) }
        }
        return nil
    }

    /// Opens a reliable message session from alice to bob on `streamID`, sends `messages` with
    /// their index as timestamp and returns what bob receives, once he has as many as were sent.
    public func transferReliably(on streamID: StreamID, _ messages: [[UInt8]]) async throws -> [InboundDataSession.Message] {
        let outbound = try await caller.makeOutboundDataSession(streamID: streamID, type: .reliableMessage)
        let announced = await nextIncomingSession()
        guard announced?.streamID == streamID else {
            throw Failure("bob was told of \(announced.map { "session \($0.streamID)" } ?? "no session"), not \(streamID)")
        }
        let inbound = try await callee.makeInboundDataSession(streamID: streamID, expecting: .reliableMessage)
        let sender = Task {
            for (index, message) in messages.enumerated() { try await outbound.send(message, timestamp: UInt64(index)) }
        }
        var received: [InboundDataSession.Message] = []
        for await event in inbound.events {
            guard case .message(let message) = event else { continue }
            received.append(message)
            if received.count == messages.count { break }
        }
        try await sender.value
        return received
    }

    /// Hangs up both ends, closes the listener and stops the proxy.
    public func end() async {
        await caller.hangUp()
        await callee.hangUp()
        await listener.close()
        await proxy.stop()
    }
}

extension ImpairmentConfiguration {
    /// The lossy-call tests' path: 10 % loss, 5 % reordering and 1 % duplication, plus `corrupt`.
    public static func harsh(seed: UInt64, corrupt: Double = 0) -> ImpairmentConfiguration {
        var impairment = ImpairmentConfiguration()
        impairment.loss = 0.10
        impairment.reorder = 0.05
        impairment.duplicate = 0.01
        impairment.corrupt = corrupt
        impairment.seed = seed
        return impairment
    }
}

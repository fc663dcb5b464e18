import Conduit
import ConduitTesting
import ConduitCore
import Testing

/// Setting calls up: who is reached, what fails how, and the first call event on each side.
@Suite("Connecting")
struct ConnectionTests {
    @Test("connecting to a loopback name nobody listens at fails with connectionFailed")
    func nobodyListening() async throws {
        let runtime = ConduitRuntime(configuration: .testDefaults, registry: .defaults)
        let error = try await within("connect to nobody") {
            await conduitError { () throws(ConduitError) in _ = try await runtime.connect(to: "loopback://connection-nobody", as: "alice") }
        }
        #expect(error?.code == .connectionFailed)
    }

    @Test("a listener on another runtime's hub is not reachable")
    func hubsAreIsolated() async throws {
        let other = ConduitRuntime(configuration: .testDefaults, registry: .defaults)
        let listener = try await other.listen(on: "loopback://connection-isolated", as: "bob")
        let runtime = ConduitRuntime(configuration: .testDefaults, registry: .defaults)
        let error = try await within("connect across hubs") {
            await conduitError { () throws(ConduitError) in _ = try await runtime.connect(to: "loopback://connection-isolated", as: "alice") }
        }
        #expect(error?.code == .connectionFailed)
        await listener.close()
    }

    @Test("an unknown scheme fails with unknownTransport, a malformed URL with invalidAddress")
    func unknownScheme() async throws {
        let runtime = ConduitRuntime(configuration: .testDefaults, registry: .defaults)
        let unknown = try await within("connect to nope://") {
            await conduitError { () throws(ConduitError) in _ = try await runtime.connect(to: "nope://x", as: "alice") }
        }
        #expect(unknown?.code == .unknownTransport)
        let listenUnknown = try await within("listen on nope://") {
            await conduitError { () throws(ConduitError) in _ = try await runtime.listen(on: "nope://x", as: "bob") }
        }
        #expect(listenUnknown?.code == .unknownTransport)
        let malformed = try await within("connect to a malformed URL") {
            await conduitError { () throws(ConduitError) in _ = try await runtime.connect(to: "no-scheme-here", as: "alice") }
        }
        #expect(malformed?.code == .invalidAddress)
    }

    @Test("a peer that accepts the link but never says hello: connect throws timedOut")
    func handshakeTimesOut() async throws {
        var configuration = ConduitConfiguration.testDefaults
        configuration.connectTimeout = .milliseconds(300)
        // The handshake's limit runs on the runtime's clock: a virtual one, so the 300 ms pass
        // without waiting.
        let clock = VirtualClock()
        var runtime = ConduitRuntime(configuration: configuration, registry: .defaults)
        runtime.clock = clock
        // A raw transport listener on the runtime's own hub: it takes links and stays silent.
        let transport = try #require(runtime.registry.transport(for: "loopback"))
        let raw = try await transport.listen(on: TransportURL(parsing: "loopback://connection-silent"))
        let silentPeer = Task { () async throws -> (any TransportLink)? in try await raw.accept() }

        let startedAt = clock.now()
        let caller = runtime
        let error = try await clock.run(advancingBy: .milliseconds(50), limit: .seconds(5)) {
            await conduitError { () throws(ConduitError) in _ = try await caller.connect(to: "loopback://connection-silent", as: "alice") }
        }
        #expect(error?.code == .timedOut)
        // The error names the limit. Virtual time moves on while the loopback link is set up, so
        // on a loaded machine connecting the link takes a step or two of it, and the error says
        // how much (a ThreadSanitizer run in a fresh CI check: "100 ms of which connecting the
        // link took"); otherwise it names the limit alone.
        let message = error?.message ?? ""
        #expect(
            message == "the peer did not complete the handshake within 300 ms"
                || (message.hasPrefix("the peer did not complete the handshake within the connect limit of 300 ms, ")
                    && message.hasSuffix(" of which connecting the link took")),
            "\(message)")
        #expect(clock.now() - startedAt >= .milliseconds(300))

        let link = try await within("the raw listener to have taken the link") { try await silentPeer.value }
        #expect(link != nil)
        if let link {
            // The caller gave up and closed its end: the silent side reads end-of-link after the hello.
            let closed = try await within("the silent side to see the link close") { () -> Bool in
                while let batch = try await link.read() { _ = batch }
                return true
            }
            #expect(closed)
            await link.close()
        }
        await raw.close()
    }

    @Test("listening twice on one name fails with addressInUse; closing frees the name")
    func listenTwice() async throws {
        let runtime = ConduitRuntime(configuration: .testDefaults, registry: .defaults)
        let first = try await runtime.listen(on: "loopback://connection-twice", as: "bob")
        #expect(first.url.description == "loopback://connection-twice")
        let error = await conduitError { () throws(ConduitError) in _ = try await runtime.listen(on: "loopback://connection-twice", as: "carol") }
        #expect(error?.code == .addressInUse)
        await first.close()

        let again = try await runtime.listen(on: "loopback://connection-twice", as: "carol")
        async let accepted = again.accept()
        let call = try await within("connect after the name was freed") {
            try await runtime.connect(to: "loopback://connection-twice", as: "alice")
        }
        #expect(call.remotePeer == "carol")
        let callee = try await accepted
        #expect(callee?.remotePeer == "alice")
        try await within("hang up") { await call.hangUp() }
        await again.close()
    }

    @Test("connect uses configuration.transport when no URL is given")
    func configuredTransport() async throws {
        var configuration = ConduitConfiguration.testDefaults
        configuration.transport = "loopback://connection-configured"
        let runtime = ConduitRuntime(configuration: configuration, registry: .defaults)
        let listener = try await runtime.listen(as: "bob")
        #expect(listener.url.host == "connection-configured")
        async let accepted = listener.accept()
        let caller = try await within("connect") { try await runtime.connect(as: "alice") }
        let callee = try #require(try await accepted)
        let pair = CallPair(runtime: runtime, listener: listener, caller: caller, callee: callee)
        #expect(caller.remotePeer == "bob")
        try await pair.finish()
    }

    @Test("accept returns nil once the listener is closed")
    func acceptAfterClose() async throws {
        let runtime = ConduitRuntime(configuration: .testDefaults, registry: .defaults)
        let listener = try await runtime.listen(on: "loopback://connection-closed", as: "bob")
        let waiting = Task { () async throws -> Call? in try await listener.accept() }
        await listener.close()
        let call = try await within("accept to return after close") { try await waiting.value }
        #expect(call == nil)
        let error = try await within("connect to a closed listener") {
            await conduitError { () throws(ConduitError) in _ = try await runtime.connect(to: "loopback://connection-closed", as: "alice") }
        }
        #expect(error?.code == .connectionFailed)
    }

    @Test("the first call event on both sides is connected, with the peer and its data-session support")
    func connectedEvents() async throws {
        let pair = try await CallPair.connect("connection-events")
        #expect(pair.caller.localPeer == "alice")
        #expect(pair.caller.remotePeer == "bob")
        #expect(pair.callee.localPeer == "bob")
        #expect(pair.callee.remotePeer == "alice")
        #expect(pair.caller.isPeerDataSessionSupported)
        #expect(pair.callee.isPeerDataSessionSupported)
        #expect(try await next(pair.caller.events, "the caller's first event") == .connected(peer: "bob", isDataSessionSupported: true))
        #expect(try await next(pair.callee.events, "the callee's first event") == .connected(peer: "alice", isDataSessionSupported: true))
        #expect(await pair.caller.isEnded == false)
        try await pair.finish()
    }

    @Test("the connected event reports a peer without data-session support")
    func connectedWithoutDataSessions() async throws {
        var unsupported = ConduitConfiguration.testDefaults
        unsupported.dataSessionsSupported = false
        let pair = try await CallPair.connect("connection-events-unsupported", calleeConfiguration: unsupported)
        #expect(try await next(pair.caller.events, "the caller's first event") == .connected(peer: "bob", isDataSessionSupported: false))
        #expect(try await next(pair.callee.events, "the callee's first event") == .connected(peer: "alice", isDataSessionSupported: true))
        #expect(pair.caller.isPeerDataSessionSupported == false)
        #expect(pair.callee.isPeerDataSessionSupported == true)
        try await pair.finish()
    }

    @Test("connect and listen validate the configuration first")
    func invalidConfigurationIsRefused() async throws {
        var configuration = ConduitConfiguration.testDefaults
        configuration.queueDelayOn = .milliseconds(10)
        configuration.queueDelayOff = .milliseconds(20)
        var runtime = ConduitRuntime(configuration: configuration, registry: .defaults)
        // A virtual clock never advanced: the refusals below come from checking the configuration
        // (queueDelayOff exceeds queueDelayOn), never from a queue-delay timer.
        runtime.clock = VirtualClock()
        let listen = await conduitError { () throws(ConduitError) in _ = try await runtime.listen(on: "loopback://connection-invalid", as: "bob") }
        #expect(listen?.code == .invalidConfiguration)
        let connect = await conduitError { () throws(ConduitError) in _ = try await runtime.connect(to: "loopback://connection-invalid", as: "alice") }
        #expect(connect?.code == .invalidConfiguration)
    }
}

import Conduit
import ConduitARQ
import ConduitCore
import ConduitReliableTransport
@testable import ConduitUDP
import Testing

/// The UDP listener's per-address limits over 127.0.0.1: refusals are counted, and a link that
/// ends gives its address its slot back.
@Suite("UDP listener limits", .timeLimit(.minutes(1)))
struct UDPListenerLimitTests {
    static func listen(_ limits: UDPTransport.Configuration.ListenerLimits) async throws -> (UDPTransport, UDPListener) {
        var configuration = UDPTransport.Configuration()
        configuration.listenerLimits = limits
        let transport = UDPTransport(configuration: configuration)
        return (transport, try await transport.listenUDP(host: "127.0.0.1", port: 0))
    }

    @Test func oneAddressHoldsAtMostItsLinks() async throws {
        let (transport, listener) = try await Self.listen(.init(maxLinksPerAddress: 3))
        var links: [any TransportLink] = []
        for _ in 0..<3 { links.append(try await transport.connect(to: listener.localURL, timeout: .seconds(5))) }
        await #expect(throws: ConduitError.self) { try await transport.connect(to: listener.localURL, timeout: .milliseconds(400)) }
        #expect(await listener.statistics().refusedPerAddressLimit >= 1)
        #expect(await listener.statistics().linksEstablished == 3)
        // The listener's side of a link ends: the address may connect again.
        let accepted = await listener.acceptUDP()
        await accepted?.close()
        links.append(try await transport.connect(to: listener.localURL, timeout: .seconds(5)))
        #expect(await listener.statistics().linksEstablished == 4)
        for link in links { await link.close() }
        await listener.close()
    }

    @Test func handshakesPerSecondPerAddressAreCapped() async throws {
        // Five at once against one a second: the first gets in, the rest are refused and counted
        // (the burst is far shorter than the second a refill takes, however loaded the machine).
        let (transport, listener) = try await Self.listen(.init(handshakesPerSecondPerAddress: 1))
        let links = await withTaskGroup(of: (any TransportLink)?.self) { group in
            for _ in 0..<5 { group.addTask { try? await transport.connect(to: listener.localURL, timeout: .milliseconds(400)) } }
            return await group.reduce(into: [any TransportLink]()) { if let link = $1 { $0.append(link) } }
        }
        #expect(links.count < 5)
        #expect(await listener.statistics().refusedHandshakeRate >= 1)
        for link in links { await link.close() }
        await listener.close()
    }

    /// Issue 18: 64 links that connect, keep their link alive and never greet used to hold
    /// `conduit listen` (one handshake at a time, a full backlog behind it). Now a caller that
    /// greets is accepted while they wait out their deadline.
    @Test func linksThatNeverGreetDoNotBlockACaller() async throws {
        let transport = UDPTransport()
        let runtime = ConduitRuntime(registry: TransportRegistry.defaults.registering(transport))
        let listener = try await runtime.listen(on: "udp://127.0.0.1:0", as: "bob")
        var silent: [any TransportLink] = []
        for _ in 0..<64 {
            let raw = try await transport.connect(to: listener.url, timeout: .seconds(5))
            silent.append(await ReliableTransportLink.wrapIfNeeded(raw, configuration: ARQEngine.Configuration()))
        }
        async let accepted = listener.accept()
        let call = try await runtime.connect(to: listener.url.description, as: "alice")
        let answered = try await accepted
        #expect(answered?.remotePeer == "alice")
        await call.hangUp()
        await answered?.hangUp()
        for link in silent { await link.close() }
        await listener.close()
        let afterClose = try await listener.accept()
        #expect(afterClose == nil)
    }

    @Test func limitsBelowOneAreRefusedByName() {
        var configuration = UDPTransport.Configuration()
        configuration.listenerLimits.maxLinksPerAddress = 0
        #expect(throws: ConduitError.self) { try configuration.validate() }
    }

    @Test func theLedgerCountsLinksAndPacesHandshakesPerAddress() {
        var ledger = UDPAddressLedger(limits: .init(maxLinksPerAddress: 2, handshakesPerSecondPerAddress: 3))
        let now = ConduitInstant(nanoseconds: 5_000_000_000)
        #expect(ledger.admit("10.0.0.1", now: now) == .admitted)
        #expect(ledger.admit("10.0.0.1", now: now) == .admitted)
        #expect(ledger.admit("10.0.0.1", now: now) == .tooManyLinks)
        #expect(ledger.admit("10.0.0.2", now: now) == .admitted)
        ledger.release("10.0.0.1")
        #expect(ledger.admit("10.0.0.1", now: now) == .admitted)
        ledger.release("10.0.0.1")
        // Three handshakes this second already.
        #expect(ledger.admit("10.0.0.1", now: now) == .tooManyHandshakes)
        #expect(ledger.admit("10.0.0.1", now: now + .milliseconds(334)) == .admitted)
    }
}

import ConduitCore
import ConduitLoopback
import Testing

/// What a loopback listener keeps alive when nobody closes it.
@Suite("Loopback listener lifetime")
struct LoopbackLifetimeTests {
    @Test("a listener never closed keeps neither itself nor its hub alive once the transport and it are dropped")
    func unclosedListenerIsFreed() async throws {
        weak var hub: LoopbackHub?
        weak var listener: LoopbackListener?
        do {
            let transport = LoopbackTransport()
            hub = transport.hub
            let bound = try await transport.listen(on: TransportURL(scheme: "loopback", host: "never-closed"))
            listener = bound as? LoopbackListener
            #expect(transport.hub.boundNames == ["never-closed"])
        }
        #expect(listener == nil)
        #expect(hub == nil)
    }

    @Test("closing a listener whose hub is gone does nothing more")
    func closeAfterHubIsGone() async throws {
        var transport: LoopbackTransport? = LoopbackTransport()
        let bound = try await transport?.listen(on: TransportURL(scheme: "loopback", host: "orphan"))
        weak let hub = transport?.hub
        transport = nil
        #expect(hub == nil)
        await bound?.close()
        #expect(try await bound?.accept() == nil)
    }
}

import Conduit
import ConduitCore
import ConduitLoopback
import Testing

/// A call listener nobody closes.
@Suite("Call listener lifetime", .timeLimit(.minutes(1)))
struct ListenerLifetimeTests {
    @Test("a call listener dropped without close stops listening: its name is unbound and connecting fails")
    func droppedListenerCloses() async throws {
        let hub = LoopbackHub()
        let runtime = ConduitRuntime(configuration: .testDefaults, registry: TransportRegistry([LoopbackTransport(hub: hub)]))
        do {
            let listener = try await runtime.listen(on: "loopback://dropped", as: "bob")
            #expect(hub.boundNames == ["dropped"])
            #expect(listener.url.host == "dropped")
        }
        // The listener's deinit closes it on a task of its own.
        try await within("the dropped listener to unbind its name") { await hub.waitUntilUnbound("dropped") }
        #expect(hub.boundNames.isEmpty)
        let error = await conduitError { () throws(ConduitError) in _ = try await runtime.connect(to: "loopback://dropped", as: "alice") }
        #expect(error?.code == .connectionFailed)
    }
}

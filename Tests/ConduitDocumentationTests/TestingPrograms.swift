import Conduit
import ConduitCore
import ConduitImpairment
import ConduitLoopback
import ConduitTesting
import Testing

// ConduitTesting's DocC programs, verbatim inside functions a test runs.

@Suite struct TestingProgramTests {
    /// A host app's call over an impaired loopback path, on a virtual clock.
    @Test func callOnVirtualTime() async throws {
        let announced = try await Self.callOnVirtualTime(configuration: ConduitConfiguration())
        #expect(announced)
    }

    static func callOnVirtualTime(configuration: ConduitConfiguration) async throws -> Bool {
        let clock = VirtualClock()
        let network = LoopbackTransport(hub: LoopbackHub(clock: clock))  // impaired links delay on it
        var runtime = ConduitRuntime(configuration: configuration, registry: TransportRegistry([network]))
        runtime.clock = clock
        let app = runtime
        let listener = try await app.listen(on: "loopback://app-test", as: "bob")
        // 5 % loss and 20 ms each way: the handshake needs time to move, so run it advancing the clock.
        let (caller, callee) = try await clock.run(advancingBy: .milliseconds(10), limit: .seconds(5)) {
            async let accepted = listener.accept()
            let caller = try await app.connect(to: "loopback://app-test?loss=0.05&delay-ms=20&seed=7", as: "alice")
            return (caller, try await accepted)
        }
        let session = try await caller.makeOutboundDataSession(streamID: 100, type: .reliableMessage)
        let events = EventRecorder(callee!.events)
        // True as soon as bob hears of the session, after at most 1 s of virtual time.
        let announced = await clock.advance(by: .milliseconds(10), until: { events.all.count >= 2 }, limit: .seconds(1))
        #expect(events.all.contains { if case .dataSessionIncoming(streamID: 100, _, .reliableMessage) = $0 { true } else { false } })
        #expect(await session.closeReason == nil)
        try await clock.run(advancingBy: .milliseconds(10), limit: .seconds(30)) {
            await caller.hangUp()
            await listener.close()
        }
        return announced
    }

    /// Two call machines over a seeded lossy path, stepped on virtual time.
    @Test func sansIOPair() {
        let pair = Self.sansIOPair()
        #expect(pair.a.isConnected && pair.b.isConnected)
        #expect(pair.aToB.statistics.submitted >= 1)
    }

    static func sansIOPair() -> SansIOPair<CallMachine, CallMachine> {
        var path = ImpairmentConfiguration()
        (path.loss, path.delay, path.seed) = (0.1, .milliseconds(20), 7)
        var pair = SansIOPair(a: CallMachine(localPeer: "alice"), b: CallMachine(localPeer: "bob"),
                              aToB: path, bToA: path)
        pair.run(until: { $0.a.isConnected && $0.b.isConnected }, limit: .seconds(5))
        return pair
    }
}

import Conduit
import ConduitCore
import ConduitRelay
import ConduitTesting
import Testing

/// The relay hands freed heap back after links end, the tail of a storm included: the join storm
/// of issue 18 left a `conduit relay` 32 MiB above its baseline when the last few hundred
/// refused links ended after the last trim (a trim then took it back to within 2 MiB).
@Suite("Relay heap trim after churn")
struct RelayHeapTrimTests {
    @Test("after refused links end the heap is trimmed a second later and twice more in the tail, however few they were, and not again without churn")
    func trimsAfterTheTailOfAStorm() async throws {
        let clock = VirtualClock()
        let room = try await LoopbackRoom.start(name: "relay-heap-trim", clock: clock)
        for peer: PeerID in ["a", "b", "c"] {
            await #expect(throws: ConduitError.self) {
                try await room.runtime.join(relay: room.url, room: "room", as: peer, token: "ct1.bad.token")
            }
        }
        #expect(await room.server.heapTrims == 0)  // not at once: a second after the first end
        let trimmed = await clock.advance(by: .milliseconds(100), until: { await room.server.heapTrims == 1 }, limit: .seconds(3))
        #expect(trimmed)
        // The tail: 4 and 10 s after the last trim that followed churn (the links' transports
        // finish closing after the relay let them go, and may end more links on the way).
        await clock.advance(by: .seconds(60))
        let afterTheTail = await room.server.heapTrims
        #expect(afterTheTail >= 3)
        await clock.advance(by: .seconds(60))
        #expect(await room.server.heapTrims == afterTheTail)
        await #expect(throws: ConduitError.self) {
            try await room.runtime.join(relay: room.url, room: "room", as: "d", token: "ct1.bad.token")
        }
        let again = await clock.advance(by: .milliseconds(100), until: { await room.server.heapTrims == afterTheTail + 1 }, limit: .seconds(3))
        #expect(again)
        await room.server.shutdown()
    }
}

import Conduit
import ConduitCore
import ConduitTesting
import Testing

/// Received data for one session waits only for that session's reader: a session whose app
/// stopped reading holds up no other session of the call (no head-of-line blocking between
/// sessions at the receiver), until what waits for it passes the engine's pause mark.
@Suite("Inbound sessions are independent")
struct InboundIndependenceTests {
    @Test("a session whose app does not read, 1.5× over its buffer: another session's message still arrives; the first then reads all of its own, in order")
    func oneStalledSessionHoldsUpNoOther() async throws {
        var configuration = ConduitConfiguration.testDefaults
        configuration.inboundBufferBytes = 65_536
        let clock = VirtualClock()
        let pair = try await CallPair.connect("inbound-independent", configuration: configuration, clock: clock)
        let (stalledOut, stalledIn) = try await pair.open(420, .reliableMessage)
        let (otherOut, otherIn) = try await pair.open(421, .reliableMessage)
        let other = EventRecorder(otherIn.events)

        // 96 KiB for a session whose app reads nothing: its 64 KiB buffer, and half as much again
        // waiting (under the engine's pause mark, one buffer's worth).
        var generator = SplitMix64(seed: 420)
        let sent = (0..<6).map { _ in generator.bytes(16 * 1_024) }
        for (index, message) in sent.enumerated() { try await stalledOut.send(message, timestamp: UInt64(index)) }
        for _ in 0..<40 { await clock.advance(by: .milliseconds(5)) }  // it all reaches the receiver

        // Before: the first overflowed delivery stopped the reader and queued every later one,
        // whatever its session, behind it.
        try await otherOut.send([1, 2, 3], timestamp: 99)
        let arrived = await clock.advance(by: .milliseconds(5), until: { !other.all.isEmpty }, limit: .seconds(2))
        #expect(arrived, "the other session's message waited for the stalled session's reader")
        #expect(other.all.first?.message?.bytes == [1, 2, 3])

        let received = try await readMessages(sent.count, from: stalledIn)
        #expect(received.map(\.timestamp) == (0..<UInt64(sent.count)).map { $0 })
        #expect(received.map(\.bytes) == sent)
        try await pair.finish()
    }
}

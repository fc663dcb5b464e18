import ConduitCore
import ConduitARQ
import ConduitImpairment
import Testing

/// `pollDeliveries` hands frames over as `pollDelivery` would one by one: the same frames in the
/// same order, the receive window freed, frames past their lifetime dropped, `maxFrames` kept.
@Suite("Reliable link: deliveries in batches")
struct ReliabilityDeliveryTests {
    /// A sends `frames` (channel, payload, lifetime) to B over a perfect path; B's deliveries are
    /// left queued. Returns B.
    static func receiver(of frames: [(channel: UInt32, bytes: [UInt8], delivery: ARQEngine.Delivery)], now: ConduitInstant) -> ARQEngine {
        var a = ARQEngine(now: now)
        var b = ARQEngine(now: now)
        for frame in frames { _ = a.send(frame.bytes, channel: frame.channel, delivery: frame.delivery, now: now) }
        // Both ways (B's acknowledgements open A's congestion window), without B's upper layer
        // reading: its deliveries stay queued.
        // Time steps 1 ms a round, so the pacer and the delayed-ACK timer let things go; the test
        // reads well after, or at `now`.
        var batch = DatagramBatch()
        var time = now
        for _ in 0..<1_000 {
            batch.removeAll()
            if a.pollTransmit(now: time, into: &batch) > 0 { b.handle(batch: batch, now: time) }
            batch.removeAll()
            if b.pollTransmit(now: time, into: &batch) > 0 { a.handle(batch: batch, now: time) }
            if a.isQuiescent { break }
            time = time + .milliseconds(1)
            if let due = a.nextDeadline(now: time), due <= time { a.handleTimeout(now: time) }
            if let due = b.nextDeadline(now: time), due <= time { b.handleTimeout(now: time) }
        }
        return b
    }

    @Test func aWholeBatchComesOutInOrderAndFreesTheWindow() {
        var random = SeededRandom(seed: 0xDE11)
        let frames = (0..<300).map { index in (channel: UInt32(index % 3), bytes: random.bytes(1 + random.below(900)), delivery: ARQEngine.Delivery.reliableOrdered) }
        var b = Self.receiver(of: frames, now: .zero)
        #expect(b.receiveBufferedBytes > 0)
        var batch = DatagramBatch()
        #expect(b.pollDeliveries(now: .zero, into: &batch, maxFrames: 1_000) == 300)
        #expect(batch.count == 300)
        #expect((0..<batch.count).map { batch[$0] } == frames.map(\.bytes), "order or bytes differ")
        #expect(b.receiveBufferedBytes == 0)
        #expect(b.statistics.framesDelivered == 300)
        #expect(b.pollDeliveries(now: .zero, into: &batch, maxFrames: 1_000) == 0)
    }

    @Test func maxFramesAndAFilledBatchFallBackToCopies() {
        let frames = (0..<10).map { (channel: UInt32(1), bytes: [UInt8(truncatingIfNeeded: $0)], delivery: ARQEngine.Delivery.reliableOrdered) }
        var b = Self.receiver(of: frames, now: .zero)
        var first = DatagramBatch()
        #expect(b.pollDeliveries(now: .zero, into: &first, maxFrames: 4) == 4)
        var rest = DatagramBatch()
        rest.append([0xFF])  // not empty: appended after what is there
        #expect(b.pollDeliveries(now: .zero, into: &rest, maxFrames: 100) == 6)
        let firstFrames: [[UInt8]] = (0..<first.count).map { first[$0] }
        let restFrames: [[UInt8]] = (0..<rest.count).map { rest[$0] }
        let expectedFirst: [[UInt8]] = (UInt8(0)..<4).map { [$0] }
        let expectedRest: [[UInt8]] = [[0xFF]] + (UInt8(4)..<10).map { [$0] }
        #expect(firstFrames == expectedFirst)
        #expect(restFrames == expectedRest)
        #expect(b.receiveBufferedBytes == 0)
    }

    @Test func framesPastTheirLifetimeAreDroppedNotDelivered() {
        let lived = ARQEngine.Delivery(ordered: true, limit: .maxPacketLifeTime(milliseconds: 50))
        let frames = [
            (channel: UInt32(1), bytes: [UInt8]([1]), delivery: ARQEngine.Delivery.reliableOrdered),
            (channel: UInt32(2), bytes: [UInt8]([2]), delivery: lived),
            (channel: UInt32(1), bytes: [UInt8]([3]), delivery: ARQEngine.Delivery.reliableOrdered),
        ]
        var b = Self.receiver(of: frames, now: .zero)
        var batch = DatagramBatch()
        // Read a second later: the frame with a 50 ms lifetime is gone, the others are not.
        #expect(b.pollDeliveries(now: .zero + .seconds(1), into: &batch, maxFrames: 10) == 2)
        #expect((0..<batch.count).map { batch[$0] } == [[1], [3]])
        #expect(b.statistics.framesExpiredAtReceiver == 1)
        #expect(b.receiveBufferedBytes == 0)
    }
}

import ConduitCore
import ConduitARQ
import Testing

/// `ARQEngine.send(datagram:of:)` keeps the caller's batch storage instead of copying each
/// frame, and packets are built in place in the output batch: what arrives must still be the bytes
/// that were sent, whatever the caller does with its batch afterwards.
@Suite("reliable link: frames shared with the caller's batch, packets built in place")
struct ReliabilitySendSharingTests {
    /// Runs A → B without loss on virtual time until B delivered `count` frames; returns them.
    static func deliver(_ count: Int, from a: inout ARQEngine, to b: inout ARQEngine, now: inout ConduitInstant) -> [[UInt8]] {
        var delivered: [[UInt8]] = []
        var rounds = 0
        while delivered.count < count, rounds < 10_000 {
            var aToB = DatagramBatch()
            a.pollTransmit(now: now, into: &aToB)
            if !aToB.isEmpty { b.handle(batch: aToB, now: now) }
            var received = DatagramBatch()
            _ = b.pollDeliveries(now: now, into: &received, maxFrames: .max)
            for index in 0..<received.count { delivered.append(received[index]) }
            var bToA = DatagramBatch()
            b.pollTransmit(now: now, into: &bToA)
            if !bToA.isEmpty { a.handle(batch: bToA, now: now) }
            now = now + .microseconds(100)
            if let deadline = a.nextDeadline(now: now), deadline <= now { a.handleTimeout(now: now) }
            if let deadline = b.nextDeadline(now: now), deadline <= now { b.handleTimeout(now: now) }
            rounds += 1
        }
        return delivered
    }

    static func frame(_ index: Int, size: Int) -> [UInt8] {
        (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index &* 7) }
    }

    @Test(arguments: [true, false])
    func framesArriveIntactAfterTheCallerReusesItsBatch(full: Bool) {
        var now = ConduitInstant(nanoseconds: 1_000_000_000)
        var configuration = ARQEngine.Configuration()
        configuration.keepaliveInterval = nil
        configuration.idleTimeout = nil
        var a = ARQEngine(configuration: configuration, now: now)
        var b = ARQEngine(configuration: configuration, now: now)
        // Full: the batch is mostly frames, which the engine keeps in place. Not full: a few
        // frames in a large reserved buffer, which the engine copies out instead.
        let frames = (0..<(full ? 40 : 3)).map { Self.frame($0, size: 1_000) }
        var batch = DatagramBatch(reservingBytes: full ? 0 : 1 << 20)
        for frame in frames { batch.append(frame) }
        for index in 0..<batch.count {
            guard case .queued = a.send(datagram: index, of: batch, channel: 7, now: now) else {
                Issue.record("frame \(index) was not queued")
                return
            }
        }
        // The caller reuses its batch for other bytes while the frames are still queued.
        batch.removeAll()
        for _ in frames { batch.append([UInt8](repeating: 0xEE, count: 1_000)) }

        let delivered = Self.deliver(frames.count, from: &a, to: &b, now: &now)
        #expect(delivered == frames)
    }

    @Test func aRefusedInPlaceDatagramLeavesTheBatchAsItWas() {
        var batch = DatagramBatch()
        batch.append([1, 2, 3])
        batch.appendInPlace { storage in
            storage.append(contentsOf: [9, 9])
            return false
        }
        #expect(batch.count == 1 && batch.byteCount == 3)
        batch.appendInPlace { storage in
            storage.append(contentsOf: [4, 5])
            return true
        }
        #expect(batch.count == 2 && batch[1] == [4, 5] && batch[0] == [1, 2, 3])
    }
}

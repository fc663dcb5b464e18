// The reliability engine per packet: two ARQEngine endpoints in one process, on virtual time,
// with no loss, exchanging full-size frames and the acknowledgements for them. This is the core
// of what the UDP transport does for every datagram, without sockets, actors or copies into NIO.
//
// One measured pass moves `framesPerPass` frames of 1,150 bytes (one frame per packet at the
// default 1,220-byte datagram size) from A to B:
//   A.send → A.pollTransmit → B.handle(batch:) → B.pollDeliveries → B.pollTransmit (ACKs)
//   → A.handle(batch:)
// with virtual time stepped 50 µs per round, so that the pacer and the delayed-ACK timer behave
// as they do on a fast link. Rows marked `*` are per frame (= per data packet).
//
// - "Engine_reliable_ordered_1150B": one reliable, ordered channel.
// - "Engine_unreliable_1150B": one unordered channel with maxRetransmits 0 (unreliable types).
// - "Engine_batch_send_1150B": as the first, but the frames are queued as ReliableTransportLink
//   queues them, from the caller's batch of 64 with `send(datagram:of:)`: the engine keeps slices
//   of the batch instead of a copy per frame (a batch per 64 frames, the caller's next one).
//
// Only mallocCountTotal is gated; `bytesPerSecond` (frame bytes delivered per second of CPU in the
// measured loop, both endpoints on one core) is reported.

import Benchmark
import ConduitCore
import ConduitARQ
import ConduitReliableTransport

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

let quick = getenv("CONDUIT_BENCHMARK_QUICK").map { String(cString: $0) == "1" } ?? false
let bytesPerSecond = BenchmarkMetric.custom("bytesPerSecond", polarity: .prefersLarger, useScalingFactor: false)
let framesPerPass = 1_000  // a BenchmarkScalingFactor case (1, 1_000, 1_000_000, ...)
let frameSize = 1_150
let step = Duration.microseconds(50)

/// Both endpoints, their batches and a frame to send, living across passes as a link's do.
final class EnginePair: @unchecked Sendable {
    var a: ARQEngine
    var b: ARQEngine
    var now = ConduitInstant(nanoseconds: 1_000_000_000)
    var aToB = DatagramBatch(reservingBytes: 64 * 1_232, datagrams: 64)
    var bToA = DatagramBatch(reservingBytes: 64 * 1_232, datagrams: 64)
    var received = DatagramBatch()
    let frame = [UInt8](repeating: 0xA5, count: frameSize)
    let delivery: ARQEngine.Delivery
    /// Queue from `pending` with `send(datagram:of:)` rather than the array with `send(_:)`.
    let fromBatch: Bool
    var pending = DatagramBatch()
    var pendingIndex = 0

    init(delivery: ARQEngine.Delivery, fromBatch: Bool = false) {
        self.delivery = delivery
        self.fromBatch = fromBatch
        var configuration = ARQEngine.Configuration()
        configuration.keepaliveInterval = nil
        configuration.idleTimeout = nil
        configuration.maxAckDelay = .milliseconds(5)
        // The checksum as the transports compute it (the CPU's CRC32 instruction); the core's
        // portable table code alone would be most of the time per frame.
        a = ARQEngine(configuration: configuration, now: now, crc32c: .hardware)
        b = ARQEngine(configuration: configuration, now: now, crc32c: .hardware)
        // Warm up outside the measured region: the congestion window opens, the tables and
        // batches reach their working sizes.
        _ = move(frames: 4 * framesPerPass)
    }

    /// Queues one frame on A: from the array, or the next of the caller's batch (refilled with up
    /// to 64 frames when used up, as a driver writes its next batch).
    func queueNext(remaining: Int) -> ARQEngine.SendResult {
        guard fromBatch else { return a.send(frame, channel: 100, delivery: delivery, now: now) }
        if pendingIndex == pending.count {
            pending.removeAll(keepingCapacity: true)
            for _ in 0..<min(64, remaining) { pending.append(frame) }
            pendingIndex = 0
        }
        let result = a.send(datagram: pendingIndex, of: pending, channel: 100, delivery: delivery, now: now)
        if case .queued = result { pendingIndex += 1 }
        return result
    }

    /// Sends `frames` frames A→B and runs both ends until B has delivered all of them.
    /// Returns the bytes delivered.
    func move(frames: Int) -> Int {
        var toQueue = frames
        var delivered = 0
        var rounds = 0
        while delivered < frames {
            while toQueue > 0, case .queued = queueNext(remaining: toQueue) { toQueue -= 1 }
            aToB.removeAll(keepingCapacity: true)
            _ = a.pollTransmit(now: now, into: &aToB)
            if !aToB.isEmpty { b.handle(batch: aToB, now: now) }
            // Every ready frame, handed over as one batch, into a batch the reader reuses (the
            // engine's caller-owned buffer; ReliableTransportLink hands a new one to the app per
            // read, so it adds two allocations per read, not per frame).
            received.removeAll(keepingCapacity: true)
            delivered += b.pollDeliveries(now: now, into: &received, maxFrames: .max)
            blackHole(received.byteCount)
            bToA.removeAll(keepingCapacity: true)
            _ = b.pollTransmit(now: now, into: &bToA)
            if !bToA.isEmpty { a.handle(batch: bToA, now: now) }
            now = now + step
            if let deadline = a.nextDeadline(now: now), deadline <= now { a.handleTimeout(now: now) }
            if let deadline = b.nextDeadline(now: now), deadline <= now { b.handleTimeout(now: now) }
            rounds += 1
            precondition(rounds < 100 * frames + 10_000, "the engine pair stopped making progress")
        }
        return delivered * frameSize
    }
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal, bytesPerSecond],
        timeUnits: .automatic,
        warmupIterations: quick ? 1 : 2,
        scalingFactor: BenchmarkScalingFactor(rawValue: framesPerPass)!,
        maxDuration: quick ? .milliseconds(100) : .milliseconds(2_000),
        maxIterations: quick ? 3 : 500,
        thresholds: [.mallocCountTotal: .strict, .wallClock: .none, .throughput: .none, bytesPerSecond: .none]
    )

    for (name, delivery, fromBatch) in [
        ("Engine_reliable_ordered_1150B", ARQEngine.Delivery.reliableOrdered, false),
        ("Engine_unreliable_1150B", Reliability(ordered: false, limit: .maxRetransmits(0)), false),
        ("Engine_batch_send_1150B", ARQEngine.Delivery.reliableOrdered, true),
    ] {
        Benchmark(name) { benchmark, pair in
            benchmark.startMeasurement()
            let start = ContinuousClock.now
            let bytes = pair.move(frames: benchmark.scaledIterations.count)
            let elapsed = start.duration(to: .now)
            benchmark.stopMeasurement()
            let nanoseconds = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
            if nanoseconds > 0 { benchmark.measurement(bytesPerSecond, Int(Double(bytes) * 1e9 / nanoseconds)) }
        } setup: {
            EnginePair(delivery: delivery, fromBatch: fromBatch)
        }
    }
}

import ConduitCore
import ConduitARQ
import ConduitImpairment
import Foundation
import Testing

// End-to-end behaviour of the reliable link on virtual time: exactly once, order, byte-identical
// content, under loss, reordering, duplication and a blackout. CONDUIT_SOAK=1 runs longer variants.

enum Soak {
    static let isEnabled = ProcessInfo.processInfo.environment["CONDUIT_SOAK"] == "1"
}

/// The impairment the brief asks for in each direction: 10% loss, 5% reordering, 1% duplication,
/// 20 ms delay with 5 ms jitter.
func harshImpairment(seed: UInt64) -> ImpairmentConfiguration {
    ARQEngineHarness.impairment(loss: 0.10, reorder: 0.05, duplicate: 0.01, delayMs: 20, jitterMs: 5, seed: seed)
}

@Suite("Reliable link: transfers")
struct ReliabilityTransferTests {
    /// 500 messages (10,000 with CONDUIT_SOAK=1) of 1 B ... 128 KiB (log-uniform), cut by the
    /// real Fragmenter into frames of `maxFramePayload` bytes, sent on one ordered reliable
    /// channel and rebuilt by the real Reassembler: every message exactly once, in order,
    /// byte-identical.
    @Test func reliableOrderedMessagesSurviveLossReorderingAndDuplication() throws {
        let configuration = ARQEngine.Configuration()
        var harness = ARQEngineHarness(a: configuration, aToB: harshImpairment(seed: 101), bToA: harshImpairment(seed: 202))
        var random = SeededRandom(seed: 7)
        // Synchronous and CPU-bound: 2,000 held one of the two cooperative threads for 10 s, and
        // the wall-clock connect limits of the suites beside it ran out.
        let count = Soak.isEnabled ? 10_000 : 500
        let messages: [[UInt8]] = (0..<count).map { _ in
            var size = 0
            while size == 0 { size = random.logUniformSize(max: 131_072) }
            return random.bytes(size)
        }
        let totalBytes = messages.reduce(0) { $0 + $1.count }
        let fragmentSize = configuration.maxFramePayload - DataFrameHeader.size

        // Every packet number A puts on the wire, to show none is ever reused.
        final class Numbers { var seen = Set<UInt64>(); var reused = 0 }
        let numbers = Numbers()
        harness.inspect = { fromA, datagram, _ in
            guard fromA, datagram.count >= 10 else { return }
            let number = datagram[2..<10].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            if !numbers.seen.insert(number).inserted { numbers.reused += 1 }
        }

        var nextMessage = 0
        var pending = DatagramBatch()
        var pendingIndex = 0
        var reassembler = Reassembler()
        var nextExpected = 0
        var wrong = 0
        var framesReceived = 0
        let finished = harness.run(for: .seconds(3_600)) { h in
            while h.a.queuedBytes < 256 * 1024 {
                if pendingIndex == pending.count {
                    guard nextMessage < count else { break }
                    pending.removeAll()
                    pendingIndex = 0
                    var fragmenter = Fragmenter(
                        streamID: 100, sessionType: .reliableMessage, messageID: UInt32(nextMessage),
                        totalLength: messages[nextMessage].count, fragmentSize: fragmentSize, timestamp: UInt64(nextMessage)
                    )
                    messages[nextMessage].withUnsafeBytes { fragmenter.emitAll(of: $0, into: &pending) }
                    nextMessage += 1
                }
                guard case .queued = h.a.send(pending[pendingIndex], channel: 1, delivery: .reliableOrdered, now: h.now) else { break }
                pendingIndex += 1
            }
            while let frame = h.b.pollDelivery(now: h.now) {
                framesReceived += 1
                let outcome: Reassembler.Outcome? = frame.bytes.withUnsafeBytes { raw in
                    guard let parsed = try? DataFrameHeader.parse(raw) else { return nil }
                    return reassembler.ingest(parsed.header, payload: UnsafeRawBufferPointer(rebasing: raw[parsed.payload]), now: h.now)
                }
                switch outcome {
                case .complete(let message)?:
                    if nextExpected < count, message.key.messageID == UInt32(nextExpected), message.bytes == messages[nextExpected] {
                        nextExpected += 1
                    } else {
                        wrong += 1
                    }
                case .incomplete?: break
                case .dropped?, nil: wrong += 1
                }
            }
            return nextExpected == count
        }
        let elapsed = harness.now.seconds
        #expect(finished)
        #expect(nextExpected == count)
        #expect(wrong == 0)

        // Late copies still in the network must not be delivered again.
        var lateB: [ARQEngine.ReceivedFrame] = []
        var lateA: [ARQEngine.ReceivedFrame] = []
        harness.settle(for: .seconds(3), deliveredToB: &lateB, deliveredToA: &lateA)
        #expect(lateB.isEmpty)
        #expect(lateA.isEmpty)

        let a = harness.a.statistics
        let b = harness.b.statistics
        #expect(numbers.reused == 0)
        #expect(numbers.seen.count == a.packetsSent)
        #expect(a.framesSent == framesReceived)
        #expect(b.framesDelivered == framesReceived)
        #expect(a.framesRetransmitted > 0)
        #expect(b.duplicateFramesSuppressed + b.duplicatePacketsSuppressed > 0)
        #expect(b.malformedPacketsDropped == 0)
        #expect(a.framesAbandoned == 0)
        print("""
            [reliability] ordered reliable: \(count) messages, \(totalBytes) bytes, \(framesReceived) frames in \
            \(String(format: "%.1f", elapsed)) s virtual; goodput \(String(format: "%.3f", Double(totalBytes) * 8 / elapsed / 1e6)) Mbit/s; \
            A sent \(a.packetsSent) packets (\(a.packetsRetransmitted) with retransmissions), \(a.framesRetransmitted) frames retransmitted, \
            \(a.packetsLost) packets declared lost, \(a.probeTimeouts) PTOs; B: \(b.duplicatePacketsSuppressed) duplicate packets, \
            \(b.duplicateFramesSuppressed) duplicate frames suppressed, \(b.acksSent) ACKs; srtt \(a.smoothedRtt), cwnd \(a.congestionWindow); \
            impairment A→B dropped \(harness.aToB.statistics.dropped), duplicated \(harness.aToB.statistics.duplicated), \
            reordered \(harness.aToB.statistics.reordered); \(harness.steps) harness steps
            """)
    }

    /// Unordered and reliable: every frame exactly once and intact, in whatever order it arrives.
    @Test func reliableUnorderedFramesArriveExactlyOnce() {
        var harness = ARQEngineHarness(aToB: harshImpairment(seed: 303), bToA: harshImpairment(seed: 404))
        var random = SeededRandom(seed: 9)
        let maxPayload = harness.a.configuration.maxFramePayload
        let frames: [[UInt8]] = (0..<3_000).map { _ in random.bytes(random.below(maxPayload + 1)) }
        var sent = 0
        var received: [UInt32: [UInt8]] = [:]
        var duplicates = 0
        var outOfOrder = 0
        var lastSequence: UInt32?
        let unordered = ARQEngine.Delivery(ordered: false, limit: .none)
        let finished = harness.run(for: .seconds(600)) { h in
            while sent < frames.count, case .queued = h.a.send(frames[sent], channel: 7, delivery: unordered, now: h.now) { sent += 1 }
            while let frame = h.b.pollDelivery(now: h.now) {
                if received.updateValue(frame.bytes, forKey: frame.sequence) != nil { duplicates += 1 }
                if let lastSequence, frame.sequence < lastSequence { outOfOrder += 1 }
                lastSequence = frame.sequence
            }
            return received.count == frames.count
        }
        var late: [ARQEngine.ReceivedFrame] = []
        var lateA: [ARQEngine.ReceivedFrame] = []
        harness.settle(for: .seconds(2), deliveredToB: &late, deliveredToA: &lateA)
        #expect(finished)
        #expect(late.isEmpty)
        #expect(duplicates == 0)
        #expect(outOfOrder > 0, "loss and reordering should have let later frames overtake")
        for (index, bytes) in frames.enumerated() { #expect(received[UInt32(index)] == bytes) }
        print("[reliability] unordered reliable: 3000 frames in \(String(format: "%.1f", harness.now.seconds)) s virtual, \(outOfOrder) delivered out of order, \(harness.a.statistics.framesRetransmitted) retransmitted")
    }

    /// Unreliable (maxRetransmits 0): never a duplicate, never corrupted, about 1 - loss delivered.
    @Test(arguments: [false, true])
    func unreliableFramesArriveAtMostOnce(ordered: Bool) {
        var harness = ARQEngineHarness(aToB: harshImpairment(seed: 505), bToA: harshImpairment(seed: 606))
        var random = SeededRandom(seed: 11)
        let count = 5_000
        let frames: [[UInt8]] = (0..<count).map { _ in random.bytes(64 + random.below(400)) }
        let delivery = ARQEngine.Delivery(ordered: ordered, limit: .maxRetransmits(0))
        var sent = 0
        var received: [UInt32: Int] = [:]
        var corrupted = 0
        var backwards = 0
        var lastSequence: UInt32?
        _ = harness.run(for: .seconds(120)) { h in
            // An application sending at a steady 1 frame per 2 ms.
            let due = min(count, Int(h.now.nanoseconds / 2_000_000) + 1)
            while sent < due, case .queued = h.a.send(frames[sent], channel: 3, delivery: delivery, now: h.now) { sent += 1 }
            while let frame = h.b.pollDelivery(now: h.now) {
                received[frame.sequence, default: 0] += 1
                if frames[Int(frame.sequence)] != frame.bytes { corrupted += 1 }
                if let lastSequence, frame.sequence <= lastSequence { backwards += 1 }
                lastSequence = frame.sequence
            }
            return sent == count && h.a.isQuiescent
        }
        var late: [ARQEngine.ReceivedFrame] = []
        var lateA: [ARQEngine.ReceivedFrame] = []
        harness.settle(for: .seconds(2), deliveredToB: &late, deliveredToA: &lateA)
        for frame in late { received[frame.sequence, default: 0] += 1 }
        let ratio = Double(received.count) / Double(count)
        #expect(sent == count)
        #expect(received.values.allSatisfy { $0 == 1 })
        #expect(corrupted == 0)
        if ordered { #expect(backwards == 0) }
        #expect(harness.a.statistics.framesRetransmitted == 0)
        #expect(ratio > 0.85 && ratio < 0.95, "delivery ratio \(ratio)")
        #expect(harness.a.statistics.framesAbandoned + received.count >= count)
        print("[reliability] unreliable \(ordered ? "ordered" : "unordered"): delivery ratio \(String(format: "%.4f", ratio)) (\(received.count)/\(count)), \(harness.a.statistics.framesAbandoned) abandoned, \(harness.a.statistics.forwardFramesSent) FORWARD frames, \(harness.b.statistics.framesSkipped) gaps skipped")
    }

    /// A 5 s blackout in both directions in the middle of a transfer: everything arrives
    /// afterwards, in order, once. The blackout starts earlier with BBR, whose faster ramp
    /// would otherwise finish the transfer before it.
    @Test(arguments: [(ARQEngine.CongestionControlAlgorithm.newReno, Int64(600)), (.bbr, Int64(100))])
    func aFiveSecondBlackoutDelaysButLosesNothing(algorithm: ARQEngine.CongestionControlAlgorithm, blackoutStartMs: Int64) {
        let impairment = ARQEngineHarness.impairment(loss: 0.01, delayMs: 20, jitterMs: 5, seed: 707)
        var configuration = ARQEngine.Configuration()
        configuration.congestionControl = algorithm
        var harness = ARQEngineHarness(a: configuration, aToB: impairment, bToA: ARQEngineHarness.impairment(loss: 0.01, seed: 808))
        let blackoutStart = ConduitInstant.zero + .milliseconds(blackoutStartMs)
        let blackoutEnd = blackoutStart + .seconds(5)
        harness.alarms = [blackoutStart, blackoutEnd]
        var random = SeededRandom(seed: 13)
        let count = 3_000
        let frames: [[UInt8]] = (0..<count).map { _ in random.bytes(1 + random.below(1_100)) }
        var sent = 0
        var next: UInt32 = 0
        var wrong = 0
        var deliveredDuringBlackout = 0
        var deliveredAfter = 0
        let finished = harness.run(for: .seconds(120)) { h in
            h.isPartitioned = h.now >= blackoutStart && h.now < blackoutEnd
            while sent < count, case .queued = h.a.send(frames[sent], channel: 2, now: h.now) { sent += 1 }
            while let frame = h.b.pollDelivery(now: h.now) {
                if frame.sequence != next || frame.bytes != frames[Int(next)] { wrong += 1 }
                next = frame.sequence &+ 1
                if h.now >= blackoutStart + .milliseconds(100) && h.now < blackoutEnd { deliveredDuringBlackout += 1 }
                if h.now >= blackoutEnd { deliveredAfter += 1 }
            }
            return next == UInt32(count)
        }
        var late: [ARQEngine.ReceivedFrame] = []
        var lateA: [ARQEngine.ReceivedFrame] = []
        harness.settle(for: .seconds(3), deliveredToB: &late, deliveredToA: &lateA)
        #expect(finished)
        #expect(wrong == 0)
        #expect(late.isEmpty)
        #expect(deliveredDuringBlackout == 0)
        #expect(deliveredAfter > 0, "the blackout must fall in the middle of the transfer")
        #expect(harness.now > blackoutEnd)
        #expect(harness.aToB.statistics.droppedByPartition > 0)
        let a = harness.a.statistics
        #expect(a.probeTimeouts >= 3, "the sender backs off its probes through the blackout")
        print("[reliability] blackout (\(algorithm)): finished at \(String(format: "%.2f", harness.now.seconds)) s virtual, \(a.probeTimeouts) PTOs, \(a.persistentCongestionEvents) persistent-congestion events, \(a.framesRetransmitted) frames retransmitted, \(harness.aToB.statistics.droppedByPartition) datagrams lost to the partition")
    }
}

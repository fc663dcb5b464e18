import ConduitCore
import ConduitARQ
import ConduitImpairment
import Testing

// Path MTU discovery (RFC 8899) between two engines on virtual time, through an impairment that
// drops datagrams above the path's size: the packet size converges to the path's limit, a black
// hole mid-transfer falls back without losing or repeating a frame, and lost probes are not
// taken for congestion.

/// Numbered frames of 50...400 bytes (so packets fill close to the size in force) on one
/// reliable ordered channel, checked on arrival: exactly once, in order, byte-identical.
struct NumberedFrames {
    let count: Int
    var sizes: [Int]
    var channel: UInt32 = 1
    /// How much A may have queued before the pump waits (the app's backlog).
    var maxQueued = 64 * 1_024
    var sent = 0
    var received = 0
    var wrong = 0

    init(count: Int, seed: UInt64) {
        self.count = count
        var random = SeededRandom(seed: seed)
        sizes = (0..<count).map { _ in 50 + random.below(351) }
    }

    func frame(_ index: Int) -> [UInt8] {
        (0..<sizes[index]).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) }
    }

    /// Sends while A's queue is short, takes what B delivers; true once every frame arrived.
    mutating func pump(_ h: inout ARQEngineHarness) -> Bool {
        while sent < count, h.a.queuedBytes < maxQueued {
            guard case .queued = h.a.send(frame(sent), channel: channel, delivery: .reliableOrdered, now: h.now) else { break }
            sent += 1
        }
        while let delivered = h.b.pollDelivery(now: h.now) {
            if received < count, delivered.bytes == frame(received) { received += 1 } else { wrong += 1 }
        }
        return received == count
    }
}

/// What A put on the wire, by size.
final class SentSizes {
    var sizes: [Int] = []
}

@Suite("Path MTU discovery (RFC 8899) between engines")
struct PathMTUDiscoveryTests {
    static func configuration(max: Int, discovery: Bool = true) -> ARQEngine.Configuration {
        var configuration = ARQEngine.Configuration()
        configuration.maxDatagramSize = max
        if !discovery { configuration.pathMTUDiscovery = nil }
        return configuration
    }

    static func path(limit: Int?, seed: UInt64) -> ImpairmentConfiguration {
        var path = ARQEngineHarness.impairment(delayMs: 20, jitterMs: 0, seed: seed)
        path.maxDatagramSize = limit
        return path
    }

    static func harness(max: Int, limit: Int?, discovery: Bool = true) -> (ARQEngineHarness, SentSizes) {
        var harness = ARQEngineHarness(a: configuration(max: max, discovery: discovery), aToB: path(limit: limit, seed: 11), bToA: path(limit: limit, seed: 12))
        let sent = SentSizes()
        harness.inspect = { fromA, datagram, _ in if fromA { sent.sizes.append(datagram.count) } }
        return (harness, sent)
    }

    /// Late copies in the network deliver nothing more.
    static func expectNothingLate(_ harness: inout ARQEngineHarness) {
        var lateB: [ARQEngine.ReceivedFrame] = []
        var lateA: [ARQEngine.ReceivedFrame] = []
        harness.settle(for: .seconds(3), deliveredToB: &lateB, deliveredToA: &lateA)
        #expect(lateB.isEmpty)
        #expect(lateA.isEmpty)
    }

    @Test func thePacketSizeConvergesToThePathLimitAndDataUsesIt() {
        var (harness, sent) = Self.harness(max: 1_500, limit: 1_400)
        // A transfer while the search runs, then one once it is over (both checked in full).
        var during = NumberedFrames(count: 2_000, seed: 1)
        let searched = harness.run(for: .seconds(120)) { h in
            // B sends only acknowledgements: its search, on the initial RTT's probe timeout (no
            // sample of its own), takes longer.
            let done = during.pump(&h)
            return done && h.a.pathMTUSearch?.state == .searchComplete && h.b.pathMTUSearch?.state == .searchComplete
        }
        #expect(searched)
        #expect(during.wrong == 0)
        let a = harness.a.statistics
        #expect((1_393...1_400).contains(harness.a.currentMaxDatagramSize))
        #expect(a.pathMTU == harness.a.currentMaxDatagramSize)
        #expect((1_393...1_400).contains(harness.b.currentMaxDatagramSize))
        // Only probes were too large for the path: every datagram the path dropped was a probe,
        // and no packet of data was lost.
        #expect(harness.aToB.statistics.droppedOverSize == sent.sizes.filter { $0 > 1_400 }.count)
        #expect(a.pathProbesLost == harness.aToB.statistics.droppedOverSize)
        #expect(a.pathProbesLost >= 3 * 3, "the maximum and two sizes between failed")
        #expect(a.packetsLost == 0)

        // Data now goes out in packets above the base size, several frames each.
        sent.sizes.removeAll()
        var after = NumberedFrames(count: 5_000, seed: 6)
        after.channel = 2
        #expect(harness.run(for: .seconds(120)) { h in after.pump(&h) })
        #expect(after.wrong == 0)
        Self.expectNothingLate(&harness)
        let packets = harness.a.statistics.packetsSent - a.packetsSent
        #expect(packets * 3 < after.count, "several frames per packet in the room found")
        #expect(sent.sizes.max()! <= 1_400)
        #expect(sent.sizes.filter { $0 > 1_220 }.count * 2 > packets)
        #expect(harness.a.statistics.packetsLost == 0)
        print("[pmtud] converged to \(harness.a.currentMaxDatagramSize) on a 1,400-byte path; \(a.pathProbesSent) probes, \(a.pathProbesLost) lost; then \(packets) packets for \(after.count) frames of 50-400 bytes")
    }

    /// Loopback carries 65,000-byte packets: more than the initial window of base-size packets
    /// (12,200 bytes) and four times the minimum. Windows must count in the size found, or the
    /// first confirmed probe leaves a window no packet fits, and the link stalls for good; and so
    /// must the pacer's bucket, or each large packet waits for a timer of its own.
    @Test(arguments: ARQEngine.CongestionControlAlgorithm.allCases)
    func aSizeAboveTheInitialWindowStillSends(_ algorithm: ARQEngine.CongestionControlAlgorithm) {
        var configuration = Self.configuration(max: 65_000)
        configuration.congestionControl = algorithm
        var harness = ARQEngineHarness(a: configuration, b: configuration, aToB: Self.path(limit: nil, seed: 21), bToA: Self.path(limit: nil, seed: 22))
        // Large packets A sent at each instant (at most the pacer's bucket goes at once).
        final class Bursts { var at: ConduitInstant?; var count = 0; var largest = 0 }
        let bursts = Bursts()
        harness.inspect = { fromA, datagram, now in
            guard fromA, datagram.count > 60_000 else { return }
            if bursts.at == now { bursts.count += 1 } else { (bursts.at, bursts.count) = (now, 1) }
            bursts.largest = max(bursts.largest, bursts.count)
        }
        var frames = NumberedFrames(count: 40_000, seed: 7)
        frames.maxQueued = 2 * 1_024 * 1_024  // a backlog, so that the pacer is what spaces packets
        let finished = harness.run(for: .seconds(120)) { h in
            frames.pump(&h) && h.a.pathMTUSearch?.state == .searchComplete
        }
        #expect(finished)
        #expect(frames.wrong == 0)
        #expect(harness.a.currentMaxDatagramSize > 60_000)
        print("[pmtud] \(algorithm): up to \(bursts.largest) packets of over 60,000 bytes at one instant")
        #expect(bursts.largest >= 4, "the pacer's bucket counts in packets of the size found (a base-size bucket let 2 go)")
        #expect(harness.a.statistics.congestionWindow >= 2 * harness.a.currentMaxDatagramSize, "at least the minimum window in the size found")
    }

    @Test func aBlackHoleMidTransferFallsBackWithNothingLostOrRepeated() {
        var (harness, _) = Self.harness(max: 1_500, limit: 1_500)
        var frames = NumberedFrames(count: 12_000, seed: 2)
        var lowered: Int?
        let finished = harness.run(for: .seconds(300)) { h in
            let done = frames.pump(&h)
            if lowered == nil, h.a.currentMaxDatagramSize == 1_500, frames.received >= 3_000 {
                // The route changes: the path now drops everything above 1,300 bytes.
                h.aToB.maxDatagramSize = 1_300
                h.bToA.maxDatagramSize = 1_300
                lowered = frames.received
            }
            return done && lowered != nil && h.a.pathMTUSearch?.state == .searchComplete
        }
        #expect(finished)
        #expect(lowered != nil && lowered! < frames.count / 2, "the black hole came mid-transfer")
        #expect(frames.received == frames.count)
        #expect(frames.wrong == 0)
        Self.expectNothingLate(&harness)
        let a = harness.a.statistics
        #expect(a.pathBlackHoles >= 1)
        #expect((1_293...1_300).contains(harness.a.currentMaxDatagramSize))
        #expect(a.framesAbandoned == 0)
        print("[pmtud] black hole at frame \(lowered ?? -1): \(a.pathBlackHoles) detected, \(a.packetsLost) packets lost, now \(harness.a.currentMaxDatagramSize); done in \(harness.now.seconds) s virtual")
    }

    @Test func lostProbesDoNotCutTheCongestionWindow() {
        var (harness, _) = Self.harness(max: 1_500, limit: 1_300)
        var frames = NumberedFrames(count: 2_000, seed: 3)
        let finished = harness.run(for: .seconds(60)) { h in
            frames.pump(&h) && h.a.pathMTUSearch?.state == .searchComplete
        }
        #expect(finished)
        let a = harness.a.statistics
        #expect(a.pathProbesLost >= 3)
        #expect(a.packetsLost == 0)
        #expect(a.congestionEvents == 0)
        #expect(a.slowStartThreshold == Int.max, "still in slow start: the window was never cut")
    }

    @Test func offKeepsTheConfiguredSizeAndSendsNoProbes() {
        var (harness, sent) = Self.harness(max: 1_220, limit: nil, discovery: false)
        var frames = NumberedFrames(count: 2_000, seed: 4)
        #expect(harness.run(for: .seconds(60)) { h in frames.pump(&h) })
        #expect(frames.wrong == 0)
        #expect(harness.a.pathMTUSearch == nil)
        #expect(harness.a.statistics.pathProbesSent == 0)
        #expect(harness.a.currentMaxDatagramSize == 1_220)
        #expect(sent.sizes.max()! <= 1_220)
        // One new frame per channel and packet while the size is the base: nothing packs them.
        #expect(harness.a.statistics.packetsSent >= 2_000)
    }

    @Test func withTheDefaultSizesThereIsNothingToSearch() {
        var (harness, sent) = Self.harness(max: ARQEngine.Configuration().maxDatagramSize, limit: nil)
        var frames = NumberedFrames(count: 500, seed: 5)
        #expect(harness.run(for: .seconds(60)) { h in frames.pump(&h) })
        #expect(harness.a.statistics.pathProbesSent == 0)
        #expect(sent.sizes.max()! <= 1_220)
        #expect(ARQEngine.Configuration().maxFramePayload == 1_190)
    }

    @Test func framesAreCutToTheBaseSizeWhateverTheMaximum() {
        let on = Self.configuration(max: 9_000)
        #expect(on.maxFramePayload == ARQEngine.Configuration().maxFramePayload)
        let off = Self.configuration(max: 9_000, discovery: false)
        #expect(off.maxFramePayload == 9_000 - 1_220 + ARQEngine.Configuration().maxFramePayload)
    }
}

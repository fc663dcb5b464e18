@testable import ConduitARQ
import ConduitCore
import ConduitImpairment
import Testing

/// Frames too large for a packet of the size in use go in parts (DATA's part flag): the wire
/// fields, the receiver's gathering of parts, and whole transfers between two engines on virtual
/// time, through loss and through a path that falls back to smaller packets mid-transfer.
@Suite("Reliability engine: frames in parts")
struct ARQFramePartsTests {
    // MARK: Wire

    @Test("a DATA part round-trips; a part that is empty, runs past its frame or belongs to an over-long frame is a typed error")
    func wire() throws {
        var writer = LinkPacketWriter()
        writer.begin(packetNumber: 7, checksum: false, capacity: 100)
        writer.appendData(channel: 3, sequence: 9, ordered: true, lifetimeMilliseconds: 250,
                          part: LinkFramePart(offset: 1_000, frameLength: 3_000), payload: [1, 2, 3][...])
        let (_, frames) = try LinkPacket.frames(of: writer.bytes, expectChecksum: false)
        guard case .data(let data) = try #require(frames.first) else { Issue.record("not DATA: \(frames)"); return }
        #expect(data.part == LinkFramePart(offset: 1_000, frameLength: 3_000))
        #expect(data.remainingLifetimeMilliseconds == 250 && data.isOrdered && data.channel == 3 && data.sequence == 9)
        #expect(Array(writer.bytes[data.payload]) == [1, 2, 3])

        for (offset, length, frameLength) in [(0, 0, 10), (9, 2, 10), (0, 1, 65_536), (UInt32.max, 1, 10)] as [(UInt32, Int, UInt32)] {
            var bad = LinkPacketWriter()
            bad.begin(packetNumber: 1, checksum: false, capacity: 100)
            bad.appendData(channel: 1, sequence: 0, ordered: true, lifetimeMilliseconds: nil,
                           part: LinkFramePart(offset: offset, frameLength: frameLength), payload: ArraySlice(repeating: 0, count: length))
            #expect(throws: LinkWireError.invalidPart(offset: offset, length: length, frameLength: frameLength)) {
                _ = try LinkPacket.frames(of: bad.bytes, expectChecksum: false)
            }
        }
    }

    // MARK: Gathering parts

    @Test("parts gather in any order; a repeated part is a duplicate; overlaps merge; scattered slivers are refused past the bound")
    func partialFrame() {
        let frame = (0..<10).map(UInt8.init)
        func add(_ partial: inout LinkPartialFrame, _ range: Range<Int>) -> LinkPartialFrame.AddOutcome {
            Array(frame[range]).withUnsafeBytes { partial.add($0, at: range.lowerBound) }
        }
        var partial = LinkPartialFrame(frameLength: 10)
        #expect(add(&partial, 6..<10) == .added)
        #expect(add(&partial, 6..<10) == .duplicate)
        #expect(add(&partial, 0..<3) == .added)
        #expect(!partial.isComplete)
        #expect(add(&partial, 2..<7) == .added)
        #expect(partial.isComplete && partial.receivedCount == 10)
        #expect(partial.bytes == frame)

        var scattered = LinkPartialFrame(frameLength: 2 * LinkPartialFrame.maxRanges + 2)
        for index in 0..<LinkPartialFrame.maxRanges { #expect([UInt8(0)].withUnsafeBytes { scattered.add($0, at: 2 * index) } == .added) }
        #expect([UInt8(0)].withUnsafeBytes { scattered.add($0, at: 2 * LinkPartialFrame.maxRanges) } == .tooScattered)
        // A sliver that joins two ranges lowers the count, so it is taken.
        #expect([UInt8(0)].withUnsafeBytes { scattered.add($0, at: 1) } == .added)
    }

    // MARK: Between two engines

    static func frames(count: Int, sizes: ClosedRange<Int>, seed: UInt64) -> NumberedFrames {
        var frames = NumberedFrames(count: count, seed: seed)
        var random = SeededRandom(seed: seed &+ 1)
        frames.sizes = (0..<count).map { _ in sizes.lowerBound + random.below(sizes.count) }
        frames.maxQueued = 512 * 1_024
        return frames
    }

    @Test("frames up to the largest a link takes go in parts over base-size packets, through 10 % loss each way: each delivered once, in order, byte for byte")
    func largeFramesThroughLoss() {
        var configuration = ARQEngine.Configuration()
        configuration.pathMTUDiscovery = nil
        #expect(configuration.maxFrameBytes == 65_535)
        var harness = ARQEngineHarness(
            a: configuration,
            aToB: ARQEngineHarness.impairment(loss: 0.1, delayMs: 20, jitterMs: 2, seed: 31),
            bToA: ARQEngineHarness.impairment(loss: 0.1, delayMs: 20, jitterMs: 2, seed: 32)
        )
        var frames = Self.frames(count: 60, sizes: 1...65_535, seed: 5)
        frames.sizes[0] = 65_535
        // maxFramePayload leaves room for a lifetime field, which reliable frames do not carry:
        // one byte more than that room is the smallest frame in parts.
        let room = configuration.maxFramePayload + LinkPacket.lifetimeFieldSize
        frames.sizes[1] = room + 1
        frames.sizes[2] = room
        let finished = harness.run(for: .seconds(600)) { frames.pump(&$0) }
        #expect(finished)
        #expect(frames.received == frames.count)
        #expect(frames.wrong == 0)
        PathMTUDiscoveryTests.expectNothingLate(&harness)
        let a = harness.a.statistics, b = harness.b.statistics
        let inParts = frames.sizes.filter { $0 > room }.count
        #expect(a.framesSentInParts == inParts)
        #expect(a.framesSent == frames.count)
        #expect(a.framesAbandoned == 0)
        #expect(b.framesDelivered == frames.count)
        #expect(b.framePartsReceived >= a.framePartsSent - a.framesRetransmitted)
        #expect(b.framePartsRefused == 0)
        #expect(harness.b.receiveBufferedBytes == 0, "no partial frame left behind")
        print("[parts] \(inParts) of \(frames.count) frames in parts: \(a.framePartsSent) parts sent, \(a.framesRetransmitted) copies again, \(a.packetsLost) packets lost; \(harness.now.seconds) s virtual")
    }

    @Test("frames cut to the size the path search found: after a black hole mid-transfer, the lost ones go again in parts, nothing lost or repeated")
    func aBlackHoleSplitsWhatNoLongerFits() {
        var configuration = PathMTUDiscoveryTests.configuration(max: 9_000)
        configuration.receiveWindow = 4 * 1_024 * 1_024
        var harness = ARQEngineHarness(
            a: configuration, b: configuration,
            aToB: PathMTUDiscoveryTests.path(limit: 9_000, seed: 41), bToA: PathMTUDiscoveryTests.path(limit: 9_000, seed: 42)
        )
        // Frames that fit the 9,000-byte packets the search finds, not the base.
        var frames = Self.frames(count: 1_200, sizes: 2_000...8_900, seed: 6)
        var lowered: Int?
        let base = configuration.maxFramePayload
        #expect(harness.a.currentFrameRoom == base, "the base packet's room until the search finds more")
        var roomFound: Int?
        let finished = harness.run(for: .seconds(600)) { h in
            let done = frames.pump(&h)
            if lowered == nil, h.a.currentMaxDatagramSize == 9_000, frames.received >= 200 {
                roomFound = h.a.currentFrameRoom
                // The route changes: the path now drops everything above 1,300 bytes.
                h.aToB.maxDatagramSize = 1_300
                h.bToA.maxDatagramSize = 1_300
                lowered = frames.received
            }
            return done && lowered != nil
        }
        #expect(finished)
        #expect(lowered != nil && lowered! < frames.count / 2, "the black hole came mid-transfer")
        #expect(frames.received == frames.count)
        #expect(frames.wrong == 0)
        PathMTUDiscoveryTests.expectNothingLate(&harness)
        let a = harness.a.statistics
        #expect(a.pathBlackHoles >= 1)
        #expect(harness.a.currentMaxDatagramSize <= 1_300)
        #expect(a.framesSentInParts > 0, "frames lost in the black hole, and those sent after it, went in parts")
        // What an upper layer cuts its fragments to (see TransportLink.currentMTU): the room of a
        // packet of the size found, then the base packet's again after the fall back.
        #expect(roomFound == 9_000 - LinkPacket.overhead(checksum: true) - LinkPacket.dataFrameHeaderSize - LinkPacket.lifetimeFieldSize)
        #expect(harness.a.currentFrameRoom <= 1_300 - LinkPacket.overhead(checksum: true) - LinkPacket.dataFrameHeaderSize - LinkPacket.lifetimeFieldSize)
        #expect(harness.a.currentFrameRoom >= base)
        #expect(a.framesAbandoned == 0)
        #expect(harness.b.receiveBufferedBytes == 0, "no partial frame left behind")
        print("[parts] black hole at frame \(lowered ?? -1): \(a.framesSentInParts) frames in parts (\(a.framePartsSent) parts); done in \(harness.now.seconds) s virtual")
    }

    @Test("a part of an unreliable frame past its retransmission limit abandons the frame; FORWARD frees what its parts held at the receiver")
    func anAbandonedFrameInPartsFreesTheReceiver() {
        var configuration = ARQEngine.Configuration()
        configuration.pathMTUDiscovery = nil
        var harness = ARQEngineHarness(a: configuration)
        let big = [UInt8](repeating: 0xAB, count: 5_000)
        guard case .queued = harness.a.send(big, channel: 4, delivery: Reliability(ordered: true, limit: .maxRetransmits(0)), now: harness.now) else {
            Issue.record("not queued")
            return
        }
        // Every second datagram from A is lost: some parts arrive, some never do.
        final class Count { var value = 0 }
        let count = Count()
        harness.drop = { fromA, _ in
            guard fromA else { return false }
            count.value += 1
            return count.value % 2 == 0
        }
        _ = harness.run(for: .seconds(5)) { _ in false }
        #expect(harness.a.statistics.framesAbandoned == 1)
        #expect(harness.a.framesOutstanding == 0)
        #expect(harness.b.statistics.framePartsReceived > 0)
        #expect(harness.b.receiveBufferedBytes == 0, "the FORWARD released the partial frame")
        #expect(harness.b.pollDelivery(now: harness.now) == nil)
        // The channel goes on.
        _ = harness.a.send([1, 2, 3], channel: 4, delivery: .reliableOrdered, now: harness.now)
        harness.drop = nil
        _ = harness.run(for: .seconds(2)) { _ in false }
        #expect(harness.b.pollDelivery(now: harness.now)?.bytes == [1, 2, 3])
    }
}

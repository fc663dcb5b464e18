import Conduit
import ConduitTooling
import Testing

@Suite("Seeded payloads")
struct SeededPayloadTests {
    @Test func timestampCarriesSeqHighAndSeedLow() {
        let timestamp = SeededPayload.timestamp(seed: 0xDEAD_BEEF, seq: 7)
        #expect(timestamp == 7 << 32 | 0xDEAD_BEEF)
        let decoded = SeededPayload.decode(timestamp: timestamp)
        #expect(decoded.seed == 0xDEAD_BEEF)
        #expect(decoded.seq == 7)
    }

    @Test(arguments: [0, 1, 2, 7, 8, 9, 1_200, 16 * 1024, 128 * 1024])
    func bytesAreFixedBySeedSeqAndLength(count: Int) {
        let first = SeededPayload.bytes(seed: 42, seq: 3, count: count)
        #expect(first.count == count)
        #expect(SeededPayload.bytes(seed: 42, seq: 3, count: count) == first)
        #expect(SeededPayload.matches(first, timestamp: SeededPayload.timestamp(seed: 42, seq: 3)))
        guard count >= 8 else { return }
        // Another seq, seed or length gives other bytes.
        #expect(SeededPayload.bytes(seed: 42, seq: 4, count: count) != first)
        #expect(SeededPayload.bytes(seed: 43, seq: 3, count: count) != first)
        #expect(Array(SeededPayload.bytes(seed: 42, seq: 3, count: count + 1).prefix(count)) != first)
    }

    @Test func sizesAreLogUniformWithinTheRange() {
        let sizes = (0..<4_000).map { SeededPayload.size(seed: 9, seq: UInt32($0), in: 1...16_384) }
        #expect(sizes.allSatisfy { (1...16_384).contains($0) })
        let again = (UInt32(0)..<4_000).map { (seq: UInt32) -> Int in SeededPayload.size(seed: 9, seq: seq, in: 1...16_384) }
        #expect(sizes == again)
        // 15 power-of-two bands: about a fifth of the draws are below 8 bytes, a uniform draw
        // would give almost none.
        let small = sizes.filter { $0 < 8 }.count
        #expect(small > 400 && small < 1_300)
        #expect(sizes.contains(1))
        #expect(sizes.contains { $0 > 8_192 })
        #expect(SeededPayload.size(seed: 1, seq: 1, in: 5...5) == 5)
        #expect((0..<100).allSatisfy { SeededPayload.size(seed: 1, seq: $0, in: 0...1) <= 1 })
        #expect((0..<100).allSatisfy { (1_000...1_001).contains(SeededPayload.size(seed: 1, seq: $0, in: 1_000...1_001)) })
    }

    @Test(arguments: [1, 128 * 1024])
    func verifierClassifiesEveryCase(count: Int) {
        func message(_ seq: UInt32) -> ([UInt8], UInt64) {
            (SeededPayload.bytes(seed: 5, seq: seq, count: count), SeededPayload.timestamp(seed: 5, seq: seq))
        }
        var verifier = PayloadVerifier()
        let (zero, t0) = message(0)
        let (one, t1) = message(1)
        let (two, t2) = message(2)
        #expect(verifier.classify(zero, timestamp: t0) == .ok)
        #expect(verifier.classify(two, timestamp: t2) == .ok)
        #expect(verifier.classify(one, timestamp: t1) == .outOfOrder)
        #expect(verifier.classify(two, timestamp: t2) == .duplicate)

        var flipped = message(3).0
        flipped[flipped.count - 1] ^= 0x01
        #expect(verifier.classify(flipped, timestamp: SeededPayload.timestamp(seed: 5, seq: 3)) == .corrupted)
        // Right bytes, wrong seq: corrupted too.
        #expect(verifier.classify(zero, timestamp: SeededPayload.timestamp(seed: 5, seq: 4)) == .corrupted)
        // A corrupted copy is not remembered: the intact one still counts.
        #expect(verifier.classify(message(3).0, timestamp: SeededPayload.timestamp(seed: 5, seq: 3)) == .ok)

        let counts = verifier.counts
        #expect(counts.received == 7)
        #expect(counts.ok == 3)
        #expect(counts.outOfOrder == 1)
        #expect(counts.duplicates == 1)
        #expect(counts.corrupted == 2)
        #expect(counts.valid == 4)
        #expect(counts.bytes == 7 * count)
    }

    @Test func duplicatesAreCaughtFarAheadAndAcrossManySenders() {
        var verifier = PayloadVerifier()
        func classify(_ seed: UInt32, _ seq: UInt32) -> PayloadVerifier.Verdict {
            verifier.classify(SeededPayload.bytes(seed: seed, seq: seq, count: 8), timestamp: SeededPayload.timestamp(seed: seed, seq: seq))
        }
        // A sequence number far past what the sender delivered is first kept outside the bitmap;
        // once the bitmap reaches it (after many more messages) a repeat is still a duplicate.
        #expect(classify(1, 3_000_000_000) == .ok)
        #expect(classify(1, 3_000_000_000) == .duplicate)
        #expect(classify(1, 200_000) == .outOfOrder)
        for seq in UInt32(0)..<70_000 { _ = classify(1, seq) }
        #expect(classify(1, 200_000) == .duplicate)
        #expect(classify(1, 69_999) == .duplicate)
        // More senders than the verifier tracks by bitmap: duplicates and reordering are still caught.
        for seed in UInt32(100)..<UInt32(100 + PayloadVerifier.maxTrackedSenders + 10) {
            #expect(classify(seed, 1) == .ok)
            #expect(classify(seed, 1) == .duplicate)
            #expect(classify(seed, 0) == .outOfOrder)
        }
        #expect(verifier.counts.corrupted == 0)
    }

    @Test func truncatedOrPaddedMessagesAreCorrupted() {
        let timestamp = SeededPayload.timestamp(seed: 11, seq: 0)
        let whole = SeededPayload.bytes(seed: 11, seq: 0, count: 1_000)
        #expect(SeededPayload.matches(whole, timestamp: timestamp))
        #expect(!SeededPayload.matches(Array(whole.dropLast()), timestamp: timestamp))
        #expect(!SeededPayload.matches(whole + [0], timestamp: timestamp))
        #expect(SeededPayload.matches([], timestamp: timestamp))
    }

    @Test func sizeArgumentsAreCheckedAgainstTheType() throws {
        #expect(try JobArguments.sizeRange("1-16384", for: .reliableMessage) == 1...16_384)
        #expect(try JobArguments.sizeRange("512", for: .unreliableBytes) == 512...512)
        #expect(try JobArguments.sizeRange("4194304", for: .reliableBytes) == 4_194_304...4_194_304)
        for (text, type) in [("10-1", SessionType.reliableMessage), ("131073", .reliableMessage), ("1-4194305", .reliableBytes),
                             ("", .reliableMessage), ("-5", .reliableMessage), ("a-b", .reliableMessage), ("1-", .reliableMessage)] {
            #expect(throws: ConduitError.self, "\(text)") { try JobArguments.sizeRange(text, for: type) }
        }
    }
}

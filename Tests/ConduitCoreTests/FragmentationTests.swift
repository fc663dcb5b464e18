import ConduitCore
import Testing

// Fragmenter, Reassembler and FragmentAggregator.

@Suite("Fragmenter")
struct FragmenterTests {
    @Test("cuts messages into contiguous, parseable fragments", arguments: [
        (0, SessionType.reliableMessage, 1),
        (1, .unreliableMessage, 1),
        (1_199, .reliableMessage, 1),
        (1_200, .unreliableMessage, 1),
        (1_201, .reliableMessage, 2),
        (16 * 1024, .unreliableMessage, 14),
        (128 * 1024, .reliableMessage, 110),
        (4 * 1024 * 1024, .reliableBytes, 3_496),
        (4 * 1024 * 1024, .unreliableBytes, 3_496),
    ] as [(Int, SessionType, Int)])
    func fragments(size: Int, type: SessionType, expectedCount: Int) throws {
        var generator = SplitMix64(seed: UInt64(size) &* 31 &+ UInt64(type.rawValue))
        let message = generator.bytes(size)
        let timestamp: UInt64 = 0xABCD_0000 + UInt64(size)
        let batch = Frames.fragment(message, streamID: 321, type: type, subgroupID: 5, messageID: 77, timestamp: timestamp)

        #expect(batch.count == expectedCount)
        #expect(batch.byteCount == size + expectedCount * DataFrameHeader.size)
        var offset = 0
        var sameBytes = true
        var headerMismatches: [Int] = []
        for index in 0..<batch.count {
            let frame = try Frames.parse(batch[index]).get()
            let expected = DataFrameHeader(
                streamID: 321, sessionType: type, subgroupID: 5, messageID: 77, fragmentOffset: UInt32(offset),
                totalLength: UInt32(size), fragmentSize: 1_200, timestamp: timestamp
            )
            if frame.header != expected || frame.header.fragmentIndex != index { headerMismatches.append(index) }
            let expectedLength = index == batch.count - 1 ? size - offset : 1_200
            if frame.payload.count != expectedLength { headerMismatches.append(index) }
            sameBytes = sameBytes && frame.payload[...] == message[offset..<min(size, offset + frame.payload.count)]
            offset += frame.payload.count
        }
        #expect(headerMismatches == [], "fragments with an unexpected header or length")
        #expect(sameBytes, "every payload equals its slice of the message")
        #expect(offset == size)
    }

    @Test("emits one fragment at a time and reports its progress")
    func cursor() {
        let message = SplitMix64(seed: 1).bytesOf(count: 3_000)
        var fragmenter = Fragmenter(
            streamID: 100, sessionType: .reliableMessage, messageID: 9, totalLength: 3_000, fragmentSize: 1_200, timestamp: 5
        )
        #expect(fragmenter.fragmentCount == 3)
        #expect(fragmenter.totalLength == 3_000)
        var batch = DatagramBatch()
        var frameSizes: [Int] = []
        var remaining: [Int] = [fragmenter.remainingBytes]
        while !fragmenter.isFinished {
            frameSizes.append(fragmenter.nextFrameSize)
            let emitted = message.withUnsafeBytes { fragmenter.emitNext(of: $0, into: &batch) }
            #expect(emitted)
            remaining.append(fragmenter.remainingBytes)
        }
        #expect(frameSizes == [1_232, 1_232, 632])
        #expect(remaining == [3_000, 1_800, 600, 0])
        #expect(fragmenter.nextOffset == 3_000)
        #expect(fragmenter.nextFrameSize == 0)
        #expect((0..<batch.count).map { batch[$0].count } == frameSizes)
        // Finished: nothing more is appended.
        let again = message.withUnsafeBytes { fragmenter.emitNext(of: $0, into: &batch) }
        #expect(!again)
        #expect(batch.count == 3)
    }

    @Test("the empty message is one empty fragment")
    func emptyMessage() throws {
        var fragmenter = Fragmenter(
            streamID: 999, sessionType: .unreliableBytes, messageID: 0, totalLength: 0, fragmentSize: 1_200, timestamp: 1
        )
        #expect(!fragmenter.isFinished)
        #expect(fragmenter.nextFrameSize == 32)
        var batch = DatagramBatch()
        [UInt8]().withUnsafeBytes { fragmenter.emitAll(of: $0, into: &batch) }
        #expect(fragmenter.isFinished)
        #expect(batch.count == 1)
        let frame = try Frames.parse(batch[0]).get()
        #expect(frame.header.totalLength == 0)
        #expect(frame.header.fragmentOffset == 0)
        #expect(frame.payload.isEmpty)
    }

    @Test("widens fragments that would exceed the fragment-count limit")
    func widening() throws {
        let size = 4 * 1024 * 1024
        let message = SplitMix64(seed: 2).bytesOf(count: size)
        let batch = Frames.fragment(message, type: .reliableBytes, messageID: 1, fragmentSize: 100, timestamp: 0)
        #expect(batch.count == Limits.maxFragmentsPerMessage)
        let first = try Frames.parse(batch[0]).get()
        #expect(first.header.fragmentSize == 512)
        let last = try Frames.parse(batch[batch.count - 1]).get()
        #expect(last.header.fragmentOffset == UInt32(size - 512))
        #expect(last.payload[...] == message[(size - 512)...])

        // Small messages keep the asked size.
        let small = Frames.fragment([1, 2, 3], type: .reliableBytes, messageID: 1, fragmentSize: 1, timestamp: 0)
        #expect(small.count == 3)
    }
}

@Suite("Reassembler")
struct ReassemblerTests {
    @Test("in-order reassembly is byte-identical and keeps the timestamp", arguments: [1_201, 5_000, 16 * 1024, 128 * 1024])
    func inOrder(size: Int) throws {
        var generator = SplitMix64(seed: UInt64(size))
        let message = generator.bytes(size)
        let frames = try Frames.parsedFragments(message, streamID: 400, type: .reliableMessage, subgroupID: 3, messageID: 12, timestamp: 99)
        var reassembler = Reassembler()
        for (index, frame) in frames.enumerated() {
            let outcome = reassembler.ingest(frame, now: .zero)
            if index < frames.count - 1 {
                #expect(outcome.isIncomplete)
                #expect(reassembler.incompleteMessages == 1)
                #expect(reassembler.bufferedBytes == size)
            } else {
                let done = try #require(outcome.message)
                #expect(done.bytes == message)
                #expect(done.timestamp == 99)
                #expect(done.sessionType == .reliableMessage)
                #expect(done.key == Reassembler.Key(streamID: 400, subgroupID: 3, messageID: 12))
            }
        }
        #expect(reassembler.incompleteMessages == 0)
        #expect(reassembler.bufferedBytes == 0)
        #expect(reassembler.statistics.completedMessages == 1)
    }

    @Test("a single-fragment message completes at once without buffering")
    func singleFragment() throws {
        var reassembler = Reassembler()
        for size in [0, 1, 1_200] {
            let frames = try Frames.parsedFragments(Array(repeating: 7, count: size), type: .unreliableMessage, messageID: UInt32(size), timestamp: 3)
            #expect(frames.count == 1)
            let done = try #require(reassembler.ingest(frames[0], now: .zero).message)
            #expect(done.bytes == Array(repeating: 7, count: size))
            #expect(reassembler.bufferedBytes == 0)
        }
        #expect(reassembler.statistics.completedMessages == 3)
    }

    @Test("shuffled, interleaved fragments of several messages reassemble exactly", arguments: [1, 2, 3] as [UInt64])
    func shuffled(seed: UInt64) throws {
        var generator = SplitMix64(seed: seed)
        let sizes = [1_201, 5_000, 16 * 1024, 128 * 1024, 2_400, 3]
        var originals: [Reassembler.Key: (bytes: [UInt8], timestamp: UInt64)] = [:]
        var frames: [ParsedFrame] = []
        for (index, size) in sizes.enumerated() {
            let stream = StreamID(100 + index % 2)
            let message = generator.bytes(size)
            let timestamp = 1_000 + UInt64(index)
            originals[Reassembler.Key(streamID: stream, subgroupID: 0, messageID: UInt32(index))] = (message, timestamp)
            frames += try Frames.parsedFragments(message, streamID: stream, type: .reliableMessage, messageID: UInt32(index), timestamp: timestamp)
        }
        generator.shuffle(&frames)

        var reassembler = Reassembler()
        var completed: [Reassembler.Key] = []
        for frame in frames {
            switch reassembler.ingest(frame, now: .zero) {
            case .complete(let message):
                completed.append(message.key)
                let original = try #require(originals[message.key])
                #expect(message.bytes == original.bytes)
                #expect(message.timestamp == original.timestamp)
            case .incomplete:
                break
            case .dropped:
                Issue.record("nothing should be dropped")
            }
        }
        #expect(Set(completed) == Set(originals.keys))
        #expect(completed.count == sizes.count)
        #expect(reassembler.bufferedBytes == 0)
        #expect(reassembler.statistics == {
            var expected = Reassembler.Statistics()
            expected.completedMessages = sizes.count
            return expected
        }())
    }

    @Test("duplicate fragments are counted and do not complete twice")
    func duplicates() throws {
        let message = SplitMix64(seed: 3).bytesOf(count: 3_000)
        let frames = try Frames.parsedFragments(message, type: .reliableMessage, messageID: 1, timestamp: 8)
        #expect(frames.count == 3)
        var reassembler = Reassembler()
        #expect(reassembler.ingest(frames[0], now: .zero).isIncomplete)
        #expect(reassembler.ingest(frames[0], now: .zero).isIncomplete)
        #expect(reassembler.ingest(frames[2], now: .zero).isIncomplete)
        #expect(reassembler.ingest(frames[2], now: .zero).isIncomplete)
        #expect(reassembler.ingest(frames[0], now: .zero).isIncomplete)
        #expect(reassembler.statistics.duplicateFragments == 3)
        let done = try #require(reassembler.ingest(frames[1], now: .zero).message)
        #expect(done.bytes == message)
        #expect(reassembler.statistics.completedMessages == 1)
        #expect(reassembler.statistics.duplicateFragments == 3)
    }

    @Test("fragments that contradict their message are counted as inconsistent")
    func inconsistent() throws {
        let message = SplitMix64(seed: 4).bytesOf(count: 3_000)
        let frames = try Frames.parsedFragments(message, type: .reliableMessage, messageID: 5, timestamp: 1)
        var reassembler = Reassembler()
        #expect(reassembler.ingest(frames[0], now: .zero).isIncomplete)

        // Same message ID, another total length.
        let otherTotal = try Frames.parsedFragments(SplitMix64(seed: 5).bytesOf(count: 2_500), type: .reliableMessage, messageID: 5, timestamp: 1)
        #expect(reassembler.ingest(otherTotal[1], now: .zero).isIncomplete)
        // Same message ID and total, another fragment size.
        let otherSize = try Frames.parsedFragments(message, type: .reliableMessage, messageID: 5, fragmentSize: 1_000, timestamp: 1)
        #expect(reassembler.ingest(otherSize[1], now: .zero).isIncomplete)
        // Same message ID, total and size, another session type.
        let otherType = try Frames.parsedFragments(message, type: .unreliableMessage, messageID: 5, timestamp: 1)
        #expect(reassembler.ingest(otherType[1], now: .zero).isIncomplete)
        // A single-fragment frame claiming the same key.
        let single = try Frames.parsedFragments([1, 2, 3], type: .reliableMessage, messageID: 5, timestamp: 1)
        #expect(reassembler.ingest(single[0], now: .zero).isIncomplete)

        #expect(reassembler.statistics.inconsistentFragments == 4)
        #expect(reassembler.statistics.duplicateFragments == 0)
        // The original message is unharmed.
        #expect(reassembler.ingest(frames[1], now: .zero).isIncomplete)
        let done = try #require(reassembler.ingest(frames[2], now: .zero).message)
        #expect(done.bytes == message)
    }

    /// The first fragment of a 3,000-byte message (3 fragments of 1,200).
    static func firstFragment(stream: StreamID = 100, id: UInt32, type: SessionType, size: Int = 3_000) throws -> ParsedFrame {
        try Frames.parsedFragments(Array(repeating: UInt8(id & 0xFF), count: size), streamID: stream, type: type, messageID: id, timestamp: UInt64(id))[0]
    }

    @Test("reliable messages beyond the message-count cap are dropped, never evicted")
    func reliableCountCap() throws {
        var reassembler = Reassembler(configuration: .init(maxIncompleteMessages: 2))
        #expect(reassembler.ingest(try Self.firstFragment(id: 1, type: .reliableMessage), now: .ms(0)).isIncomplete)
        #expect(reassembler.ingest(try Self.firstFragment(id: 2, type: .reliableBytes), now: .ms(1)).isIncomplete)
        #expect(reassembler.ingest(try Self.firstFragment(id: 3, type: .reliableMessage), now: .ms(2)).isDropped)
        // An unreliable message cannot evict reliable ones either.
        #expect(reassembler.ingest(try Self.firstFragment(id: 4, type: .unreliableMessage), now: .ms(3)).isDropped)
        #expect(reassembler.statistics.messagesDroppedOverCapacity == 2)
        #expect(reassembler.statistics.messagesEvicted == 0)
        #expect(reassembler.incompleteMessages == 2)
        #expect(reassembler.bufferedBytes == 6_000)
        // Single-fragment messages need no room.
        let small = try Frames.parsedFragments([9], type: .reliableMessage, messageID: 10, timestamp: 0)
        #expect(reassembler.ingest(small[0], now: .ms(4)).message?.bytes == [9])
    }

    @Test("reliable messages beyond the byte cap are dropped")
    func reliableByteCap() throws {
        var reassembler = Reassembler(configuration: .init(maxBufferedBytes: 5_000))
        #expect(reassembler.ingest(try Self.firstFragment(id: 1, type: .reliableMessage), now: .zero).isIncomplete)
        #expect(reassembler.ingest(try Self.firstFragment(id: 2, type: .reliableMessage), now: .zero).isDropped)
        #expect(reassembler.ingest(try Self.firstFragment(id: 3, type: .reliableMessage, size: 2_000), now: .zero).isIncomplete)
        #expect(reassembler.bufferedBytes == 5_000)
        // A message larger than the whole budget is refused even when nothing is buffered.
        var empty = Reassembler(configuration: .init(maxBufferedBytes: 2_999))
        #expect(empty.ingest(try Self.firstFragment(id: 1, type: .unreliableMessage), now: .zero).isDropped)
        #expect(empty.statistics.messagesDroppedOverCapacity == 1)
        #expect(empty.bufferedBytes == 0)
        #expect(reassembler.statistics.messagesDroppedOverCapacity == 1)
    }

    @Test("a new unreliable message evicts the oldest unreliable one over the count cap")
    func unreliableEvictionByCount() throws {
        var reassembler = Reassembler(configuration: .init(maxIncompleteMessages: 3))
        let u1 = try Frames.parsedFragments(SplitMix64(seed: 11).bytesOf(count: 3_000), type: .unreliableMessage, messageID: 1, timestamp: 1)
        let u2 = try Frames.parsedFragments(SplitMix64(seed: 12).bytesOf(count: 3_000), type: .unreliableMessage, messageID: 2, timestamp: 2)
        let u3 = try Frames.parsedFragments(SplitMix64(seed: 13).bytesOf(count: 3_000), type: .unreliableBytes, messageID: 3, timestamp: 3)
        // Ingested out of age order to show that age, not key order, picks the victim.
        #expect(reassembler.ingest(u2[0], now: .ms(10)).isIncomplete)
        #expect(reassembler.ingest(try Self.firstFragment(id: 9, type: .reliableMessage), now: .ms(0)).isIncomplete)
        #expect(reassembler.ingest(u1[0], now: .ms(20)).isIncomplete)
        #expect(reassembler.ingest(u3[0], now: .ms(30)).isIncomplete)
        #expect(reassembler.statistics.messagesEvicted == 1)
        #expect(reassembler.statistics.messagesDroppedOverCapacity == 0)
        #expect(reassembler.incompleteMessages == 3)
        #expect(reassembler.bufferedBytes == 9_000)
        // u2 (the oldest unreliable) is gone; u1, u3 and the reliable message remain.
        #expect(reassembler.ingest(u1[1], now: .ms(31)).isIncomplete)
        #expect(reassembler.ingest(u1[2], now: .ms(31)).message?.timestamp == 1)
        #expect(reassembler.ingest(u3[1], now: .ms(32)).isIncomplete)
        #expect(reassembler.ingest(u3[2], now: .ms(32)).message?.timestamp == 3)
        #expect(reassembler.incompleteMessages == 1)
        #expect(reassembler.bufferedBytes == 3_000)
        // A reliable message does not evict anything.
        var full = Reassembler(configuration: .init(maxIncompleteMessages: 1))
        #expect(full.ingest(u1[0], now: .zero).isIncomplete)
        #expect(full.ingest(try Self.firstFragment(id: 7, type: .reliableBytes), now: .zero).isDropped)
        #expect(full.statistics.messagesEvicted == 0)
        #expect(full.statistics.messagesDroppedOverCapacity == 1)
    }

    @Test("a new unreliable message evicts the oldest unreliable ones over the byte cap")
    func unreliableEvictionByBytes() throws {
        var reassembler = Reassembler(configuration: .init(maxBufferedBytes: 12_000))
        #expect(reassembler.ingest(try Self.firstFragment(id: 1, type: .unreliableMessage, size: 5_000), now: .ms(1)).isIncomplete)
        #expect(reassembler.ingest(try Self.firstFragment(id: 2, type: .unreliableMessage, size: 5_000), now: .ms(2)).isIncomplete)
        #expect(reassembler.bufferedBytes == 10_000)
        // 10,000 + 11,000 needs both older messages gone.
        #expect(reassembler.ingest(try Self.firstFragment(id: 3, type: .unreliableBytes, size: 11_000), now: .ms(3)).isIncomplete)
        #expect(reassembler.statistics.messagesEvicted == 2)
        #expect(reassembler.bufferedBytes == 11_000)
        #expect(reassembler.incompleteMessages == 1)
    }

    @Test("expire drops incomplete unreliable messages after the timeout, never reliable ones")
    func expiry() throws {
        var reassembler = Reassembler(configuration: .init(incompleteTimeout: .seconds(3)))
        #expect(reassembler.nextExpiry == nil)
        #expect(reassembler.ingest(try Self.firstFragment(id: 1, type: .reliableMessage), now: .ms(0)).isIncomplete)
        #expect(reassembler.nextExpiry == nil)
        #expect(reassembler.ingest(try Self.firstFragment(id: 2, type: .unreliableMessage), now: .ms(500)).isIncomplete)
        #expect(reassembler.ingest(try Self.firstFragment(id: 3, type: .unreliableBytes, size: 4_000), now: .ms(1_000)).isIncomplete)
        #expect(reassembler.nextExpiry == .ms(3_500))

        #expect(reassembler.expire(now: .ms(3_499)) == 0)
        #expect(reassembler.expire(now: .ms(3_500)) == 1)
        #expect(reassembler.statistics.messagesDroppedTimedOut == 1)
        #expect(reassembler.nextExpiry == .ms(4_000))
        #expect(reassembler.bufferedBytes == 7_000)
        #expect(reassembler.expire(now: .ms(60_000)) == 1)
        #expect(reassembler.statistics.messagesDroppedTimedOut == 2)
        #expect(reassembler.nextExpiry == nil)
        #expect(reassembler.incompleteMessages == 1)
        #expect(reassembler.bufferedBytes == 3_000)
        #expect(reassembler.expire(now: .ms(3_600_000)) == 0)
        // The reliable message still completes.
        let rest = try Frames.parsedFragments(Array(repeating: 1, count: 3_000), type: .reliableMessage, messageID: 1, timestamp: 1)
        #expect(reassembler.ingest(rest[1], now: .ms(3_600_000)).isIncomplete)
        #expect(reassembler.ingest(rest[2], now: .ms(3_600_000)).message?.bytes == Array(repeating: 1, count: 3_000))
        #expect(reassembler.bufferedBytes == 0)
    }

    @Test("discard forgets one stream's messages and frees their bytes")
    func discard() throws {
        var reassembler = Reassembler()
        let a1 = try Frames.parsedFragments(Array(repeating: 1, count: 3_000), streamID: 100, type: .reliableMessage, messageID: 1, timestamp: 0)
        let a2 = try Frames.parsedFragments(Array(repeating: 2, count: 5_000), streamID: 100, type: .unreliableMessage, messageID: 2, timestamp: 0)
        let b1 = try Frames.parsedFragments(Array(repeating: 3, count: 2_000), streamID: 101, type: .reliableMessage, messageID: 1, timestamp: 0)
        let g1 = try Frames.parsedFragments(Array(repeating: 4, count: 4_000), streamID: 100, type: .reliableMessage, subgroupID: 1, messageID: 1, timestamp: 0)
        for frame in [a1[0], a2[0], b1[0], g1[0]] { #expect(reassembler.ingest(frame, now: .zero).isIncomplete) }
        #expect(reassembler.bufferedBytes == 14_000)
        #expect(reassembler.incompleteMessages == 4)

        reassembler.discard(streamID: 100, subgroupID: 0)
        #expect(reassembler.bufferedBytes == 6_000)
        #expect(reassembler.incompleteMessages == 2)
        reassembler.discard(streamID: 555, subgroupID: 0)
        #expect(reassembler.bufferedBytes == 6_000)
        reassembler.discard(streamID: 100, subgroupID: 1)
        #expect(reassembler.bufferedBytes == 2_000)
        // Stream 101 is intact.
        #expect(reassembler.ingest(b1[1], now: .zero).message?.bytes == Array(repeating: 3, count: 2_000))
        #expect(reassembler.bufferedBytes == 0)
        #expect(reassembler.incompleteMessages == 0)
    }
}

@Suite("Fragment aggregator")
struct FragmentAggregatorTests {
    @Test("aggregates shuffled bytes-type fragments into the exact 4 MiB send", arguments: [SessionType.reliableBytes, .unreliableBytes])
    func aggregate4MiB(type: SessionType) throws {
        var generator = SplitMix64(seed: 0x4D1B + UInt64(type.rawValue))
        let original = generator.bytes(4 * 1024 * 1024)
        var fragments = try Frames.parsedFragments(original, streamID: 700, type: type, messageID: 42, timestamp: 0xFEED).map(ReceivedFragment.init)
        #expect(fragments.count == 3_496)
        generator.shuffle(&fragments)

        var aggregator = FragmentAggregator(streamID: 700, sessionType: type)
        var results: [(bytes: [UInt8], timestamp: UInt64)] = []
        for (index, fragment) in fragments.enumerated() {
            if let whole = aggregator.add(fragment) {
                #expect(index == fragments.count - 1, "completes exactly on the last missing fragment")
                results.append(whole)
            }
        }
        #expect(results.count == 1)
        let result = try #require(results.first)
        let identical = result.bytes == original
        #expect(identical, "aggregated bytes equal the original 4 MiB")
        #expect(result.timestamp == 0xFEED)
        #expect(aggregator.statistics.completedMessages == 1)
        #expect(aggregator.statistics.duplicateFragments == 0)
    }

    @Test("refuses fragments that contradict the wire rules")
    func rejects() throws {
        let original = SplitMix64(seed: 6).bytesOf(count: 5_000)
        let fragments = try Frames.parsedFragments(original, type: .reliableBytes, messageID: 1, timestamp: 2).map(ReceivedFragment.init)
        #expect(fragments.count == 5)
        let base = fragments[1]
        var aggregator = FragmentAggregator(streamID: 100)

        func variant(_ change: (inout ReceivedFragment) -> Void) -> ReceivedFragment {
            var copy = base
            change(&copy)
            return copy
        }
        let bad: [ReceivedFragment] = [
            variant { $0.fragmentSize = 0 },
            variant { $0.fragmentSize = -1 },
            variant { $0.fragmentSize = 65_536 },
            variant { $0.totalLength = Limits.maxBytesSize + 1 },
            variant { $0.totalLength = Int(UInt32.max) + 1 },
            variant { $0.offset = -1200 },
            variant { $0.offset = 600 },  // not on a fragment boundary
            variant { $0.offset = 6_000 },  // past the end
            variant { $0.offset = 5_000 },  // exactly the end
            variant { $0.offset = Int(UInt32.max) + 1_200 },
            variant { $0.bytes.removeLast() },
            variant { $0.bytes.append(0) },
            variant { $0.bytes = [] },
            variant {  // 10,000 one-byte fragments exceed the count limit
                $0.totalLength = 10_000
                $0.fragmentSize = 1
                $0.offset = 1
                $0.bytes = [0]
            },
            variant {  // the empty send has its one fragment at offset 0
                $0.totalLength = 0
                $0.offset = 1_200
                $0.bytes = []
            },
        ]
        for fragment in bad {
            #expect(aggregator.add(fragment) == nil)
        }
        #expect(aggregator.statistics == Reassembler.Statistics())

        // The valid fragments still aggregate.
        var result: [UInt8]?
        for fragment in fragments.reversed() {
            if let whole = aggregator.add(fragment) { result = whole.bytes }
        }
        #expect(result == original)
    }

    @Test("the empty send and a one-fragment send complete at once")
    func smallSends() {
        var aggregator = FragmentAggregator(streamID: 100, sessionType: .unreliableBytes)
        let empty = aggregator.add(ReceivedFragment(messageID: 0, offset: 0, totalLength: 0, fragmentSize: 1_200, timestamp: 4, bytes: []))
        #expect(empty?.bytes == [])
        #expect(empty?.timestamp == 4)
        let one = aggregator.add(ReceivedFragment(messageID: 1, offset: 0, totalLength: 3, fragmentSize: 1_200, timestamp: 5, bytes: [1, 2, 3]))
        #expect(one?.bytes == [1, 2, 3])
        #expect(ReceivedFragment(messageID: 1, offset: 0, totalLength: 3, fragmentSize: 1_200, timestamp: 5, bytes: [1, 2, 3]).isLast)
    }

    @Test("counts duplicates and expires unreliable sends")
    func duplicatesAndExpiry() throws {
        let original = SplitMix64(seed: 7).bytesOf(count: 2_500)
        let fragments = try Frames.parsedFragments(original, type: .unreliableBytes, messageID: 3, timestamp: 2).map(ReceivedFragment.init)
        #expect(fragments.map(\.isLast) == [false, false, true])
        var aggregator = FragmentAggregator(
            streamID: 100,
            sessionType: .unreliableBytes,
            configuration: .init(incompleteTimeout: .seconds(1))
        )
        #expect(aggregator.add(fragments[0], now: .ms(0)) == nil)
        #expect(aggregator.add(fragments[0], now: .ms(1)) == nil)
        #expect(aggregator.statistics.duplicateFragments == 1)
        #expect(aggregator.expire(now: .ms(999)) == 0)
        #expect(aggregator.expire(now: .ms(1_000)) == 1)
        #expect(aggregator.statistics.messagesDroppedTimedOut == 1)
        // After expiry the send starts over.
        #expect(aggregator.add(fragments[1], now: .ms(2_000)) == nil)
        #expect(aggregator.add(fragments[2], now: .ms(2_000)) == nil)
        #expect(aggregator.add(fragments[0], now: .ms(2_000))?.bytes == original)
    }
}

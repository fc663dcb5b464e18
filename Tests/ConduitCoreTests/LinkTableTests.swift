import Testing

@testable import ConduitCore

@testable import ConduitARQ
@testable import ConduitImpairment
/// The engine's tables against a plain `Dictionary` under the same random operations: the same
/// contents after every step, whatever the order of inserts and removals (linear probing's
/// backward-shift deletion is where such tables break).
@Suite("Reliable link: frame and channel tables")
struct LinkTableTests {
    @Test(arguments: [UInt64(1), 7, 1 << 20])
    func handleIndexMatchesADictionary(stride: UInt64) {
        var random = SeededRandom(seed: 0x7AB1E + stride)
        var table = LinkSlotMap<UInt64, Int, LinkHandleIndex>()
        var reference: [UInt64: Int] = [:]
        var nextHandle: UInt64 = 0
        for step in 0..<20_000 {
            if reference.isEmpty || random.below(100) < 55 {
                let handle = nextHandle
                nextHandle += stride
                table.insert(step, for: handle)
                reference[handle] = step
            } else if random.below(4) == 0 {
                // Resolve the oldest: the usual order.
                let oldest = reference.keys.min()!
                #expect(table.removeValue(forKey: oldest) == reference.removeValue(forKey: oldest))
            } else {
                let victim = reference.keys.randomElement(using: &random)!
                #expect(table.removeValue(forKey: victim) == reference.removeValue(forKey: victim))
            }
            if step % 997 == 0 {
                #expect(table.count == reference.count)
                for (key, value) in reference { #expect(table[key] == value) }
                #expect(table[nextHandle] == nil)
                var seen: [UInt64: Int] = [:]
                table.forEach { seen[$0] = $1 }
                #expect(seen == reference)
            }
        }
        #expect(table.removeValue(forKey: nextHandle + 1) == nil)
    }

    @Test func hashedIndexRemembersTheLastKeyOnlyWhileItIsThere() {
        var table = LinkSlotMap<UInt32, String, LinkHashedIndex<UInt32>>()
        table.insert("a", for: 1)
        table.insert("b", for: 2)
        #expect(table.update(1) { $0 } == "a")
        #expect(table.removeValue(forKey: 1) == "a")
        #expect(table[1] == nil)
        table.insert("c", for: 3)  // takes the freed slot
        #expect(table[1] == nil && table[3] == "c" && table[2] == "b")
        #expect(table.read(2) { $0 + "!" } == "b!")
    }

    @Test func sentItemsKeepOrderInlineAndBeyond() {
        var items = LinkSentItems()
        #expect(items.isEmpty && Array(items).isEmpty)
        items.append(.data(5))
        #expect(Array(items) == [.data(5)])
        items.append(.forward(channel: 2, cumulativeSequence: 9))
        items.append(.ping)
        #expect(Array(items) == [.data(5), .forward(channel: 2, cumulativeSequence: 9), .ping])
        #expect(items == [.data(5), .forward(channel: 2, cumulativeSequence: 9), .ping])
    }
}

@Suite("Reliable link: delivery queue")
struct LinkDeliveryQueueTests {
    /// A reader that takes one frame at a time while one more arrives each time: the queue never
    /// empties, yet what it holds stays bounded and the frames come out in order.
    @Test func takingOneAtATimeWhileFramesArriveStaysBounded() {
        var queue = LinkDeliveryQueue()
        var next: UInt32 = 0
        var expected: UInt32 = 0
        func add() {
            withUnsafeBytes(of: next.bigEndian) { queue.append(channel: 1, sequence: next, payload: $0, expiresAt: nil) }
            next += 1
        }
        for _ in 0..<10 { add() }
        var largest = 0
        for _ in 0..<20_000 {
            add()
            let (entry, bytes) = queue.popFirst()!
            #expect(entry.sequence == expected && bytes == withUnsafeBytes(of: expected.bigEndian, Array.init))
            expected += 1
            largest = max(largest, queue.storedFrames)
        }
        #expect(queue.count == 10)
        #expect(largest <= 200)
    }
}

/// A map whose values live in a flat array, for the engine's per-frame and per-channel tables.
///
/// Why not a `Dictionary`: changing a value in place through `dictionary[key]?.field = x` goes
/// through the dictionary's `modify` coroutine, whose frame the runtime allocates on the heap
/// (several mallocs per frame sent, as the ReliabilityBenchmarks suite showed). Here the
/// dictionary only maps keys to slots and is never mutated in place; values change through
/// ``update(_:_:)`` with a direct array access. Freed slots are reused, so the array is as large
/// as the most entries ever held at once: bounded wherever the caller bounds its entries.
struct LinkSlotMap<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private var slotOf: [Key: Int] = [:]
    private var values: ContiguousArray<Value?> = []
    private var freeSlots: [Int] = []

    init() {}

    var count: Int { slotOf.count }
    var isEmpty: Bool { slotOf.isEmpty }

    func contains(_ key: Key) -> Bool { slotOf[key] != nil }

    /// A copy of the value for `key` (a copy: for a value holding arrays, prefer ``update(_:_:)``,
    /// which reaches it in place).
    @inline(__always)
    subscript(key: Key) -> Value? {
        guard let slot = slotOf[key] else { return nil }
        return values[slot]
    }

    /// Changes the value for `key` in place; nil (and `body` not called) when there is none.
    @inline(__always) @discardableResult
    mutating func update<Result>(_ key: Key, _ body: (inout Value) -> Result) -> Result? {
        guard let slot = slotOf[key] else { return nil }
        return body(&values[slot]!)
    }

    /// Adds or replaces the value for `key`.
    mutating func insert(_ value: Value, for key: Key) {
        if let slot = slotOf[key] {
            values[slot] = value
        } else if let slot = freeSlots.popLast() {
            values[slot] = value
            slotOf[key] = slot
        } else {
            slotOf[key] = values.count
            values.append(value)
        }
    }

    /// Removes and returns the value for `key`.
    @discardableResult
    mutating func removeValue(forKey key: Key) -> Value? {
        guard let slot = slotOf.removeValue(forKey: key) else { return nil }
        let value = values[slot]
        values[slot] = nil
        freeSlots.append(slot)
        return value
    }

    /// Every entry, in no particular order.
    func forEach(_ body: (Key, Value) -> Void) {
        for (key, slot) in slotOf { body(key, values[slot]!) }
    }
}

import ConduitCore

/// A map whose values live in a flat array, for the engine's per-frame and per-channel tables.
///
/// Why not a `Dictionary`: changing a value in place through `dictionary[key]?.field = x` goes
/// through the dictionary's `modify` coroutine, whose frame the runtime allocates on the heap
/// (several mallocs per frame sent, as the ARQEngineBenchmarks suite showed). Here the
/// dictionary only maps keys to slots and is never mutated in place; values change through
/// ``update(_:_:)`` with a direct array access. Freed slots are reused, so the array is as large
/// as the most entries ever held at once: bounded wherever the caller bounds its entries.
///
/// `Index` finds a key's slot: ``LinkHashedIndex`` (a dictionary) for keys the peer chooses,
/// ``LinkHandleIndex`` for the engine's own frame handles.
struct LinkSlotMap<Key: Hashable & Sendable, Value: Sendable, Index: LinkSlotIndex<Key>>: Sendable {
    private var slotOf = Index()
    private var values: ContiguousArray<Value?> = []
    private var freeSlots: [Int] = []

    init() {}

    var count: Int { slotOf.count }
    var isEmpty: Bool { slotOf.count == 0 }

    func contains(_ key: Key) -> Bool { slotOf.slot(of: key) != nil }

    /// A copy of the value for `key` (a copy: for a value holding arrays, prefer ``update(_:_:)``,
    /// which reaches it in place).
    @inline(__always)
    subscript(key: Key) -> Value? {
        guard let slot = slotOf.slot(of: key) else { return nil }
        return values[slot]
    }

    /// Reads the value for `key` in place (the subscript returns a copy, and copying a value that
    /// holds arrays retains and releases each of them); nil when there is none.
    @inline(__always)
    func read<Result>(_ key: Key, _ body: (borrowing Value) -> Result) -> Result? {
        guard let slot = slotOf.slot(of: key) else { return nil }
        return values.withUnsafeBufferPointer { values in
            switch values[slot] {
            case .some(let value): body(value)
            case .none: nil
            }
        }
    }

    /// Changes the value for `key` in place; nil (and `body` not called) when there is none.
    @inline(__always) @discardableResult
    mutating func update<Result>(_ key: Key, _ body: (inout Value) -> Result) -> Result? {
        guard let slot = slotOf.slot(of: key) else { return nil }
        slotOf.touch(key, slot)
        return body(&values[slot]!)
    }

    /// Adds or replaces the value for `key`.
    mutating func insert(_ value: Value, for key: Key) {
        if let slot = slotOf.slot(of: key) {
            values[slot] = value
        } else if let slot = freeSlots.popLast() {
            values[slot] = value
            slotOf.set(slot, for: key)
        } else {
            slotOf.set(values.count, for: key)
            values.append(value)
        }
    }

    /// Removes and returns the value for `key`.
    @discardableResult
    mutating func removeValue(forKey key: Key) -> Value? {
        guard let slot = slotOf.remove(key) else { return nil }
        let value = values[slot].take()
        freeSlots.append(slot)
        return value
    }

    /// Every entry, in no particular order.
    func forEach(_ body: (Key, Value) -> Void) {
        slotOf.forEach { key, slot in body(key, values[slot]!) }
    }
}

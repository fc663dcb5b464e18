import ConduitCore

/// Where a ``LinkSlotMap`` finds a key's slot.
protocol LinkSlotIndex<Key>: Sendable {
    associatedtype Key: Hashable & Sendable
    init()
    var count: Int { get }
    func slot(of key: Key) -> Int?
    mutating func set(_ slot: Int, for key: Key)
    mutating func remove(_ key: Key) -> Int?
    func forEach(_ body: (Key, Int) -> Void)
    /// `key` (at `slot`) was just used: an index may keep it at hand for the next lookup.
    mutating func touch(_ key: Key, _ slot: Int)
}

extension LinkSlotIndex {
    @inline(__always)
    mutating func touch(_ key: Key, _ slot: Int) {}
}

/// A `Dictionary`: SipHash, so keys a peer chooses (channel IDs) cannot be made to collide.
struct LinkHashedIndex<Key: Hashable & Sendable>: LinkSlotIndex {
    private var slots: [Key: Int] = [:]
    /// The last key looked up or set, and its slot: most links use one or two channels, and
    /// consecutive lookups are mostly for the same one, so most lookups skip the hash.
    private var lastKey: Key?
    private var lastSlot = 0

    init() {}

    var count: Int { slots.count }

    @inline(__always)
    func slot(of key: Key) -> Int? {
        if let lastKey, lastKey == key { return lastSlot }
        return slots[key]
    }

    mutating func set(_ slot: Int, for key: Key) {
        slots[key] = slot
        touch(key, slot)
    }

    @inline(__always)
    mutating func touch(_ key: Key, _ slot: Int) {
        lastKey = key
        lastSlot = slot
    }

    mutating func remove(_ key: Key) -> Int? {
        if lastKey == key { lastKey = nil }
        return slots.removeValue(forKey: key)
    }

    func forEach(_ body: (Key, Int) -> Void) {
        for (key, slot) in slots { body(key, slot) }
    }
}

/// Open addressing with linear probing and a multiplicative (Fibonacci) hash, for the engine's
/// own frame handles: a hash of a `UInt64` through `Hasher` (SipHash) was a fifth of the engine's
/// time per frame. Only for keys the peer does not choose (a fixed hash can be made to collide).
/// Deletion shifts the following entries back (Knuth's algorithm R), so there are no tombstones;
/// the table doubles at 50 % load and never shrinks below what it held at once.
struct LinkHandleIndex: LinkSlotIndex {
    typealias Key = UInt64

    private var keys: [UInt64] = []
    private var slots: [Int] = []
    /// `slots[i] == Self.empty` marks a free bucket.
    private static let empty = -1
    private var shift = 64
    private(set) var count = 0

    init() {}

    @inline(__always)
    private func bucket(_ key: UInt64) -> Int {
        Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> UInt64(shift))
    }

    @inline(__always)
    func slot(of key: UInt64) -> Int? {
        guard count > 0 else { return nil }
        let mask = slots.count - 1
        var index = bucket(key)
        while slots[index] != Self.empty {
            if keys[index] == key { return slots[index] }
            index = (index + 1) & mask
        }
        return nil
    }

    mutating func set(_ slot: Int, for key: UInt64) {
        if (count + 1) * 2 > slots.count { grow() }
        let mask = slots.count - 1
        var index = bucket(key)
        while slots[index] != Self.empty {
            if keys[index] == key {
                slots[index] = slot
                return
            }
            index = (index + 1) & mask
        }
        keys[index] = key
        slots[index] = slot
        count += 1
    }

    mutating func remove(_ key: UInt64) -> Int? {
        guard count > 0 else { return nil }
        let mask = slots.count - 1
        var index = bucket(key)
        while slots[index] != Self.empty, keys[index] != key { index = (index + 1) & mask }
        guard slots[index] != Self.empty else { return nil }
        let removed = slots[index]
        // Algorithm R: move back any later entry of the run whose home bucket is not between the
        // hole and it (cyclically), so every entry stays reachable from its home bucket.
        var hole = index
        var next = (hole + 1) & mask
        while slots[next] != Self.empty {
            let home = bucket(keys[next])
            let fitsBetween = hole <= next ? (hole < home && home <= next) : (hole < home || home <= next)
            if !fitsBetween {
                keys[hole] = keys[next]
                slots[hole] = slots[next]
                hole = next
            }
            next = (next + 1) & mask
        }
        slots[hole] = Self.empty
        count -= 1
        return removed
    }

    func forEach(_ body: (UInt64, Int) -> Void) {
        for index in slots.indices where slots[index] != Self.empty { body(keys[index], slots[index]) }
    }

    private mutating func grow() {
        let oldKeys = keys
        let oldSlots = slots
        let capacity = max(16, slots.count * 2)
        keys = [UInt64](repeating: 0, count: capacity)
        slots = [Int](repeating: Self.empty, count: capacity)
        shift = 64 - capacity.trailingZeroBitCount
        count = 0
        for index in oldSlots.indices where oldSlots[index] != Self.empty { set(oldSlots[index], for: oldKeys[index]) }
    }
}

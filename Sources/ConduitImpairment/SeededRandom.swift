import ConduitCore

/// SplitMix64 (Steele, Lea and Flood, 2014): a tiny seeded generator whose output is fixed by its
/// seed on every platform, so impaired runs replay exactly.
public struct SeededRandom: RandomNumberGenerator, Sendable, Hashable {
    /// The generator's state; the next output is fixed by it.
    public private(set) var state: UInt64

    /// Makes a generator whose outputs are fixed by `seed`.
    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A uniform value in `0..<1`.
    public mutating func unit() -> Double { Double(next() >> 11) * 0x1.0p-53 }

    /// True with probability `p`.
    public mutating func chance(_ p: Double) -> Bool { p > 0 && unit() < p }

    /// A value in `0..<bound` (modulo bias is negligible for the bounds used here).
    public mutating func below(_ bound: Int) -> Int {
        precondition(bound > 0)
        return Int(next() % UInt64(bound))
    }

    /// `count` pseudo-random bytes, eight per draw, low byte first.
    public mutating func bytes(_ count: Int) -> [UInt8] {
        // With no capacity the initializer writes its count into the one shared empty-array
        // storage, a write ThreadSanitizer rightly reports when two tasks do it.
        guard count > 0 else { return [] }
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            let raw = UnsafeMutableRawBufferPointer(buffer)
            var index = 0
            // Whole words at once: payload generation is on the benchmarks' hot path.
            while index + 8 <= count {
                raw.storeBytes(of: next().littleEndian, toByteOffset: index, as: UInt64.self)
                index += 8
            }
            if index < count {
                var word = next()
                while index < count {
                    buffer[index] = UInt8(truncatingIfNeeded: word)
                    word >>= 8
                    index += 1
                }
            }
            initialized = count
        }
    }

    /// A size in `0...max`, log-uniformly distributed: every power-of-two band is equally likely
    /// (0 stands for the empty payload), as `conduit send --size MIN-MAX` and the tests draw them.
    public mutating func logUniformSize(max: Int) -> Int {
        let bands = Int.bitWidth - max.leadingZeroBitCount
        let band = Int(next() % UInt64(bands + 1))
        guard band > 0 else { return 0 }
        let low = 1 << (band - 1)
        let high = Swift.min(max, (1 << band) - 1)
        return low + Int(next() % UInt64(high - low + 1))
    }
}

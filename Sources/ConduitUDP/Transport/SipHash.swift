/// SipHash-2-4 with a 128-bit output (Aumasson and Bernstein, 2012; public domain reference
/// algorithm), for the listener's stateless handshake cookies. Not a general-purpose MAC API.
struct SipHash128 {
    let k0: UInt64
    let k1: UInt64

    init(key: (UInt64, UInt64)) {
        (k0, k1) = key
    }

    func hash(_ message: [UInt8]) -> (UInt64, UInt64) {
        var v0: UInt64 = 0x736f_6d65_7073_6575 ^ k0
        var v1: UInt64 = 0x646f_7261_6e64_6f6d ^ k1 ^ 0xee
        var v2: UInt64 = 0x6c79_6765_6e65_7261 ^ k0
        var v3: UInt64 = 0x7465_6462_7974_6573 ^ k1

        func round() {
            v0 &+= v1; v1 = v1.rotl(13); v1 ^= v0; v0 = v0.rotl(32)
            v2 &+= v3; v3 = v3.rotl(16); v3 ^= v2
            v0 &+= v3; v3 = v3.rotl(21); v3 ^= v0
            v2 &+= v1; v1 = v1.rotl(17); v1 ^= v2; v2 = v2.rotl(32)
        }
        func compress(_ m: UInt64) {
            v3 ^= m
            round(); round()
            v0 ^= m
        }

        let whole = message.count & ~7
        var index = 0
        while index < whole {
            var m: UInt64 = 0
            for j in 0..<8 { m |= UInt64(message[index + j]) << (8 * j) }
            compress(m)
            index += 8
        }
        var last = UInt64(truncatingIfNeeded: message.count) << 56
        for j in 0..<(message.count - whole) { last |= UInt64(message[whole + j]) << (8 * j) }
        compress(last)

        v2 ^= 0xee
        round(); round(); round(); round()
        let first = v0 ^ v1 ^ v2 ^ v3
        v1 ^= 0xdd
        round(); round(); round(); round()
        let second = v0 ^ v1 ^ v2 ^ v3
        return (first, second)
    }
}

extension UInt64 {
    fileprivate func rotl(_ n: UInt64) -> UInt64 { (self << n) | (self >> (64 - n)) }
}

/// HMAC-SHA256 (RFC 2104 over FIPS 180-4's SHA-256): what the relay signs and checks join tokens
/// with, and all it needs of a cryptography library.
///
/// Written here rather than taken from swift-crypto: on Linux that package compiles BoringSSL's
/// 360 C files into every build that links the relay (about a minute on two cores, in each of CI's
/// builds), for this one function. SHA-256 has no secret-dependent branches or table lookups, and
/// `isValid` compares in constant time. Checked against FIPS 180-4's and RFC 4231's test vectors
/// (`HMACSHA256Tests`).
enum HMACSHA256 {
    static let outputSize = 32
    private static let blockSize = 64

    /// A key with its padded blocks already hashed (RFC 2104 section 4's note): each code then
    /// costs only the message's blocks and one more, which matters when a storm of joins with
    /// forged tokens each needs checking.
    struct Key: Sendable {
        fileprivate let inner: SHA256
        fileprivate let outer: SHA256

        init(_ key: [UInt8]) {
            // Section 2: a key longer than a block is hashed first; then zero-padded.
            var block = key.count > blockSize ? SHA256.hash(key) : key
            block += repeatElement(0, count: blockSize - block.count)
            var inner = SHA256()
            inner.update(block.map { $0 ^ 0x36 })
            var outer = SHA256()
            outer.update(block.map { $0 ^ 0x5C })
            self.inner = inner
            self.outer = outer
        }
    }

    /// The 32-byte authentication code of `message` under `key`.
    static func authenticationCode(for message: some Collection<UInt8>, key: Key) -> [UInt8] {
        var inner = key.inner
        inner.update(message)
        var outer = key.outer
        outer.update(inner.finalize())
        return outer.finalize()
    }

    static func authenticationCode(for message: some Collection<UInt8>, key: [UInt8]) -> [UInt8] {
        authenticationCode(for: message, key: Key(key))
    }

    /// Whether `code` is `message`'s code under `key`, compared in time that depends on its length only.
    static func isValid(_ code: some Collection<UInt8>, for message: some Collection<UInt8>, key: Key) -> Bool {
        guard code.count == outputSize else { return false }
        var difference: UInt8 = 0
        for (a, b) in zip(code, authenticationCode(for: message, key: key)) { difference |= a ^ b }
        return difference == 0
    }

    static func isValid(_ code: some Collection<UInt8>, for message: some Collection<UInt8>, key: [UInt8]) -> Bool {
        isValid(code, for: message, key: Key(key))
    }
}

/// SHA-256, FIPS 180-4 section 6.2, fed in pieces.
struct SHA256: Sendable {
    private var state: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) =
        (0x6A09_E667, 0xBB67_AE85, 0x3C6E_F372, 0xA54F_F53A, 0x510E_527F, 0x9B05_688C, 0x1F83_D9AB, 0x5BE0_CD19)
    /// Bytes of a block not yet complete (fewer than 64).
    private var pending: [UInt8] = []
    private var length: UInt64 = 0

    static func hash(_ message: some Collection<UInt8>) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(message)
        return hasher.finalize()
    }

    mutating func update(_ bytes: some Collection<UInt8>) {
        if bytes.withContiguousStorageIfAvailable({ update(UnsafeRawBufferPointer($0)) }) == nil {
            Array(bytes).withUnsafeBytes { update($0) }
        }
    }

    /// Whole blocks are compressed where they lie; only a partial block is copied.
    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        length &+= UInt64(bytes.count)
        var rest = bytes[...]
        if !pending.isEmpty {
            let taken = min(64 - pending.count, rest.count)
            pending += rest.prefix(taken)
            rest = rest.dropFirst(taken)
            guard pending.count == 64 else { return }
            pending.withUnsafeBytes { compress($0.baseAddress!) }
            pending.removeAll(keepingCapacity: true)
        }
        while rest.count >= 64 {
            compress(UnsafeRawBufferPointer(rebasing: rest.prefix(64)).baseAddress!)
            rest = rest.dropFirst(64)
        }
        pending += rest
    }

    /// Section 5.1.1: a 1 bit, zeros to 56 bytes mod 64, then the length in bits, big-endian.
    mutating func finalize() -> [UInt8] {
        let bits = length &* 8
        var tail: [UInt8] = [0x80]
        tail += repeatElement(0, count: (119 - pending.count) % 64)
        for shift in stride(from: 56, through: 0, by: -8) { tail.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
        update(tail)
        let words = [state.0, state.1, state.2, state.3, state.4, state.5, state.6, state.7]
        return words.flatMap { word in [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: word >> UInt32($0)) } }
    }

    private mutating func compress(_ block: UnsafeRawPointer) {
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
            for t in 0..<16 { w[t] = UInt32(bigEndian: block.loadUnaligned(fromByteOffset: 4 * t, as: UInt32.self)) }
            for t in 16..<64 {
                let s0 = w[t - 15].rotatedRight(7) ^ w[t - 15].rotatedRight(18) ^ (w[t - 15] >> 3)
                let s1 = w[t - 2].rotatedRight(17) ^ w[t - 2].rotatedRight(19) ^ (w[t - 2] >> 10)
                w[t] = w[t - 16] &+ s0 &+ w[t - 7] &+ s1
            }
            var (a, b, c, d, e, f, g, h) = state
            Self.k.withUnsafeBufferPointer { k in
                for t in 0..<64 {
                    let t1 = h &+ (e.rotatedRight(6) ^ e.rotatedRight(11) ^ e.rotatedRight(25)) &+ ((e & f) ^ (~e & g)) &+ k[t] &+ w[t]
                    let t2 = (a.rotatedRight(2) ^ a.rotatedRight(13) ^ a.rotatedRight(22)) &+ ((a & b) ^ (a & c) ^ (b & c))
                    (h, g, f, e, d, c, b, a) = (g, f, e, d &+ t1, c, b, a, t1 &+ t2)
                }
            }
            state = (state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d, state.4 &+ e, state.5 &+ f, state.6 &+ g, state.7 &+ h)
        }
    }

    /// Section 4.2.2: the first 32 bits of the fractional parts of the cube roots of the first 64 primes.
    private static let k: [UInt32] = [
        0x428A_2F98, 0x7137_4491, 0xB5C0_FBCF, 0xE9B5_DBA5, 0x3956_C25B, 0x59F1_11F1, 0x923F_82A4, 0xAB1C_5ED5,
        0xD807_AA98, 0x1283_5B01, 0x2431_85BE, 0x550C_7DC3, 0x72BE_5D74, 0x80DE_B1FE, 0x9BDC_06A7, 0xC19B_F174,
        0xE49B_69C1, 0xEFBE_4786, 0x0FC1_9DC6, 0x240C_A1CC, 0x2DE9_2C6F, 0x4A74_84AA, 0x5CB0_A9DC, 0x76F9_88DA,
        0x983E_5152, 0xA831_C66D, 0xB003_27C8, 0xBF59_7FC7, 0xC6E0_0BF3, 0xD5A7_9147, 0x06CA_6351, 0x1429_2967,
        0x27B7_0A85, 0x2E1B_2138, 0x4D2C_6DFC, 0x5338_0D13, 0x650A_7354, 0x766A_0ABB, 0x81C2_C92E, 0x9272_2C85,
        0xA2BF_E8A1, 0xA81A_664B, 0xC24B_8B70, 0xC76C_51A3, 0xD192_E819, 0xD699_0624, 0xF40E_3585, 0x106A_A070,
        0x19A4_C116, 0x1E37_6C08, 0x2748_774C, 0x34B0_BCB5, 0x391C_0CB3, 0x4ED8_AA4A, 0x5B9C_CA4F, 0x682E_6FF3,
        0x748F_82EE, 0x78A5_636F, 0x84C8_7814, 0x8CC7_0208, 0x90BE_FFFA, 0xA450_6CEB, 0xBEF9_A3F7, 0xC671_78F2,
    ]
}

extension UInt32 {
    fileprivate func rotatedRight(_ count: UInt32) -> UInt32 { self >> count | self << (32 - count) }
}

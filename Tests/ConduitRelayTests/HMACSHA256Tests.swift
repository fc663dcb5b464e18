@testable import ConduitRelay
import Testing

/// The relay's HMAC-SHA256 against the published vectors: FIPS 180-4's examples (via NIST's
/// "SHA-256 example" document) and RFC 4231 section 4.
@Suite("HMAC-SHA256 (RFC 2104, RFC 4231 vectors)")
struct HMACSHA256Tests {
    static func hex(_ bytes: [UInt8]) -> String { bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined() }

    @Test("SHA-256 of the standard messages, one of them a million bytes", arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
        ("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"),
    ])
    func sha256(message: String, digest: String) {
        #expect(Self.hex(SHA256.hash(Array(message.utf8))) == digest)
    }

    @Test func aMillionAsInPiecesOfUnevenSize() {
        var hasher = SHA256()
        var left = 1_000_000
        var piece = 1
        while left > 0 {
            let size = min(piece, left)
            hasher.update(repeatElement(UInt8(ascii: "a"), count: size))
            left -= size
            piece = piece % 97 + 13
        }
        #expect(Self.hex(hasher.finalize()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    /// Every length from 0 to 129 bytes, so the padding starts at each offset of a block: the
    /// digest of the 130 digests, computed independently (Python's hashlib).
    @Test func everyPaddingOffset() {
        let pattern: [UInt8] = (0..<130).map { (index: Int) -> UInt8 in UInt8((index * 7 + 3) % 256) }
        let digests = (0..<130).flatMap { SHA256.hash(pattern[..<$0]) }
        #expect(Self.hex(SHA256.hash(digests)) == "7d4d3660f01e79b7c40e7cac2d420a7422833ecd3ee0d9de37f36d31bfc52cfe")
    }

    @Test("RFC 4231 test cases 1-4, 6 and 7 (6 and 7: a key longer than a block)", arguments: [
        ([UInt8](repeating: 0x0B, count: 20), Array("Hi There".utf8), "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
        (Array("Jefe".utf8), Array("what do ya want for nothing?".utf8), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        ([UInt8](repeating: 0xAA, count: 20), [UInt8](repeating: 0xDD, count: 50), "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"),
        (Array(1...25), [UInt8](repeating: 0xCD, count: 50), "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"),
        ([UInt8](repeating: 0xAA, count: 131), Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
         "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
        ([UInt8](repeating: 0xAA, count: 131),
         Array("This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.".utf8),
         "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"),
    ])
    func hmac(key: [UInt8], message: [UInt8], code: String) {
        let computed = HMACSHA256.authenticationCode(for: message, key: key)
        #expect(Self.hex(computed) == code)
        #expect(HMACSHA256.isValid(computed, for: message, key: key))
    }

    @Test func aCodeWithAnyBitChangedOrOfAnotherLengthIsInvalid() {
        let key = [UInt8](repeating: 0x0B, count: 20)
        let message = Array("Hi There".utf8)
        let code = HMACSHA256.authenticationCode(for: message, key: key)
        for bit in 0..<(8 * code.count) {
            var changed = code
            changed[bit / 8] ^= 1 << UInt8(bit % 8)
            #expect(!HMACSHA256.isValid(changed, for: message, key: key))
        }
        #expect(!HMACSHA256.isValid(code.dropLast(), for: message, key: key))
        #expect(!HMACSHA256.isValid(code + [0], for: message, key: key))
        #expect(!HMACSHA256.isValid(code, for: message + [0], key: key))
    }
}

import ConduitCore
import ConduitARQ
import ConduitImpairment
import Testing

@Suite("CRC32C")
struct CRC32CTests {
    /// Bit at a time, straight from the polynomial: the reference the fast tables must match.
    static func reference(_ bytes: [UInt8], continuing previous: UInt32 = 0) -> UInt32 {
        var crc = ~previous
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
        }
        return ~crc
    }

    @Test func knownAnswer() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([]) == 0)
    }

    @Test func matchesTheBitwiseReferenceAtEveryLengthAndAlignment() {
        var random = SeededRandom(seed: 32)
        let data = random.bytes(300)
        for start in 0..<9 {
            for length in 0...(data.count - start) where length < 40 || length % 17 == 0 {
                let slice = Array(data[start..<(start + length)])
                #expect(slice.withUnsafeBytes { CRC32C.checksum($0) } == Self.reference(slice), "start \(start) length \(length)")
            }
        }
    }

    @Test func continuesAcrossPieces() {
        var random = SeededRandom(seed: 33)
        let data = random.bytes(1_000)
        let whole = CRC32C.checksum(data)
        for cut in [0, 1, 7, 8, 9, 500, 999, 1_000] {
            let first = Array(data[..<cut]).withUnsafeBytes { CRC32C.checksum($0) }
            let both = Array(data[cut...]).withUnsafeBytes { CRC32C.checksum($0, continuing: first) }
            #expect(both == whole, "cut at \(cut)")
        }
    }
}

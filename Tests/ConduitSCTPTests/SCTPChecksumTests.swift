#if SCTP
import ConduitCore
import ConduitARQ
import ConduitImpairment
import Testing

@testable import ConduitSCTP

@Suite("SCTP packet CRC32c")
struct SCTPChecksumTests {
    @Test("known answer, and the same CRC32c as ConduitCore's at every length and alignment")
    func knownAnswer() {
        #expect(Array("123456789".utf8).withUnsafeBytes(SCTPChecksum.crc32c) == 0xE306_9283)
        var random = SeededRandom(seed: 8)
        let data = random.bytes(300)
        for start in 0..<9 {
            for length in [0, 1, 7, 8, 9, 15, 16, 63, 64, 65, 200] {
                let slice = Array(data[start..<start + length])
                #expect(slice.withUnsafeBytes(SCTPChecksum.crc32c) == slice.withUnsafeBytes { CRC32C.checksum($0) }, "start \(start) length \(length)")
            }
        }
    }

    @Test("a sealed packet checks; any flipped bit, or a packet under 12 bytes, does not")
    func sealAndCheck() {
        var random = SeededRandom(seed: 9)
        for size in [12, 13, 32, 1_200, 9_000] {
            var packet = random.bytes(size)
            packet.withUnsafeMutableBytes(SCTPChecksum.seal)
            #expect(packet.withUnsafeBytes(SCTPChecksum.isValid), "size \(size)")
            // RFC 9260 appendix A: the CRC over the packet with a zero checksum field, stored
            // least significant byte first.
            var zeroed = packet
            zeroed[8...11] = [0, 0, 0, 0]
            let crc = zeroed.withUnsafeBytes { CRC32C.checksum($0) }
            let crcLeastSignificantFirst: [UInt8] = withUnsafeBytes(of: crc.littleEndian) { Array($0) }
            #expect(Array(packet[8...11]) == crcLeastSignificantFirst)
            for _ in 0..<20 {
                var corrupted = packet
                let bit = random.below(size * 8)
                corrupted[bit / 8] ^= UInt8(1 << (bit % 8))
                #expect(!corrupted.withUnsafeBytes(SCTPChecksum.isValid), "size \(size) bit \(bit)")
            }
        }
        #expect(![UInt8](repeating: 0, count: 11).withUnsafeBytes(SCTPChecksum.isValid))
    }
}
#endif

import ConduitCore
import ConduitARQ
import ConduitImpairment
import ConduitReliableTransport
import Testing

/// The CRC32C the drivers hand the engine must be the core's function exactly: a difference would
/// make every packet between a portable and an accelerated peer fail its checksum.
@Suite("Hardware CRC32C")
struct HardwareCRC32CTests {
    @Test func knownAnswer() {
        let digits = Array("123456789".utf8)
        #expect(digits.withUnsafeBytes { CRC32CFunction.hardware.checksum($0, 0) } == 0xE306_9283)
        #expect([UInt8]().withUnsafeBytes { CRC32CFunction.hardware.checksum($0, 0) } == 0)
    }

    @Test func matchesThePortableCodeAtEveryLengthAlignmentAndStart() {
        var random = SeededRandom(seed: 71)
        let data = random.bytes(2_000)
        for start in 0..<9 {
            for length in 0...(data.count - start) where length < 70 || length % 97 == 0 {
                let previous = UInt32(truncatingIfNeeded: start &* 0x9E37_79B9)
                data.withUnsafeBytes { raw in
                    let slice = UnsafeRawBufferPointer(rebasing: raw[start..<(start + length)])
                    #expect(
                        CRC32CFunction.hardware.checksum(slice, previous) == CRC32C.checksum(slice, continuing: previous),
                        "start \(start) length \(length)"
                    )
                }
            }
        }
    }

    @Test func packetsSealedByOneOpenWithTheOther() throws {
        var configuration = ARQEngine.Configuration()
        configuration.checksum = .crc32c
        var hardware = ARQEngine(configuration: configuration, now: .zero, crc32c: .hardware)
        var portable = ARQEngine(configuration: configuration, now: .zero, crc32c: .portable)
        var random = SeededRandom(seed: 72)
        let frames = (0..<20).map { random.bytes(1 + $0 * 53) }
        for frame in frames { _ = hardware.send(frame, channel: 0, now: .zero) }
        var batch = DatagramBatch()
        _ = hardware.pollTransmit(now: .zero, into: &batch)
        #expect(batch.count > 0)
        portable.handle(batch: batch, now: .zero)
        var delivered: [[UInt8]] = []
        while let delivery = portable.pollDelivery(now: .zero) { delivered.append(delivery.bytes) }
        #expect(delivered == frames)
        #expect(portable.statistics.checksumFailures == 0)
    }
}

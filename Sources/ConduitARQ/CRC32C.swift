import ConduitCore

/// CRC32C (Castagnoli, polynomial 0x1EDC6F41), the checksum of SCTP (RFC 4960 appendix B) and
/// iSCSI (RFC 3720 appendix B.4), computed eight bytes at a time with slicing-by-8 tables
/// (Intel's "slicing-by-8", Kounavis and Berry 2005): it is on every packet sent and received, and
/// a byte at a time it was the single largest cost of the send path.
///
/// The reliable link appends it to packets when ``ARQEngine/Configuration/checksum`` is
/// ``ARQEngine/Checksum/crc32c``: a UDP checksum is only 16 bits (and optional over IPv4), so a
/// transport without authenticated encryption wants a stronger check. Known answer:
/// `CRC32C("123456789") == 0xE3069283`.
public enum CRC32C {
    /// The reflected polynomial (0x1EDC6F41 with its bits reversed).
    static let reflectedPolynomial: UInt32 = 0x82F6_3B78

    /// `tables[k * 256 + b]`: the CRC register after shifting byte `b` followed by `k` zero bytes
    /// through it (`k = 0` is the classic byte-at-a-time table).
    static let tables: [UInt32] = {
        var tables = [UInt32](repeating: 0, count: 8 * 256)
        for index in 0..<256 {
            var crc = UInt32(index)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ reflectedPolynomial : crc >> 1 }
            tables[index] = crc
        }
        for k in 1..<8 {
            for index in 0..<256 {
                let previous = tables[(k - 1) * 256 + index]
                tables[k * 256 + index] = tables[Int(previous & 0xFF)] ^ (previous >> 8)
            }
        }
        return tables
    }()

    /// The CRC32C of `bytes`, continuing from `previous` (0 to start).
    public static func checksum(_ bytes: UnsafeRawBufferPointer, continuing previous: UInt32 = 0) -> UInt32 {
        tables.withUnsafeBufferPointer { t in
            var crc = ~previous
            var index = 0
            let count = bytes.count
            while index + 8 <= count {
                let low = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt32.self)) ^ crc
                let high = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: index + 4, as: UInt32.self))
                crc = t[7 * 256 + Int(low & 0xFF)] ^ t[6 * 256 + Int((low >> 8) & 0xFF)]
                    ^ t[5 * 256 + Int((low >> 16) & 0xFF)] ^ t[4 * 256 + Int(low >> 24)]
                    ^ t[3 * 256 + Int(high & 0xFF)] ^ t[2 * 256 + Int((high >> 8) & 0xFF)]
                    ^ t[1 * 256 + Int((high >> 16) & 0xFF)] ^ t[Int(high >> 24)]
                index += 8
            }
            while index < count {
                crc = t[Int((crc ^ UInt32(bytes[index])) & 0xFF)] ^ (crc >> 8)
                index += 1
            }
            return ~crc
        }
    }

    /// The CRC32C of `bytes`, computed by the portable code.
    public static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }
}

/// The CRC32C computation a ``ARQEngine`` uses: ``portable`` is the core's own Swift code; a
/// driver that may use C passes a faster one (the CPU's CRC32 instruction is 10× the table code,
/// and the checksum is on every packet both ways). It must compute exactly
/// ``CRC32C/checksum(_:continuing:)``, which the transports' tests check.
public struct CRC32CFunction: Sendable {
    /// The finished CRC32C of the bytes, continuing from a finished value (0 to start).
    public let checksum: @Sendable (_ bytes: UnsafeRawBufferPointer, _ previous: UInt32) -> UInt32

    /// Wraps a function that computes CRC32C continuing from `previous` (0 to start).
    public init(_ checksum: @escaping @Sendable (_ bytes: UnsafeRawBufferPointer, _ previous: UInt32) -> UInt32) {
        self.checksum = checksum
    }

    /// The core's slicing-by-8 tables.
    public static let portable = CRC32CFunction { CRC32C.checksum($0, continuing: $1) }
}

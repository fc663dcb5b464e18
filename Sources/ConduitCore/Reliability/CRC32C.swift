/// CRC32C (Castagnoli, polynomial 0x1EDC6F41), the checksum of SCTP (RFC 4960 appendix B) and
/// iSCSI (RFC 3720 appendix B.4), computed a byte at a time from a 256-entry table.
///
/// The reliable link appends it to packets when ``ReliableLink/Configuration/checksum`` is
/// ``ReliableLink/Checksum/crc32c``: a UDP checksum is only 16 bits (and optional over IPv4), so a
/// transport without authenticated encryption wants a stronger check. Known answer:
/// `CRC32C("123456789") == 0xE3069283`.
public enum CRC32C {
    /// The reflected polynomial (0x1EDC6F41 with its bits reversed).
    static let reflectedPolynomial: UInt32 = 0x82F6_3B78

    /// `table[b]` is the CRC register after shifting byte `b` through it.
    static let table: [UInt32] = (0..<256).map { index in
        var crc = UInt32(index)
        for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ reflectedPolynomial : crc >> 1 }
        return crc
    }

    /// The CRC32C of `bytes`, continuing from `previous` (0 to start).
    public static func checksum(_ bytes: UnsafeRawBufferPointer, continuing previous: UInt32 = 0) -> UInt32 {
        table.withUnsafeBufferPointer { table in
            var crc = ~previous
            for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
            return ~crc
        }
    }

    public static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }
}

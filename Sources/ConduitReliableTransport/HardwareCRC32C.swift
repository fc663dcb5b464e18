import CConduitCRC32C
import ConduitCore

public import ConduitARQ
extension CRC32CFunction {
    /// CRC32C with the CPU's CRC32 instruction (SSE 4.2, ARMv8 CRC) where there is one, else a
    /// C table: what the drivers hand the reliability engine.
    public static let hardware = CRC32CFunction { bytes, previous in
        conduit_crc32c_continuing(bytes.baseAddress, bytes.count, previous)
    }
}

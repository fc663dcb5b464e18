#if SCTP
import CUsrsctpSupport

/// The CRC32c of SCTP packets (RFC 9260 section 6.8). usrsctp runs with checksum "offload" on, so
/// it neither writes nor checks it: every packet it hands us is sealed before it leaves, and every
/// packet from the peer is checked before usrsctp sees it. The work is in C (`conduit_sctp_seal`),
/// with the CPU's CRC32 instruction where there is one.
enum SCTPChecksum {
    /// CRC32c of `bytes`, finalised (`"123456789"` gives 0xE3069283).
    static func crc32c(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        conduit_crc32c(bytes.baseAddress, bytes.count)
    }

    /// Writes the packet's checksum into its common header (bytes 8...11, least significant first).
    static func seal(_ packet: UnsafeMutableRawBufferPointer) {
        conduit_sctp_seal(packet.baseAddress, packet.count)
    }

    /// Whether the packet's stored checksum is right (false for anything under 12 bytes).
    static func isValid(_ packet: UnsafeRawBufferPointer) -> Bool {
        conduit_sctp_checksum_ok(packet.baseAddress, packet.count) != 0
    }
}
#endif

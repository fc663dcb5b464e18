#ifndef CCONDUIT_CRC32C_H
#define CCONDUIT_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/// CRC32c (Castagnoli, RFC 9260 appendix A) with the CPU's CRC32 instruction where there is one
/// (SSE 4.2 on x86-64, the CRC extension on AArch64), else a table. The transports use it for
/// SCTP packets and for the reliable link's checksum trailer; the sans-IO core keeps its own
/// portable Swift version and takes this one in from its drivers.

/// Continues the raw CRC register `crc` over `length` bytes (no inversion either side).
uint32_t conduit_crc32c_update(uint32_t crc, const void *data, size_t length);

/// The finished CRC32c of `length` bytes, continuing from the finished value `previous` (0 to
/// start): conduit_crc32c_continuing("123456789", 9, 0) == 0xE3069283.
uint32_t conduit_crc32c_continuing(const void *data, size_t length, uint32_t previous);

#endif

#include "CConduitCRC32C.h"

#include <pthread.h>
#include <string.h>
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

// The reflected Castagnoli polynomial 0x1EDC6F41. The byte-at-a-time table is the fallback
// where the CPU has no CRC32 instruction. Both are set up once, on first use, from any thread.
static uint32_t crc_table[256];
static int crc_accelerated;
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_setup(void) {
#if defined(__x86_64__)
    crc_accelerated = __builtin_cpu_supports("sse4.2") ? 1 : 0;
#elif defined(__aarch64__) && defined(__linux__) && defined(HWCAP_CRC32)
    crc_accelerated = (getauxval(AT_HWCAP) & HWCAP_CRC32) ? 1 : 0;
#endif
    for (uint32_t index = 0; index < 256; index++) {
        uint32_t crc = index;
        for (int bit = 0; bit < 8; bit++) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
        crc_table[index] = crc;
    }
}

static uint32_t crc_update_table(uint32_t crc, const uint8_t *bytes, size_t length) {
    while (length-- > 0) crc = crc_table[(crc ^ *bytes++) & 0xFF] ^ (crc >> 8);
    return crc;
}

// The CPU's CRC32C instructions: eight bytes at a time, then one at a time.
#if defined(__x86_64__)
#define CRC_TARGET __attribute__((target("sse4.2")))
#define CRC_STEP8(crc, word) ((uint32_t)__builtin_ia32_crc32di((crc), (word)))
#define CRC_STEP1(crc, byte) __builtin_ia32_crc32qi((crc), (byte))
#elif defined(__aarch64__) && defined(__linux__) && defined(HWCAP_CRC32)
#define CRC_TARGET __attribute__((target("crc")))
#define CRC_STEP8(crc, word) __builtin_arm_crc32cd((crc), (word))
#define CRC_STEP1(crc, byte) __builtin_arm_crc32cb((crc), (byte))
#endif

#ifdef CRC_TARGET
CRC_TARGET
static uint32_t crc_update_accelerated(uint32_t crc, const uint8_t *bytes, size_t length) {
    while (length >= 8) {
        uint64_t word;
        memcpy(&word, bytes, 8);
        crc = CRC_STEP8(crc, word);
        bytes += 8;
        length -= 8;
    }
    while (length-- > 0) crc = CRC_STEP1(crc, *bytes++);
    return crc;
}
#else
static uint32_t crc_update_accelerated(uint32_t crc, const uint8_t *bytes, size_t length) {
    return crc_update_table(crc, bytes, length);
}
#endif

uint32_t conduit_crc32c_update(uint32_t crc, const void *data, size_t length) {
    pthread_once(&crc_once, crc_setup);
    if (crc_accelerated) return crc_update_accelerated(crc, data, length);
    return crc_update_table(crc, data, length);
}

uint32_t conduit_crc32c_continuing(const void *data, size_t length, uint32_t previous) {
    return ~conduit_crc32c_update(~previous, data, length);
}

#include "CUsrsctpSupport.h"
#include "CConduitCRC32C.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../CUsrsctp/shim.h"

static conduit_sctp_debug_sink debug_sink = NULL;

// usrsctp's debug callback is printf-like and variadic, which Swift cannot implement: format the
// line here and hand it on as a plain string.
static void debug_trampoline(const char *format, ...) {
    conduit_sctp_debug_sink sink = debug_sink;
    if (sink == NULL) return;
    char line[1024];
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(line, sizeof line, format, arguments);
    va_end(arguments);
    sink(line);
}

void conduit_sctp_init(conduit_sctp_output output, conduit_sctp_debug_sink debug, int debug_on, uint32_t buffer_bytes) {
    debug_sink = debug;
    // Port 0: usrsctp opens no UDP socket of its own; every packet goes through `output`.
    usrsctp_init_nothreads(0, output, debug_trampoline);
    // There is no DTLS or NIC under us, so the CRC32c must be computed and checked, but we do it
    // ourselves (conduit_sctp_seal / conduit_sctp_checksum_ok, with the CPU's CRC32 instruction
    // where there is one): usrsctp's own table-driven code was an eighth of the stack's CPU time.
    usrsctp_enable_crc32c_offload();
    usrsctp_sysctl_set_sctp_debug_on(debug_on ? SCTP_DEBUG_ALL : SCTP_DEBUG_NONE);
    usrsctp_sysctl_set_sctp_pr_enable(1);
    usrsctp_sysctl_set_sctp_reconfig_enable(1);
    // ASCONF needs AUTH; neither is used by data channels (RFC 8831 §6.2) nor by pion.
    usrsctp_sysctl_set_sctp_asconf_enable(0);
    usrsctp_sysctl_set_sctp_auth_enable(0);
    usrsctp_sysctl_set_sctp_sendspace(buffer_bytes);
    usrsctp_sysctl_set_sctp_recvspace(buffer_bytes);
    usrsctp_sysctl_set_sctp_max_chunks_on_queue(16 * 1024);
    // Timers closer to WebRTC stacks than to RFC 4960's conservative defaults.
    usrsctp_sysctl_set_sctp_rto_initial_default(1000);
    usrsctp_sysctl_set_sctp_rto_min_default(200);
    usrsctp_sysctl_set_sctp_rto_max_default(10000);
    usrsctp_sysctl_set_sctp_init_rto_max_default(2000);
    usrsctp_sysctl_set_sctp_delayed_sack_time_default(20);
}

// usrsctp supports I-DATA but its public header leaves the option out (FreeBSD's sctp.h has it).
#ifndef SCTP_INTERLEAVING_SUPPORTED
#define SCTP_INTERLEAVING_SUPPORTED 0x00001206
#endif

int conduit_sctp_configure(struct socket *so, conduit_sctp_upcall upcall, void *context, struct conduit_sctp_settings settings) {
    if (usrsctp_set_upcall(so, upcall, context) < 0) return errno;
    if (usrsctp_set_non_blocking(so, 1) < 0) return errno;
    int on = 1;
    if (usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_NODELAY, &on, sizeof on) < 0) return errno;
    if (usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_RECVRCVINFO, &on, sizeof on) < 0) return errno;
    int size = (int)settings.send_buffer_bytes;
    usrsctp_setsockopt(so, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
    size = (int)settings.receive_buffer_bytes;
    usrsctp_setsockopt(so, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
    struct sctp_assoc_value reset = {.assoc_id = SCTP_ALL_ASSOC, .assoc_value = SCTP_ENABLE_RESET_STREAM_REQ};
    if (usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_ENABLE_STREAM_RESET, &reset, sizeof reset) < 0) {
        reset.assoc_id = SCTP_FUTURE_ASSOC;
        if (usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_ENABLE_STREAM_RESET, &reset, sizeof reset) < 0) return errno;
    }
    struct sctp_initmsg init = {
        .sinit_num_ostreams = settings.streams, .sinit_max_instreams = settings.streams,
        .sinit_max_attempts = settings.init_attempts, .sinit_max_init_timeo = 0,
    };
    if (usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_INITMSG, &init, sizeof init) < 0) return errno;
    const uint16_t events[] = {SCTP_ASSOC_CHANGE, SCTP_STREAM_RESET_EVENT, SCTP_SHUTDOWN_EVENT, SCTP_SEND_FAILED_EVENT,
                               // nothing owed any more: wakes a wait for acknowledgement
                               SCTP_SENDER_DRY_EVENT};
    for (size_t i = 0; i < sizeof events / sizeof events[0]; i++) {
        struct sctp_event event = {.se_assoc_id = SCTP_ALL_ASSOC, .se_type = events[i], .se_on = 1};
        if (usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_EVENT, &event, sizeof event) < 0) {
            event.se_assoc_id = SCTP_FUTURE_ASSOC;
            if (usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_EVENT, &event, sizeof event) < 0) return errno;
        }
    }
    // Streams with data queued are served lowest SCTP_SS_VALUE first, round-robin among equals
    // (usrsctp's default is round-robin only): a session's priority reaches the wire order.
    // Best effort, like the path parameters below: an accepted socket inherits its listener's
    // scheduler and I-DATA offer (both settled by the handshake) and may refuse them again.
    struct sctp_assoc_value scheduler = {.assoc_id = SCTP_FUTURE_ASSOC, .assoc_value = SCTP_SS_PRIORITY};
    usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_PLUGGABLE_SS, &scheduler, sizeof scheduler);
    if (settings.interleaving) {
        // RFC 8260 needs the socket to accept interleaved partial deliveries (level 2) first.
        int level = 2;
        struct sctp_assoc_value interleaving = {.assoc_id = SCTP_FUTURE_ASSOC, .assoc_value = 1};
        if (usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_FRAGMENT_INTERLEAVE, &level, sizeof level) == 0)
            usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_INTERLEAVING_SUPPORTED, &interleaving, sizeof interleaving);
    }
    // There is no path MTU discovery over our UDP sockets: packets are exactly as large as asked.
    struct sctp_paddrparams paddr;
    memset(&paddr, 0, sizeof paddr);
    paddr.spp_assoc_id = SCTP_FUTURE_ASSOC;
    paddr.spp_flags = SPP_PMTUD_DISABLE;
    paddr.spp_pathmtu = settings.mtu;
    // Best effort: an accepted socket inherits its listener's setting and may refuse it again.
    usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_PEER_ADDR_PARAMS, &paddr, sizeof paddr);
    return 0;
}

struct socket *conduit_sctp_socket(conduit_sctp_upcall upcall, void *context, struct conduit_sctp_settings settings) {
    struct socket *so = usrsctp_socket(AF_CONN, SOCK_STREAM, IPPROTO_SCTP, NULL, NULL, 0, NULL);
    if (so == NULL) return NULL;
    int error = conduit_sctp_configure(so, upcall, context, settings);
    if (error != 0) {
        usrsctp_close(so);
        errno = error;
        return NULL;
    }
    return so;
}

int conduit_sctp_set_stream_priority(struct socket *so, uint16_t stream, uint16_t value) {
    struct sctp_stream_value priority = {.assoc_id = SCTP_CURRENT_ASSOC, .stream_id = stream, .stream_value = value};
    return usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_SS_VALUE, &priority, sizeof priority) < 0 ? errno : 0;
}

int conduit_sctp_interleaving(struct socket *so) {
    struct sctp_assoc_value value = {.assoc_id = SCTP_CURRENT_ASSOC, .assoc_value = 0};
    socklen_t length = sizeof value;
    if (usrsctp_getsockopt(so, IPPROTO_SCTP, SCTP_INTERLEAVING_SUPPORTED, &value, &length) < 0) return -1;
    return value.assoc_value != 0;
}

static struct sockaddr_conn conn_address(uintptr_t address, uint16_t port) {
    struct sockaddr_conn sconn;
    memset(&sconn, 0, sizeof sconn);
    sconn.sconn_family = AF_CONN;
    sconn.sconn_port = htons(port);
    sconn.sconn_addr = (void *)address;
    return sconn;
}

int conduit_sctp_bind(struct socket *so, uintptr_t address, uint16_t port) {
    struct sockaddr_conn sconn = conn_address(address, port);
    return usrsctp_bind(so, (struct sockaddr *)&sconn, sizeof sconn) < 0 ? errno : 0;
}

int conduit_sctp_connect(struct socket *so, uintptr_t address, uint16_t port) {
    struct sockaddr_conn sconn = conn_address(address, port);
    return usrsctp_connect(so, (struct sockaddr *)&sconn, sizeof sconn) < 0 ? errno : 0;
}

int conduit_sctp_listen(struct socket *so) {
    return usrsctp_listen(so, 1) < 0 ? errno : 0;
}

struct socket *conduit_sctp_accept(struct socket *so) {
    return usrsctp_accept(so, NULL, NULL);
}

int conduit_sctp_send(struct socket *so, const void *data, size_t length, uint16_t stream, uint32_t ppid, int unordered, uint16_t pr_policy, uint32_t pr_value) {
    struct sctp_sendv_spa spa;
    memset(&spa, 0, sizeof spa);
    spa.sendv_flags = SCTP_SEND_SNDINFO_VALID;
    spa.sendv_sndinfo.snd_sid = stream;
    spa.sendv_sndinfo.snd_ppid = htonl(ppid);
    spa.sendv_sndinfo.snd_flags = unordered ? SCTP_UNORDERED : 0;
    if (pr_policy != SCTP_PR_SCTP_NONE) {
        spa.sendv_flags |= SCTP_SEND_PRINFO_VALID;
        spa.sendv_prinfo.pr_policy = pr_policy;
        spa.sendv_prinfo.pr_value = pr_value;
    }
    // An empty message is not sendable; callers send one zero byte with an "empty" PPID instead.
    ssize_t sent = usrsctp_sendv(so, data, length, NULL, 0, &spa, (socklen_t)sizeof spa, SCTP_SENDV_SPA, 0);
    return sent < 0 ? errno : 0;
}

ssize_t conduit_sctp_receive(struct socket *so, void *buffer, size_t length, uint16_t *stream, uint32_t *ppid, int *is_notification, int *is_end_of_record) {
    struct sctp_rcvinfo info;
    memset(&info, 0, sizeof info);
    socklen_t info_length = sizeof info;
    unsigned int info_type = SCTP_RECVV_NOINFO;
    int flags = 0;
    ssize_t received = usrsctp_recvv(so, buffer, length, NULL, NULL, &info, &info_length, &info_type, &flags);
    if (received < 0) return -(ssize_t)errno;
    *is_notification = (flags & MSG_NOTIFICATION) != 0;
    *is_end_of_record = (flags & MSG_EOR) != 0;
    if (info_type == SCTP_RECVV_RCVINFO) {
        *stream = info.rcv_sid;
        *ppid = ntohl(info.rcv_ppid);
    } else {
        *stream = 0;
        *ppid = 0;
    }
    return received;
}

int conduit_sctp_reset_outgoing(struct socket *so, const uint16_t *streams, uint16_t count) {
    size_t size = sizeof(struct sctp_reset_streams) + count * sizeof(uint16_t);
    struct sctp_reset_streams *reset = calloc(1, size);
    if (reset == NULL) return ENOMEM;
    reset->srs_assoc_id = SCTP_ALL_ASSOC;
    reset->srs_flags = SCTP_STREAM_RESET_OUTGOING;
    reset->srs_number_streams = count;
    memcpy(reset->srs_stream_list, streams, count * sizeof(uint16_t));
    int result = usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_RESET_STREAMS, reset, (socklen_t)size) < 0 ? errno : 0;
    free(reset);
    return result;
}

// usrsctp's read-only SCTP_GET_SNDBUF_USE (RFC 6458 leaves it out; usrsctp.h does not declare it,
// the socket option handler does): the association's output queue in bytes, unsent and sent but
// unacknowledged together.
#define CONDUIT_SCTP_GET_SNDBUF_USE 0x00001101
struct conduit_sctp_sockstat {
    sctp_assoc_t ss_assoc_id;
    uint32_t ss_total_sndbuf;
    uint32_t ss_total_recv_buf;
};

int conduit_sctp_outstanding(struct socket *so) {
    // Queued bytes decide: SCTP_STATUS's sstat_unackdata counts only chunks sent and not yet
    // acknowledged (not those still queued), and sstat_penddata is the *receive* side (chunks
    // waiting for reassembly or order), which has nothing to do with what this side sent.
    struct conduit_sctp_sockstat queue;
    memset(&queue, 0, sizeof queue);
    socklen_t queueLength = sizeof queue;
    if (usrsctp_getsockopt(so, IPPROTO_SCTP, CONDUIT_SCTP_GET_SNDBUF_USE, &queue, &queueLength) < 0) return -1;
    if (queue.ss_total_sndbuf == 0) return 0;
    struct sctp_status status;
    memset(&status, 0, sizeof status);
    socklen_t length = sizeof status;
    if (usrsctp_getsockopt(so, IPPROTO_SCTP, SCTP_STATUS, &status, &length) < 0) return -1;
    // Something is queued: at least one chunk is owed, however many were sent.
    return status.sstat_unackdata > 0 ? (int)status.sstat_unackdata : 1;
}

int conduit_sctp_set_abort_on_close(struct socket *so) {
    struct linger linger = {.l_onoff = 1, .l_linger = 0};
    return usrsctp_setsockopt(so, SOL_SOCKET, SO_LINGER, &linger, sizeof linger) < 0 ? errno : 0;
}

// MARK: CRC32c (RFC 9260 section 6.8 and appendix A), computed by CConduitCRC32C

static uint32_t crc_update(uint32_t crc, const uint8_t *bytes, size_t length) {
    return conduit_crc32c_update(crc, bytes, length);
}

uint32_t conduit_crc32c(const void *data, size_t length) {
    return ~crc_update(0xFFFFFFFFu, data, length);
}

// The checksum covers the whole packet with its own field (bytes 8...11 of the common header)
// taken as zero, and is stored least significant byte first (as the Linux and BSD stacks do).
static uint32_t packet_checksum(const uint8_t *packet, size_t length) {
    static const uint8_t zero[4] = {0, 0, 0, 0};
    uint32_t crc = crc_update(0xFFFFFFFFu, packet, 8);
    crc = crc_update(crc, zero, 4);
    crc = crc_update(crc, packet + 12, length - 12);
    return ~crc;
}

void conduit_sctp_seal(void *packet, size_t length) {
    if (length < 12) return;
    uint8_t *bytes = packet;
    uint32_t crc = packet_checksum(bytes, length);
    bytes[8] = (uint8_t)crc;
    bytes[9] = (uint8_t)(crc >> 8);
    bytes[10] = (uint8_t)(crc >> 16);
    bytes[11] = (uint8_t)(crc >> 24);
}

int conduit_sctp_checksum_ok(const void *packet, size_t length) {
    if (length < 12) return 0;
    const uint8_t *bytes = packet;
    uint32_t stored = (uint32_t)bytes[8] | (uint32_t)bytes[9] << 8 | (uint32_t)bytes[10] << 16 | (uint32_t)bytes[11] << 24;
    return packet_checksum(bytes, length) == stored;
}

#ifndef CONDUIT_CUSRSCTP_SUPPORT_H
#define CONDUIT_CUSRSCTP_SUPPORT_H

// Small C helpers around usrsctp for ConduitSCTP: what Swift cannot express (a variadic
// printf-style callback) or only awkwardly (sockaddr_conn, flexible array members, cmsg-like
// send/receive info). No state lives here except the debug sink; every call is made from the one
// event loop that drives usrsctp.

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct socket;

/// Where usrsctp's debug lines go (formatted here, since Swift cannot take a C variadic callback).
typedef void (*conduit_sctp_debug_sink)(const char *line);
/// usrsctp's output callback: one SCTP packet for the association registered as `address`.
typedef int (*conduit_sctp_output)(void *address, void *buffer, size_t length, uint8_t tos, uint8_t set_df);
/// Socket events (readable, writable, error) for the socket created with `context`.
typedef void (*conduit_sctp_upcall)(struct socket *socket, void *context, int flags);

/// usrsctp_init_nothreads with no UDP encapsulation port of its own (we carry packets ourselves),
/// CRC32c computed and checked in software, PR-SCTP and stream reconfiguration on.
void conduit_sctp_init(conduit_sctp_output output, conduit_sctp_debug_sink debug, int debug_on, uint32_t buffer_bytes);

/// What one association is set up with (SCTPLimits on the Swift side).
struct conduit_sctp_settings {
    uint16_t streams;
    uint16_t init_attempts;
    /// The SCTP packet size (= UDP payload), fixed, with path MTU discovery off.
    uint32_t mtu;
    /// SO_SNDBUF and SO_RCVBUF: the receive buffer is the window advertised to the peer.
    uint32_t send_buffer_bytes;
    uint32_t receive_buffer_bytes;
    /// Offer I-DATA (RFC 8260): messages of different streams interleave when the peer agrees.
    int interleaving;
};

/// A non-blocking one-to-one AF_CONN socket with the options data channels need, or NULL (errno).
struct socket *conduit_sctp_socket(conduit_sctp_upcall upcall, void *context, struct conduit_sctp_settings settings);
/// Applies the per-association options again (an accepted socket) and installs the upcall.
/// The stream scheduler is usrsctp's priority scheduler (SCTP_SS_PRIORITY; see
/// conduit_sctp_set_stream_priority), equal priorities served round-robin.
int conduit_sctp_configure(struct socket *socket, conduit_sctp_upcall upcall, void *context, struct conduit_sctp_settings settings);
/// The scheduling priority of outgoing `stream` (SCTP_SS_VALUE): lower values are sent first.
/// 0, or an errno value.
int conduit_sctp_set_stream_priority(struct socket *socket, uint16_t stream, uint16_t value);
/// 1 when the association negotiated I-DATA (RFC 8260), 0 when not, -1 on error.
int conduit_sctp_interleaving(struct socket *socket);

/// 0, or an errno value. `address` is the AF_CONN address (our association ID), `port` the SCTP port.
int conduit_sctp_bind(struct socket *socket, uintptr_t address, uint16_t port);
int conduit_sctp_connect(struct socket *socket, uintptr_t address, uint16_t port);
int conduit_sctp_listen(struct socket *socket);
/// The next accepted socket, or NULL (errno EWOULDBLOCK when none is waiting).
struct socket *conduit_sctp_accept(struct socket *socket);

/// Sends one message. `unordered` sets SCTP_UNORDERED; `pr_policy` is SCTP_PR_SCTP_NONE, _RTX or
/// _TTL with `pr_value`. Returns 0 or an errno value (EWOULDBLOCK: the send buffer is full).
int conduit_sctp_send(struct socket *socket, const void *data, size_t length, uint16_t stream, uint32_t ppid, int unordered, uint16_t pr_policy, uint32_t pr_value);

/// Receives one message (or part of one) into `buffer`. Returns its length, 0 at end of stream,
/// or -errno. `*is_notification`, `*is_end_of_record`, `*stream` and `*ppid` describe it.
ssize_t conduit_sctp_receive(struct socket *socket, void *buffer, size_t length, uint16_t *stream, uint32_t *ppid, int *is_notification, int *is_end_of_record);

/// RFC 6525: resets our outgoing `streams`. 0 or an errno value.
int conduit_sctp_reset_outgoing(struct socket *socket, const uint16_t *streams, uint16_t count);

/// Bytes and chunks still unsent or unacknowledged, and the association state (-1 on error).
int conduit_sctp_outstanding(struct socket *socket);

/// CRC32c (Castagnoli) of `length` bytes, finalised: conduit_crc32c("123456789", 9) == 0xE3069283.
uint32_t conduit_crc32c(const void *data, size_t length);
/// Writes an SCTP packet's CRC32c into its common header (RFC 9260 section 6.8). usrsctp runs with
/// checksum "offload" on: it neither computes nor checks it, so every packet it sends is sealed
/// here and every packet given to it is checked here first. Packets under 12 bytes are left alone.
void conduit_sctp_seal(void *packet, size_t length);
/// 1 when an SCTP packet's stored CRC32c is right, 0 when it is wrong or the packet too short.
int conduit_sctp_checksum_ok(const void *packet, size_t length);

/// Aborts instead of shutting down gracefully on close (SO_LINGER 0).
int conduit_sctp_set_abort_on_close(struct socket *socket);

#endif

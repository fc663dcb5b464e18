// A test-only SCTP peer on the Linux kernel's socket API (RFC 6458), with its packets in UDP
// (RFC 6951). Kept in C behind plain integer signatures because <linux/sctp.h>, which it needs,
// declares the same structures as usrsctp.h, and a test module that sees both does not compile.
// Every call returns a descriptor or count, or -errno. Off Linux every call returns -ENOSYS.
#ifndef CONDUIT_KERNEL_SCTP_TEST_PEER_H
#define CONDUIT_KERNEL_SCTP_TEST_PEER_H
#include <stddef.h>
#include <stdint.h>

/// Connects a one-to-one SCTP socket to 127.0.0.1 port `sctp_port`, encapsulated in UDP to
/// 127.0.0.1 port `udp_port` (SCTP_REMOTE_UDP_ENCAPS_PORT). Blocking calls time out after 10 s.
int conduit_kpeer_connect(uint16_t udp_port, uint16_t sctp_port);
/// Listens on 127.0.0.1 port `sctp_port` (peers in UDP reach it through net.sctp.udp_port).
int conduit_kpeer_listen(uint16_t sctp_port);
/// The next association on a listening socket.
int conduit_kpeer_accept(int listening);
/// Sends one user message on `stream` with payload protocol identifier `ppid`.
long conduit_kpeer_send(int socket, const void *bytes, size_t count, uint32_t ppid, uint16_t stream);
/// Receives one whole user message, its PPID and stream: 0 when the association ended,
/// -EMSGSIZE when it does not fit `capacity`.
long conduit_kpeer_receive(int socket, void *buffer, size_t capacity, uint32_t *ppid, uint16_t *stream);
/// Closes the socket.
void conduit_kpeer_close(int socket);
#endif

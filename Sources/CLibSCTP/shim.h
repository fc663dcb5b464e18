// The kernel SCTP socket API (RFC 6458) from lksctp-tools (Debian: libsctp-dev): <netinet/sctp.h>
// declares sctp_sendv and the option and ancillary-data structures; libsctp implements them.
#ifndef CONDUIT_CLIBSCTP_SHIM_H
#define CONDUIT_CLIBSCTP_SHIM_H
#include <netinet/in.h>
#include <netinet/sctp.h>
#include <sys/socket.h>

// Macros Swift cannot import as constants.
static inline int conduit_sctp_protocol(void) { return IPPROTO_SCTP; }
#endif

#ifndef CONDUIT_CSRTP_SHIM_H
#define CONDUIT_CSRTP_SHIM_H

#include <srtp2/srtp.h>

/// The most octets srtp_protect / srtp_protect_rtcp append (tag and MKI), as a function because
/// Swift does not import macros built from other macros.
static inline int conduit_srtp_max_trailer_len(void) { return SRTP_MAX_TRAILER_LEN; }

#endif

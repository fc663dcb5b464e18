#ifndef CONDUIT_TSCTP_QUIET_H
#define CONDUIT_TSCTP_QUIET_H
#include <stdint.h>

/// Replaces usrsctp's function of the same name: debug output stays off.
int usrsctp_sysctl_set_sctp_debug_on(uint32_t v);

#endif

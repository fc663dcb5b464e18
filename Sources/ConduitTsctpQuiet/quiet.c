// Preloaded (LD_PRELOAD) into usrsctp's tsctp by `conduit bench --reference`: tsctp turns the
// library's debug output on, which costs it 2-4x; this makes that call do nothing.
#include "ConduitTsctpQuiet.h"

int usrsctp_sysctl_set_sctp_debug_on(uint32_t v) {
    (void)v;
    return 0;
}

#ifndef CONDUIT_CNATS_SHIM_H
#define CONDUIT_CNATS_SHIM_H

// The official NATS C client (Debian: libnats-dev), found with pkg-config libnats.
#include <nats/nats.h>

#endif

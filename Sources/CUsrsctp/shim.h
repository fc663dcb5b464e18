#ifndef CONDUIT_CUSRSCTP_SHIM_H
#define CONDUIT_CUSRSCTP_SHIM_H

// pkg-config's `-DINET -DINET6` do not reach Clang modules through SwiftPM, and usrsctp.h's
// structures depend on them: define them (and SCTP_DEBUG, for the debug constants) here, before
// the header, so Swift and the C support target see the same layout as the library was built with.
#ifndef INET
#define INET 1
#endif
#ifndef INET6
#define INET6 1
#endif
#ifndef SCTP_DEBUG
#define SCTP_DEBUG 1
#endif

#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <usrsctp.h>

#endif

// The system zlib (Debian: zlib1g-dev), for the zlib compression of Sora-style labeled channels.
#include <zlib.h>

// The kernel SCTP socket API (RFC 6458) from lksctp-tools (Debian: libsctp-dev): <netinet/sctp.h>
// declares sctp_sendv and the option and ancillary-data structures; libsctp implements them.
#ifndef CONDUIT_CLIBSCTP_SHIM_H
#define CONDUIT_CLIBSCTP_SHIM_H
#include <netinet/in.h>
#include <netinet/sctp.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

// Macros Swift cannot import as constants.
static inline int conduit_sctp_protocol(void) { return IPPROTO_SCTP; }

// One user message on `stream` with SCTP_SNDINFO `flags` and, when `pr_policy` is not
// SCTP_PR_SCTP_NONE, SCTP_PRINFO (RFC 6458 sections 5.3.4, 5.3.7), sent with MSG_NOSIGNAL.
// Not sctp_sendv: lksctp-tools 1.0.19 (Debian 12) stores sctp_sendv's flags argument in msg_flags,
// which sendmsg ignores, and calls sendmsg with flags 0, so MSG_NOSIGNAL is lost and a send on an
// association the peer has closed raises SIGPIPE and kills the process.
static inline ssize_t conduit_sctp_send(int fd, const void *bytes, size_t count, uint16_t stream, uint16_t flags,
                                        uint16_t pr_policy, uint32_t pr_value) {
    struct iovec vector = {(void *)bytes, count};
    union {
        char buffer[CMSG_SPACE(sizeof(struct sctp_sndinfo)) + CMSG_SPACE(sizeof(struct sctp_prinfo))];
        struct cmsghdr alignment;
    } control;
    memset(&control, 0, sizeof control);
    struct msghdr header;
    memset(&header, 0, sizeof header);
    header.msg_iov = &vector;
    header.msg_iovlen = 1;
    header.msg_control = control.buffer;
    header.msg_controllen = pr_policy != SCTP_PR_SCTP_NONE ? sizeof control.buffer : CMSG_SPACE(sizeof(struct sctp_sndinfo));
    struct cmsghdr *entry = CMSG_FIRSTHDR(&header);
    struct sctp_sndinfo info;
    memset(&info, 0, sizeof info);
    info.snd_sid = stream;
    info.snd_flags = flags;
    entry->cmsg_level = IPPROTO_SCTP;
    entry->cmsg_type = SCTP_SNDINFO;
    entry->cmsg_len = CMSG_LEN(sizeof info);
    memcpy(CMSG_DATA(entry), &info, sizeof info);
    if (pr_policy != SCTP_PR_SCTP_NONE) {
        struct sctp_prinfo partial = {.pr_policy = pr_policy, .pr_value = pr_value};
        entry = CMSG_NXTHDR(&header, entry);
        entry->cmsg_level = IPPROTO_SCTP;
        entry->cmsg_type = SCTP_PRINFO;
        entry->cmsg_len = CMSG_LEN(sizeof partial);
        memcpy(CMSG_DATA(entry), &partial, sizeof partial);
    }
    return sendmsg(fd, &header, MSG_NOSIGNAL);
}
#endif

#include "CKernelSCTPTestPeer.h"
#include <errno.h>

#ifdef __linux__
#include <arpa/inet.h>
#include <linux/sctp.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static struct sockaddr_in loopback(uint16_t port) {
    struct sockaddr_in address;
    memset(&address, 0, sizeof address);
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return address;
}

// Streams as our usrsctp side asks for, each message's stream and PPID reported, 10 s limits.
static int configure(int fd) {
    struct sctp_initmsg init = {.sinit_num_ostreams = 1024, .sinit_max_instreams = 1024};
    int on = 1;
    struct timeval limit = {.tv_sec = 10};
    if (setsockopt(fd, IPPROTO_SCTP, SCTP_INITMSG, &init, sizeof init) != 0 ||
        setsockopt(fd, IPPROTO_SCTP, SCTP_RECVRCVINFO, &on, sizeof on) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit) != 0) {
        return -errno;
    }
    return 0;
}

static int open_socket(void) {
    int fd = socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP);
    if (fd < 0) return -errno;
    int problem = configure(fd);
    if (problem != 0) { close(fd); return problem; }
    return fd;
}

int conduit_kpeer_connect(uint16_t udp_port, uint16_t sctp_port) {
    int fd = open_socket();
    if (fd < 0) return fd;
    struct sctp_udpencaps encapsulation;
    memset(&encapsulation, 0, sizeof encapsulation);
    encapsulation.sue_port = htons(udp_port);
    struct sockaddr_in address = loopback(sctp_port);
    if (setsockopt(fd, IPPROTO_SCTP, SCTP_REMOTE_UDP_ENCAPS_PORT, &encapsulation, sizeof encapsulation) != 0 ||
        connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        int problem = -errno;
        close(fd);
        return problem;
    }
    return fd;
}

int conduit_kpeer_listen(uint16_t sctp_port) {
    int fd = open_socket();
    if (fd < 0) return fd;
    struct sockaddr_in address = loopback(sctp_port);
    if (bind(fd, (struct sockaddr *)&address, sizeof address) != 0 || listen(fd, 4) != 0) {
        int problem = -errno;
        close(fd);
        return problem;
    }
    return fd;
}

int conduit_kpeer_accept(int listening) {
    int fd = accept(listening, NULL, NULL);
    if (fd < 0) return -errno;
    int problem = configure(fd);
    if (problem != 0) { close(fd); return problem; }
    return fd;
}

long conduit_kpeer_send(int socket, const void *bytes, size_t count, uint32_t ppid, uint16_t stream) {
    struct iovec vector = {.iov_base = (void *)bytes, .iov_len = count};
    char control[CMSG_SPACE(sizeof(struct sctp_sndinfo))];
    memset(control, 0, sizeof control);
    struct msghdr header = {.msg_iov = &vector, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
    struct cmsghdr *entry = CMSG_FIRSTHDR(&header);
    entry->cmsg_level = IPPROTO_SCTP;
    entry->cmsg_type = SCTP_SNDINFO;
    entry->cmsg_len = CMSG_LEN(sizeof(struct sctp_sndinfo));
    struct sctp_sndinfo info = {.snd_sid = stream, .snd_ppid = htonl(ppid)};
    memcpy(CMSG_DATA(entry), &info, sizeof info);
    ssize_t sent = sendmsg(socket, &header, MSG_NOSIGNAL);
    return sent < 0 ? -errno : (long)sent;
}

long conduit_kpeer_receive(int socket, void *buffer, size_t capacity, uint32_t *ppid, uint16_t *stream) {
    struct iovec vector = {.iov_base = buffer, .iov_len = capacity};
    char control[CMSG_SPACE(sizeof(struct sctp_rcvinfo))];
    struct msghdr header = {.msg_iov = &vector, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
    ssize_t count = recvmsg(socket, &header, 0);
    if (count < 0) return -errno;
    if (count == 0) return 0;
    if (!(header.msg_flags & MSG_EOR)) return -EMSGSIZE;
    *ppid = 0;
    *stream = 0;
    for (struct cmsghdr *entry = CMSG_FIRSTHDR(&header); entry; entry = CMSG_NXTHDR(&header, entry)) {
        if (entry->cmsg_level == IPPROTO_SCTP && entry->cmsg_type == SCTP_RCVINFO) {
            struct sctp_rcvinfo info;
            memcpy(&info, CMSG_DATA(entry), sizeof info);
            *ppid = ntohl(info.rcv_ppid);
            *stream = info.rcv_sid;
        }
    }
    return (long)count;
}

void conduit_kpeer_close(int socket) { close(socket); }
#else
int conduit_kpeer_connect(uint16_t udp_port, uint16_t sctp_port) { (void)udp_port; (void)sctp_port; return -ENOSYS; }
int conduit_kpeer_listen(uint16_t sctp_port) { (void)sctp_port; return -ENOSYS; }
int conduit_kpeer_accept(int listening) { (void)listening; return -ENOSYS; }
long conduit_kpeer_send(int socket, const void *bytes, size_t count, uint32_t ppid, uint16_t stream) {
    (void)socket; (void)bytes; (void)count; (void)ppid; (void)stream; return -ENOSYS;
}
long conduit_kpeer_receive(int socket, void *buffer, size_t capacity, uint32_t *ppid, uint16_t *stream) {
    (void)socket; (void)buffer; (void)capacity; (void)ppid; (void)stream; return -ENOSYS;
}
void conduit_kpeer_close(int socket) { (void)socket; }
#endif

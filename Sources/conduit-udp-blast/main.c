// conduit-udp-blast: the plain UDP reference of `conduit bench --reference`.
//
//   conduit-udp-blast recv PORT           print "listening PORT" (0: the system picks it), receive
//                                         on 127.0.0.1:PORT until the sender's end marker (an
//                                         empty datagram) or 2 s of silence, then print
//                                         "recv bytes N seconds S MB/s X"
//   conduit-udp-blast send PORT SECONDS   blast 1,200-byte datagrams to 127.0.0.1:PORT with
//                                         sendmmsg for SECONDS, then send empty end markers and
//                                         print the same line for what it sent
//
// Datagrams go out and come in 64 at a time (sendmmsg / recvmmsg). Loopback drops what the
// receiver cannot take; the receiver's figure is the one that counts.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

enum { DATAGRAM = 1200, BATCH = 64 };

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int parse_port(const char *text) {
    char *end = NULL;
    long port = strtol(text, &end, 10);
    if (end == text || *end != '\0' || port < 1 || port > 65535) return -1;
    return (int)port;
}

static void report(const char *what, long long bytes, double seconds) {
    double rate = seconds > 0 ? (double)bytes / seconds / 1e6 : 0;
    printf("%s bytes %lld seconds %.3f MB/s %.1f\n", what, bytes, seconds, rate);
    fflush(stdout);
}

static int run_recv(int port) {
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0) { perror("socket"); return 1; }
    int buffer = 8 * 1024 * 1024;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof buffer);
    struct sockaddr_in address = {0};
    address.sin_family = AF_INET;
    address.sin_port = htons((uint16_t)port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&address, sizeof address) < 0) { perror("bind"); return 1; }
    socklen_t length = sizeof address;
    getsockname(fd, (struct sockaddr *)&address, &length);
    struct timeval timeout = {2, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    printf("listening %d\n", ntohs(address.sin_port));
    fflush(stdout);

    static char buffers[BATCH][DATAGRAM];
    struct iovec iov[BATCH];
    struct mmsghdr messages[BATCH];
    long long bytes = 0;
    double first = 0, last = 0;
    int done = 0;
    while (!done) {
        for (int i = 0; i < BATCH; i++) {
            iov[i].iov_base = buffers[i];
            iov[i].iov_len = DATAGRAM;
            memset(&messages[i].msg_hdr, 0, sizeof messages[i].msg_hdr);
            messages[i].msg_hdr.msg_iov = &iov[i];
            messages[i].msg_hdr.msg_iovlen = 1;
        }
        int received = recvmmsg(fd, messages, BATCH, MSG_WAITFORONE, NULL);
        if (received < 0) {
            if (errno == EINTR) continue;
            if ((errno == EAGAIN || errno == EWOULDBLOCK) && bytes > 0) break;  // 2 s of silence
            if (errno == EAGAIN || errno == EWOULDBLOCK) continue;
            perror("recvmmsg");
            return 1;
        }
        double t = now_seconds();
        for (int i = 0; i < received; i++) {
            if (messages[i].msg_len == 0) { done = 1; break; }
            if (bytes == 0) first = t;
            bytes += messages[i].msg_len;
            last = t;
        }
    }
    report("recv", bytes, last - first);
    close(fd);
    return 0;
}

static int run_send(int port, double seconds) {
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0) { perror("socket"); return 1; }
    struct sockaddr_in address = {0};
    address.sin_family = AF_INET;
    address.sin_port = htons((uint16_t)port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&address, sizeof address) < 0) { perror("connect"); return 1; }

    static char payload[DATAGRAM];
    memset(payload, 0xA5, sizeof payload);
    struct iovec iov = {payload, DATAGRAM};
    struct mmsghdr messages[BATCH];
    for (int i = 0; i < BATCH; i++) {
        memset(&messages[i].msg_hdr, 0, sizeof messages[i].msg_hdr);
        messages[i].msg_hdr.msg_iov = &iov;
        messages[i].msg_hdr.msg_iovlen = 1;
    }
    long long bytes = 0;
    double start = now_seconds(), end = start + seconds;
    double t = start;
    while (t < end) {
        int sent = sendmmsg(fd, messages, BATCH, 0);
        if (sent < 0) {
            if (errno == EINTR || errno == ECONNREFUSED || errno == ENOBUFS || errno == EAGAIN) { t = now_seconds(); continue; }
            perror("sendmmsg");
            return 1;
        }
        bytes += (long long)sent * DATAGRAM;
        t = now_seconds();
    }
    for (int i = 0; i < 10; i++) {
        send(fd, payload, 0, 0);  // end markers (several, in case some are dropped)
        usleep(10000);
    }
    report("send", bytes, t - start);
    close(fd);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "recv") == 0) {
        int port = strcmp(argv[2], "0") == 0 ? 0 : parse_port(argv[2]);
        if (port >= 0) return run_recv(port);
    } else if (argc == 4 && strcmp(argv[1], "send") == 0) {
        int port = parse_port(argv[2]);
        double seconds = atof(argv[3]);
        if (port > 0 && seconds > 0 && seconds <= 600) return run_send(port, seconds);
    }
    fprintf(stderr, "usage: conduit-udp-blast recv PORT | conduit-udp-blast send PORT SECONDS\n");
    return 2;
}

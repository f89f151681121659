// The uid of the process that owns the other end of a TCP connection accepted from this host,
// from the kernel's socket table (NETLINK_SOCK_DIAG, inet_diag): SO_PEERCRED exists for Unix
// sockets only. Used to give each local user its own share of an HTTP server's connections.
#include "CBatonSystem.h"
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <linux/inet_diag.h>

/// Fills the diag id of the peer's socket: its source is our peer, its destination is us.
static int peer_socket_id(int fd, struct inet_diag_sockid *id, uint8_t *family) {
    struct sockaddr_storage local, peer;
    socklen_t local_length = sizeof(local), peer_length = sizeof(peer);
    if (getsockname(fd, (struct sockaddr *)&local, &local_length) != 0) return -errno;
    if (getpeername(fd, (struct sockaddr *)&peer, &peer_length) != 0) return -errno;
    if (local.ss_family != peer.ss_family) return -EAFNOSUPPORT;
    memset(id, 0, sizeof(*id));
    id->idiag_if = 0;
    id->idiag_cookie[0] = INET_DIAG_NOCOOKIE;
    id->idiag_cookie[1] = INET_DIAG_NOCOOKIE;
    if (local.ss_family == AF_INET) {
        struct sockaddr_in *l = (struct sockaddr_in *)&local, *p = (struct sockaddr_in *)&peer;
        id->idiag_sport = p->sin_port;
        id->idiag_dport = l->sin_port;
        memcpy(id->idiag_src, &p->sin_addr, 4);
        memcpy(id->idiag_dst, &l->sin_addr, 4);
    } else if (local.ss_family == AF_INET6) {
        struct sockaddr_in6 *l = (struct sockaddr_in6 *)&local, *p = (struct sockaddr_in6 *)&peer;
        id->idiag_sport = p->sin6_port;
        id->idiag_dport = l->sin6_port;
        memcpy(id->idiag_src, &p->sin6_addr, 16);
        memcpy(id->idiag_dst, &l->sin6_addr, 16);
    } else {
        return -EAFNOSUPPORT;
    }
    *family = (uint8_t)local.ss_family;
    return 0;
}

int baton_tcp_peer_uid(int fd, uint32_t *uid) {
    struct {
        struct nlmsghdr header;
        struct inet_diag_req_v2 request;
    } ask;
    memset(&ask, 0, sizeof(ask));
    uint8_t family = 0;
    int rc = peer_socket_id(fd, &ask.request.id, &family);
    if (rc != 0) return rc;
    ask.header.nlmsg_len = sizeof(ask);
    ask.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    ask.header.nlmsg_flags = NLM_F_REQUEST;
    ask.header.nlmsg_seq = 1;
    ask.request.sdiag_family = family;
    ask.request.sdiag_protocol = IPPROTO_TCP;
    ask.request.idiag_states = ~0U;

    int diag = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (diag < 0) return -errno;
    struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
    if (sendto(diag, &ask, sizeof(ask), 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0) {
        int e = errno;
        close(diag);
        return -e;
    }
    // One answer: the socket, or an error (ENOENT: not a socket of this host's, a remote peer).
    union { struct nlmsghdr header; char bytes[8192]; } answer;
    ssize_t n;
    do { n = recv(diag, &answer, sizeof(answer), 0); } while (n < 0 && errno == EINTR);
    int e = errno;
    close(diag);
    if (n < 0) return -e;
    struct nlmsghdr *message = &answer.header;
    if (!NLMSG_OK(message, (size_t)n)) return -EBADMSG;
    if (message->nlmsg_type == NLMSG_ERROR) {
        struct nlmsgerr *error = NLMSG_DATA(message);
        if (message->nlmsg_len < NLMSG_LENGTH(sizeof(*error))) return -EBADMSG;
        return error->error != 0 ? error->error : -ENOENT;
    }
    if (message->nlmsg_type != SOCK_DIAG_BY_FAMILY || message->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg))) return -EBADMSG;
    struct inet_diag_msg *found = NLMSG_DATA(message);
    *uid = found->idiag_uid;
    return 0;
}

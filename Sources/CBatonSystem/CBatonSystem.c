#define _GNU_SOURCE
#include "CBatonSystem.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <grp.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/un.h>
#include <sys/prctl.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <stdlib.h>
#include <netdb.h>
#include <stdio.h>
#include <netinet/in.h>

int baton_peer_credentials(int fd, uint32_t *uid, uint32_t *gid, int32_t *pid) {
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return -1;
    *uid = cred.uid;
    *gid = cred.gid;
    *pid = cred.pid;
    return 0;
}

int baton_spawn(const char *const argv[], const char *const envp[], const char *cwd,
                int stdout_fd, int stderr_fd, int progress_fd, pid_t *pid) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    int rc = posix_spawn_file_actions_init(&actions);
    if (rc != 0) return rc;
    rc = posix_spawnattr_init(&attr);
    if (rc != 0) { posix_spawn_file_actions_destroy(&actions); return rc; }

    sigset_t empty, defaults;
    sigemptyset(&empty);
    sigemptyset(&defaults);
    // Dispositions a daemon commonly changes; the action starts with the defaults.
    int reset[] = { SIGPIPE, SIGHUP, SIGINT, SIGTERM, SIGCHLD, SIGQUIT, SIGUSR1, SIGUSR2 };
    for (size_t i = 0; i < sizeof(reset) / sizeof(reset[0]); i++) sigaddset(&defaults, reset[i]);

    if (!rc) rc = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    if (!rc) rc = posix_spawnattr_setpgroup(&attr, 0);
    if (!rc) rc = posix_spawnattr_setsigmask(&attr, &empty);
    if (!rc) rc = posix_spawnattr_setsigdefault(&attr, &defaults);
    if (!rc) rc = posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    if (!rc) rc = posix_spawn_file_actions_adddup2(&actions, stdout_fd, 1);
    if (!rc) rc = posix_spawn_file_actions_adddup2(&actions, stderr_fd, 2);
    if (!rc && progress_fd >= 0) rc = posix_spawn_file_actions_adddup2(&actions, progress_fd, 3);
    if (!rc) rc = posix_spawn_file_actions_addclosefrom_np(&actions, progress_fd >= 0 ? 4 : 3);
    if (!rc && cwd != NULL) rc = posix_spawn_file_actions_addchdir_np(&actions, cwd);
    if (!rc) {
        rc = posix_spawnp(pid, argv[0], &actions, &attr, (char *const *)argv, (char *const *)envp);
    }
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
    return rc;
}

pid_t baton_gettid(void) {
    // Asked on every request (`Reactor.isCurrent`): one syscall per thread, not per question. A
    // thread's id never changes; a forked child (spawns only) runs no code that asks before exec.
    static __thread pid_t tid;
    if (tid == 0) tid = (pid_t)syscall(SYS_gettid);
    return tid;
}

int baton_pidfd_open(pid_t pid) {
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

int baton_pidfd_signal(int pidfd, int sig) {
    return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

int baton_has_exited(pid_t pid) {
    siginfo_t info;
    memset(&info, 0, sizeof(info));
    if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0) return -1;
    return info.si_pid == pid ? 1 : 0;
}

int baton_reap(pid_t pid, int *exit_code, int *signal) {
    int status = 0;
    pid_t r;
    do { r = waitpid(pid, &status, 0); } while (r < 0 && errno == EINTR);
    if (r < 0) return -1;
    if (WIFEXITED(status)) { *exit_code = WEXITSTATUS(status); *signal = 0; }
    else if (WIFSIGNALED(status)) { *exit_code = -1; *signal = WTERMSIG(status); }
    else { *exit_code = -1; *signal = 0; }
    return 0;
}

int baton_pipe(int fds[2]) {
    return pipe2(fds, O_CLOEXEC);
}

int baton_eventfd(void) {
    return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

int baton_epoll_create(void) {
    return epoll_create1(EPOLL_CLOEXEC);
}

int baton_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t token) {
    struct epoll_event event;
    memset(&event, 0, sizeof(event));
    event.events = events;
    event.data.u64 = token;
    return epoll_ctl(epfd, op, fd, &event);
}

int baton_epoll_wait(int epfd, uint64_t *tokens, uint32_t *events, int max, int timeout_ms) {
    struct epoll_event list[256];
    if (max > 256) max = 256;
    int n;
    do { n = epoll_wait(epfd, list, max, timeout_ms); } while (n < 0 && errno == EINTR);
    for (int i = 0; i < n; i++) {
        tokens[i] = list[i].data.u64;
        events[i] = list[i].events;
    }
    return n;
}

static int fill_address(struct sockaddr_un *address, const char *path) {
    memset(address, 0, sizeof(*address));
    address->sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(address->sun_path)) { errno = ENAMETOOLONG; return -1; }
    strcpy(address->sun_path, path);
    return 0;
}

int baton_unix_bind(int fd, const char *path) {
    struct sockaddr_un address;
    if (fill_address(&address, path) != 0) return -1;
    return bind(fd, (struct sockaddr *)&address, sizeof(address));
}

int baton_unix_connect(int fd, const char *path) {
    struct sockaddr_un address;
    if (fill_address(&address, path) != 0) return -1;
    int rc;
    do { rc = connect(fd, (struct sockaddr *)&address, sizeof(address)); } while (rc < 0 && errno == EINTR);
    return rc;
}

int baton_accept(int fd) {
    return accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

int baton_unix_sendto(const char *path, const void *bytes, size_t length) {
    struct sockaddr_un address;
    memset(&address, 0, sizeof(address));
    address.sun_family = AF_UNIX;
    size_t pathLength = strlen(path);
    if (pathLength == 0 || pathLength >= sizeof(address.sun_path)) return -EINVAL;
    memcpy(address.sun_path, path, pathLength);
    if (path[0] == '@') address.sun_path[0] = '\0';
    socklen_t size = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + pathLength + (path[0] == '@' ? 0 : 1));
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    ssize_t sent = sendto(fd, bytes, length, MSG_NOSIGNAL, (struct sockaddr *)&address, size);
    int error = sent < 0 ? errno : 0;
    close(fd);
    return sent < 0 ? -error : 0;
}

int baton_set_subreaper(void) {
    return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
}

int baton_reap_group(pid_t pgid) {
    int count = 0;
    while (waitpid(-pgid, NULL, WNOHANG) > 0) count++;
    return count;
}

pid_t baton_waitable_child(void) {
    siginfo_t info;
    memset(&info, 0, sizeof(info));
    if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0) return -1;
    return info.si_pid;
}

pid_t baton_waitable_in_group(pid_t pgid) {
    siginfo_t info;
    memset(&info, 0, sizeof(info));
    if (waitid(P_PGID, (id_t)pgid, &info, WEXITED | WNOHANG | WNOWAIT) != 0) return -1;
    return info.si_pid;
}

int baton_reap_nohang(pid_t pid) {
    return waitpid(pid, NULL, WNOHANG) > 0 ? 1 : 0;
}

static int signal_pipe_write = -1;

static void baton_signal_handler(int number) {
    int saved = errno;
    unsigned char byte = (unsigned char)number;
    if (signal_pipe_write >= 0) (void)write(signal_pipe_write, &byte, 1);
    errno = saved;
}

int baton_signal_route(const int *signals, int count) {
    if (signal_pipe_write < 0) { errno = EBADF; return -1; }
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_handler = baton_signal_handler;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    for (int i = 0; i < count; i++) {
        if (sigaction(signals[i], &action, NULL) != 0) return -1;
    }
    return 0;
}

int baton_signal_pipe(const int *signals, int count) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return -1;
    signal_pipe_write = fds[1];
    return baton_signal_route(signals, count) == 0 ? fds[0] : -1;
}

int baton_tcp_listen(const char *host, uint16_t port, int backlog, uint16_t *bound_port) {
    struct addrinfo hints, *found = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
    char service[8];
    snprintf(service, sizeof(service), "%u", (unsigned)port);
    if (getaddrinfo(host, service, &hints, &found) != 0 || found == NULL) return -EINVAL;
    int fd = socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) { int e = errno; freeaddrinfo(found); return -e; }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (found->ai_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    if (bind(fd, found->ai_addr, found->ai_addrlen) != 0 || listen(fd, backlog) != 0) {
        int e = errno; close(fd); freeaddrinfo(found); return -e;
    }
    freeaddrinfo(found);
    struct sockaddr_storage address;
    socklen_t length = sizeof(address);
    if (getsockname(fd, (struct sockaddr *)&address, &length) == 0) {
        *bound_port = ntohs(address.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&address)->sin6_port
                                                          : ((struct sockaddr_in *)&address)->sin_port);
    }
    return fd;
}

int baton_spawn_close_from(posix_spawn_file_actions_t *actions, int lowest) {
    return posix_spawn_file_actions_addclosefrom_np(actions, lowest);
}

void baton_set_thread_name(const char *name) {
    char short_name[16];
    strncpy(short_name, name, sizeof(short_name) - 1);
    short_name[sizeof(short_name) - 1] = '\0';
    pthread_setname_np(pthread_self(), short_name);
}

static _Thread_local int lock_depth;

int baton_lock_depth(int delta) {
    lock_depth += delta;
    return lock_depth;
}

/* A pseudo-terminal for an attempt that asks for one (`tty: true`): the master for batond, the
   slave for the process's stdout and stderr, both close-on-exec (the spawn dups the slave). Output
   post-processing is off, so that a newline stays a newline in the history; 80x24 like a plain
   terminal. Returns 0, or an errno. */
int baton_openpty(int *master, int *slave) {
    int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (m < 0) return errno;
    char name[128];
    if (grantpt(m) != 0 || unlockpt(m) != 0 || ptsname_r(m, name, sizeof(name)) != 0) {
        int error = errno;
        close(m);
        return error;
    }
    int s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (s < 0) {
        int error = errno;
        close(m);
        return error;
    }
    struct termios modes;
    if (tcgetattr(s, &modes) == 0) {
        modes.c_oflag &= ~(tcflag_t)OPOST;
        tcsetattr(s, TCSANOW, &modes);
    }
    struct winsize size = { .ws_row = 24, .ws_col = 80 };
    ioctl(s, TIOCSWINSZ, &size);
    *master = m;
    *slave = s;
    return 0;
}

int baton_mkstemp_cloexec(char *template) {
    return mkostemp(template, O_CLOEXEC);
}

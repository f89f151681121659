#define _GNU_SOURCE
#include "baton_clone3.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif

/// The kernel's `struct clone_args` up to `cgroup` (CLONE_ARGS_SIZE_VER2), named apart from
/// <linux/sched.h>'s, which glibc's <sched.h> does not mix with.
struct baton_clone_args {
    uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size, cgroup;
};

int baton_clone3_run_in_cgroup(const char *path, int cgroup_fd, int *status) {
    char *const argv[] = {(char *)path, NULL};
    char *const envp[] = {NULL};
    int pidfd = -1;
    struct baton_clone_args args;
    memset(&args, 0, sizeof(args));
    args.flags = CLONE_INTO_CGROUP | CLONE_PIDFD | CLONE_VFORK;
    args.pidfd = (uint64_t)(uintptr_t)&pidfd;
    args.exit_signal = SIGCHLD;
    args.cgroup = (uint64_t)cgroup_fd;
    long pid = syscall(SYS_clone3, &args, sizeof(args));
    if (pid < 0) return errno;
    if (pid == 0) {
        // The child: only what is safe after a fork in a threaded process.
        execve(path, argv, envp);
        _exit(127);
    }
    struct pollfd ready = {.fd = pidfd, .events = POLLIN};
    while (poll(&ready, 1, -1) < 0 && errno == EINTR) {}
    siginfo_t info;
    memset(&info, 0, sizeof(info));
    int rc;
    while ((rc = waitid((idtype_t)P_PIDFD, (id_t)pidfd, &info, WEXITED)) < 0 && errno == EINTR) {}
    int error = rc < 0 ? errno : 0;
    close(pidfd);
    if (error != 0) return error;
    *status = info.si_code == CLD_EXITED ? (info.si_status & 0xff) << 8 : (info.si_status & 0x7f);
    return 0;
}

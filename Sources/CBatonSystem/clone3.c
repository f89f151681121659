#define _GNU_SOURCE
#include "baton_clone3.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
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

/// What the child needs to exec, set up before the clone (the child allocates nothing).
struct child_exec {
    const char *path;
    char *const *argv;
    char *const *envp;
};

#if defined(__x86_64__)
/// The child: execs, or returns (and exits 127). It runs on its own stack in the parent's memory
/// (CLONE_VM) while the parent waits (CLONE_VFORK), as posix_spawn's child does.
static void exec_child(void *context) {
    struct child_exec *exec = context;
    execve(exec->path, exec->argv, exec->envp);
}

/// clone3 with CLONE_VM: the child starts on args->stack, so it cannot return through a libc
/// wrapper; it calls fn(arg) there and exits with 127 if fn returns. 0 is never returned.
static long clone3_vm(struct baton_clone_args *args, void (*fn)(void *), void *arg) {
    long ret;
    register void (*function)(void *) __asm__("r12") = fn;
    register void *argument __asm__("r13") = arg;
    __asm__ volatile(
        "syscall\n\t"
        "test %%rax, %%rax\n\t"
        "jnz 1f\n\t"
        "xor %%ebp, %%ebp\n\t"
        "mov %%r13, %%rdi\n\t"
        "call *%%r12\n\t"
        "mov $60, %%eax\n\t"
        "mov $127, %%edi\n\t"
        "syscall\n\t"
        "hlt\n\t"
        "1:\n\t"
        : "=a"(ret)
        : "a"((long)SYS_clone3), "D"(args), "S"(sizeof(*args)), "r"(function), "r"(argument)
        : "rcx", "r11", "memory");
    return ret;
}
#endif

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
    long pid;
#if defined(__x86_64__)
    // Like posix_spawn: the child shares this memory on a stack of its own (this frame's, unused
    // while this thread waits for its exec), with every signal blocked so that no handler runs
    // in it; /bin/true keeps that mask.
    _Alignas(16) char stack[32768];
    struct child_exec exec = {path, argv, envp};
    args.flags |= CLONE_VM;
    args.stack = (uint64_t)(uintptr_t)stack;
    args.stack_size = sizeof(stack);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid = clone3_vm(&args, exec_child, &exec);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pid < 0) return (int)-pid;
#else
    // Elsewhere a copy of the caller, as a fork is.
    pid = syscall(SYS_clone3, &args, sizeof(args));
    if (pid < 0) return errno;
    if (pid == 0) {
        execve(path, argv, envp);
        _exit(127);
    }
#endif
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

#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>

/// 1 until clone3 into a cgroup is found missing (or turned off): then every spawn takes the other way.
static atomic_int clone3_usable = 1;

int baton_spawn_clone3_enable(int enabled) { return atomic_exchange(&clone3_usable, enabled ? 1 : 0); }

#if defined(__x86_64__)
static void run_child(void *context) { baton_child_run(context); }
#endif

int baton_spawn_clone3(const char *const argv[], const char *const envp[], const char *cwd,
                       int stdout_fd, int stderr_fd, int progress_fd, int cgroup_dir_fd,
                       const int *v1_procs_fds, size_t v1_count, int set_ids, uid_t uid, gid_t gid, const gid_t *groups,
                       size_t group_count, int set_umask, mode_t mask, pid_t *pid, int *pidfd) {
#if defined(__x86_64__)
    if (!atomic_load(&clone3_usable)) return -1;
    char file[PATH_MAX];
    int resolved = baton_resolve_program(argv[0], file, sizeof(file));
    if (resolved != 0) return resolved;
    int devnull = baton_devnull();
    if (devnull < 0) return errno;
    struct baton_child setup = {file, argv, envp, cwd, devnull, stdout_fd, stderr_fd, progress_fd, -1,
                                v1_procs_fds, v1_count, set_ids, uid, gid, groups, group_count, set_umask, mask, 0};
    int child_pidfd = -1;
    struct baton_clone_args args;
    memset(&args, 0, sizeof(args));
    args.flags = CLONE_INTO_CGROUP | CLONE_PIDFD | CLONE_VFORK | CLONE_VM;
    args.pidfd = (uint64_t)(uintptr_t)&child_pidfd;
    args.exit_signal = SIGCHLD;
    args.cgroup = (uint64_t)cgroup_dir_fd;
    // The child runs on a stack of its own in this frame (unused while this thread waits for its
    // exec), every signal blocked until it has set their handlers to the default.
    _Alignas(16) char stack[32768];
    args.stack = (uint64_t)(uintptr_t)stack;
    args.stack_size = sizeof(stack);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int saved_errno = errno;
    long child = clone3_vm(&args, run_child, &setup);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = saved_errno;
    if (child < 0) {
        // No clone3, or none that takes CLONE_INTO_CGROUP: never again in this process. Any
        // other refusal (a cgroup it cannot enter): this spawn goes the other way, which says why.
        if (child == -ENOSYS || child == -E2BIG || child == -EINVAL) atomic_store(&clone3_usable, 0);
        return -1;
    }
    if (setup.error != 0) {
        siginfo_t info;
        while (waitid((idtype_t)P_PIDFD, (id_t)child_pidfd, &info, WEXITED) < 0 && errno == EINTR) {}
        close(child_pidfd);
        return setup.error;
    }
    *pid = (pid_t)child;
    *pidfd = child_pidfd;
    return 0;
#else
    (void)argv; (void)envp; (void)cwd; (void)stdout_fd; (void)stderr_fd; (void)progress_fd; (void)cgroup_dir_fd;
    (void)v1_procs_fds; (void)v1_count; (void)set_ids; (void)uid; (void)gid; (void)groups; (void)group_count;
    (void)set_umask; (void)mask; (void)pid; (void)pidfd;
    return -1;
#endif
}

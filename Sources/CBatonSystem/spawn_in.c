#define _GNU_SOURCE
#include "CBatonSystem.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/// Marks every descriptor from `first` on close-on-exec: one close_range(CLOSE_RANGE_CLOEXEC),
/// or where the kernel has none (before 5.11) or `by_loop`, one fcntl per descriptor up to the
/// limit (EBADF for those not open). Only system calls: safe in the spawned child.
void baton_cloexec_from(int first, int by_loop) {
    if (!by_loop && syscall(SYS_close_range, (unsigned)first, ~0U, 4 /* CLOSE_RANGE_CLOEXEC */) == 0) return;
    struct rlimit limit;
    long last = 1L << 20; // the kernel's default nr_open: no descriptor is above it unless raised
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY && (long)limit.rlim_cur < last) last = (long)limit.rlim_cur;
    for (long fd = first; fd < last; fd++) fcntl((int)fd, F_SETFD, FD_CLOEXEC);
}

/// The file argv[0] names: itself when it has a slash, else the first executable regular file
/// of that name in PATH (batond's, as posix_spawnp searches). 0 or an errno.
int baton_resolve_program(const char *name, char *out, size_t size) {
    if (strchr(name, '/') != NULL) {
        if (strlen(name) >= size) return ENAMETOOLONG;
        strcpy(out, name);
        return 0;
    }
    const char *path = getenv("PATH");
    if (path == NULL || *path == '\0') path = "/usr/local/bin:/usr/bin:/bin";
    int found = ENOENT;
    for (const char *start = path;; ) {
        const char *end = strchrnul(start, ':');
        size_t length = (size_t)(end - start);
        if (length == 0) { start = "."; length = 1; }
        if (length + 1 + strlen(name) < size) {
            memcpy(out, start, length);
            out[length] = '/';
            strcpy(out + length + 1, name);
            struct stat info;
            if (stat(out, &info) == 0 && S_ISREG(info.st_mode)) {
                if (access(out, X_OK) == 0) return 0;
                found = EACCES;
            }
        }
        if (*end == '\0') break;
        start = end + 1;
    }
    return found;
}

void baton_child_run(struct baton_child *child) {
    // Only system calls from here to exec: the parent is suspended, its memory is ours.
    struct sigaction defaults;
    memset(&defaults, 0, sizeof(defaults));
    defaults.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++) {
        if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &defaults, NULL);
    }
    int fail = 0;
    if (child->cgroup_procs_fd >= 0 && write(child->cgroup_procs_fd, "0", 1) != 1) fail = errno ? errno : EIO;
    // "0" is the writer: only this child moves (a v1 group's cgroup.procs moves its thread group).
    for (size_t i = 0; !fail && i < child->v1_count; i++) {
        if (write(child->v1_procs_fds[i], "0", 1) != 1) fail = errno ? errno : EIO;
    }
    if (!fail && setpgid(0, 0) != 0) fail = errno;
    if (!fail && (dup2(child->devnull, 0) < 0 || dup2(child->stdout_fd, 1) < 0 || dup2(child->stderr_fd, 2) < 0)) fail = errno;
    if (!fail && child->progress_fd >= 0 && dup2(child->progress_fd, 3) < 0) fail = errno;
    if (!fail) baton_cloexec_from(child->progress_fd >= 0 ? 4 : 3, 0);
    if (!fail && child->set_umask) umask(child->mask);
    if (!fail && child->set_ids) {
        // Raw calls: glibc's would try to change every thread of the parent too.
        if (syscall(SYS_setgroups, child->group_count, child->groups) != 0 || syscall(SYS_setresgid, child->gid, child->gid, child->gid) != 0
            || syscall(SYS_setresuid, child->uid, child->uid, child->uid) != 0) fail = errno;
    }
    if (!fail && child->cwd != NULL && chdir(child->cwd) != 0) fail = errno;
    if (!fail) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execve(child->file, (char *const *)child->argv, (char *const *)child->envp);
        fail = errno;
    }
    child->error = fail;
}

/// Whether `fd` is still the /dev/null `slot` opened (a character device of the same st_rdev and
/// st_ino): a number closed by mistake elsewhere and reused by another open is not.
static int null_still(const struct baton_null *slot, int fd) {
    struct stat st;
    return fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == __atomic_load_n(&slot->rdev, __ATOMIC_ACQUIRE) &&
           st.st_ino == __atomic_load_n(&slot->ino, __ATOMIC_ACQUIRE);
}

/// A new /dev/null (close-on-exec) moved to a number from 100 on (from 3 where the limit is lower):
/// never 0-2, where a child's dup2 onto its stdin would keep it close-on-exec.
static int null_open(struct baton_null *slot) {
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, 100);
    if (high < 0) high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (high >= 0) {
        close(fd);
        fd = high;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int error = errno;
        close(fd);
        errno = error;
        return -1;
    }
    // The same device and inode whoever opens it: stored before the fd is published.
    __atomic_store_n(&slot->rdev, st.st_rdev, __ATOMIC_RELEASE);
    __atomic_store_n(&slot->ino, st.st_ino, __ATOMIC_RELEASE);
    return fd;
}

int baton_null_fd(struct baton_null *slot) {
    for (int tries = 0; tries < 8; tries++) {
        int fd = __atomic_load_n(&slot->fd, __ATOMIC_ACQUIRE);
        if (fd >= 0 && null_still(slot, fd)) return fd;
        int opened = null_open(slot);
        if (opened < 0) return -1;
        // Replaces what was there; a number no longer /dev/null is someone else's now: not closed.
        if (__atomic_compare_exchange_n(&slot->fd, &fd, opened, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return opened;
        close(opened);
    }
    errno = EAGAIN;
    return -1;
}

int baton_devnull(void) {
    static struct baton_null shared = {-1, 0, 0};
    return baton_null_fd(&shared);
}

int baton_spawn_in(const char *const argv[], const char *const envp[], const char *cwd,
                   int stdout_fd, int stderr_fd, int progress_fd, int cgroup_procs_fd,
                   const int *v1_procs_fds, size_t v1_count, int set_ids, uid_t uid, gid_t gid, const gid_t *groups, size_t group_count,
                   int set_umask, mode_t mask, pid_t *pid) {
    char file[PATH_MAX];
    int resolved = baton_resolve_program(argv[0], file, sizeof(file));
    if (resolved != 0) return resolved;
    int devnull = baton_devnull();
    if (devnull < 0) return errno;
    // Set by the child, which shares this memory until it execs or exits.
    struct baton_child setup = {file, argv, envp, cwd, devnull, stdout_fd, stderr_fd, progress_fd, cgroup_procs_fd,
                                v1_procs_fds, v1_count, set_ids, uid, gid, groups, group_count, set_umask, mask, 0};
    // No signal handler may run in the child, which runs on this thread's stack.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int saved_errno = errno;
    pid_t child = vfork();
    if (child == 0) {
        baton_child_run(&setup);
        _exit(127);
    }
    int spawn_errno = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = saved_errno;
    if (child < 0) return spawn_errno;
    if (setup.error != 0) {
        int status;
        while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}
        return setup.error;
    }
    *pid = child;
    return 0;
}

int baton_write_control(int fd, const char *text) {
    size_t length = strlen(text);
    ssize_t n;
    do { n = pwrite(fd, text, length, 0); } while (n < 0 && errno == EINTR);
    return n == (ssize_t)length ? 0 : (n < 0 ? errno : EIO);
}

#include <dirent.h>
#include <stdio.h>

int baton_proc_table(int32_t *pids, int32_t *parents, int32_t *groups, char *states, int max) {
    DIR *proc = opendir("/proc");
    if (proc == NULL) return -1;
    int count = 0;
    struct dirent *entry;
    char path[64], text[512];
    while (count < max && (entry = readdir(proc)) != NULL) {
        const char *name = entry->d_name;
        if (name[0] < '1' || name[0] > '9') continue;
        snprintf(path, sizeof(path), "/proc/%s/stat", name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        ssize_t n = read(fd, text, sizeof(text) - 1);
        close(fd);
        if (n <= 0) continue;
        text[n] = '\0';
        // The command name is in parentheses and may hold anything: parse after the last ')'.
        char *close_paren = strrchr(text, ')');
        if (close_paren == NULL) continue;
        char state;
        int parent, group;
        if (sscanf(close_paren + 1, " %c %d %d", &state, &parent, &group) != 3) continue;
        pids[count] = (int32_t)atoi(name);
        parents[count] = parent;
        groups[count] = group;
        states[count] = state;
        count++;
    }
    closedir(proc);
    return count;
}

int baton_proc_children(pid_t pid, int32_t *children, int max) {
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    DIR *tasks = opendir(path);
    if (tasks == NULL) return -1;
    int count = 0;
    struct dirent *entry;
    char text[4096];
    while ((entry = readdir(tasks)) != NULL) {
        if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
        char file[96];
        snprintf(file, sizeof(file), "/proc/%d/task/%s/children", (int)pid, entry->d_name);
        int fd = open(file, O_RDONLY | O_CLOEXEC);
        if (fd < 0) { closedir(tasks); return -1; }
        ssize_t n = read(fd, text, sizeof(text) - 1);
        close(fd);
        if (n < 0) continue;
        text[n] = '\0';
        for (char *cursor = text; *cursor && count < max; ) {
            char *end;
            long child = strtol(cursor, &end, 10);
            if (end == cursor) break;
            children[count++] = (int32_t)child;
            cursor = end;
        }
    }
    closedir(tasks);
    return count;
}

unsigned long long baton_proc_start_time(pid_t pid) {
    char path[64], text[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, text, sizeof(text) - 1);
    close(fd);
    if (n <= 0) return 0;
    text[n] = '\0';
    char *cursor = strrchr(text, ')');
    if (cursor == NULL) return 0;
    // Field 22 (starttime) is the 20th after the command name's closing parenthesis.
    for (int field = 0; field < 20 && cursor != NULL; field++) cursor = strchr(cursor + 1, ' ');
    return cursor == NULL ? 0 : strtoull(cursor + 1, NULL, 10);
}

#include <sys/resource.h>

int baton_reap_usage(pid_t pid, int *exit_code, int *signal, int64_t *user_us, int64_t *system_us, int64_t *max_rss_bytes) {
    int status = 0;
    struct rusage usage;
    memset(&usage, 0, sizeof(usage));
    pid_t r;
    do { r = wait4(pid, &status, WNOHANG, &usage); } while (r < 0 && errno == EINTR);
    if (r <= 0) return r < 0 ? -1 : 0;
    if (WIFEXITED(status)) { *exit_code = WEXITSTATUS(status); *signal = 0; }
    else if (WIFSIGNALED(status)) { *exit_code = -1; *signal = WTERMSIG(status); }
    else { *exit_code = -1; *signal = 0; }
    *user_us = (int64_t)usage.ru_utime.tv_sec * 1000000 + usage.ru_utime.tv_usec;
    *system_us = (int64_t)usage.ru_stime.tv_sec * 1000000 + usage.ru_stime.tv_usec;
    *max_rss_bytes = (int64_t)usage.ru_maxrss * 1024;
    return 1;
}

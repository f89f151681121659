#ifndef BATON_CLONE3_H
#define BATON_CLONE3_H

#include <stddef.h>
#include <sys/types.h>

/// Runs `path` (no arguments, an empty environment) born in the cgroup v2 directory open at
/// cgroup_fd: clone3(CLONE_INTO_CGROUP | CLONE_PIDFD | CLONE_VFORK), so that nobody writes its
/// `cgroup.procs`; then waits for it on its pidfd (poll, then waitid(P_PIDFD)). On x86_64 the
/// child shares the caller's memory until it execs (CLONE_VM, as posix_spawn's does); elsewhere
/// it is a copy, as a fork is. Returns 0 and the child's wait status, or an errno (ENOSYS: no
/// clone3 in this kernel).
int baton_clone3_run_in_cgroup(const char *path, int cgroup_fd, int *status);

/// What a spawned child does before it execs (`baton_child_run`), set up before the spawn: the
/// child allocates nothing. `error` is the errno it failed with, 0 while it has not.
struct baton_child {
    const char *file;
    const char *const *argv;
    const char *const *envp;
    const char *cwd;
    int devnull, stdout_fd, stderr_fd, progress_fd, cgroup_procs_fd;
    const int *v1_procs_fds;
    size_t v1_count;
    int set_ids;
    uid_t uid;
    gid_t gid;
    const gid_t *groups;
    size_t group_count;
    int set_umask;
    mode_t mask;
    volatile int error;
};

/// In a child that shares its parent's memory (vfork, clone3 with CLONE_VM): default signal
/// handlers, the cgroups to join by writing (when their fds are >= 0), a process group of its own,
/// stdin from /dev/null and the output ends, descriptors from 3 (4 with progress) closed on exec,
/// umask, identity, cwd, then exec. Returns only when a step failed, its errno in `error`.
void baton_child_run(struct baton_child *child);

/// One /dev/null kept open (close-on-exec): its fd (-1 until opened), and the st_rdev and st_ino it
/// had, by which each use checks that the number is still /dev/null.
struct baton_null {
    int fd;
    dev_t rdev;
    ino_t ino;
};

/// The /dev/null `slot` holds, opened (again) when it has none or its number is no longer /dev/null
/// (closed by mistake and reused by another open: never given to a child as its stdin); one fstat
/// a use. -1 and errno when it cannot be opened.
int baton_null_fd(struct baton_null *slot);

/// The process's /dev/null (`baton_null_fd` of one slot for the whole process), a spawned child's
/// stdin (every clone3 and vfork child shares its one open file description: harmless for
/// /dev/null); -1 and errno when it cannot be opened.
int baton_devnull(void);

/// The file argv[0] names: itself when it has a slash, else searched in PATH. 0 or an errno.
int baton_resolve_program(const char *name, char *out, size_t size);

/// Like baton_spawn_in, but the child is born in the cgroup v2 directory open at cgroup_dir_fd
/// (clone3 with CLONE_INTO_CGROUP | CLONE_PIDFD | CLONE_VFORK | CLONE_VM), so that no one writes
/// its `cgroup.procs`; its pidfd comes back in *pidfd. Returns 0, an errno (the spawn or the
/// child's steps before exec failed), or -1 where clone3 into a cgroup cannot be had (no clone3,
/// no CLONE_INTO_CGROUP, not x86_64, or turned off): the caller spawns the other way then.
int baton_spawn_clone3(const char *const argv[], const char *const envp[], const char *cwd,
                       int stdout_fd, int stderr_fd, int progress_fd, int cgroup_dir_fd,
                       const int *v1_procs_fds, size_t v1_count, int set_ids, uid_t uid, gid_t gid, const gid_t *groups,
                       size_t group_count, int set_umask, mode_t mask, pid_t *pid, int *pidfd);

/// Turns clone3 spawning on or off for this process (tests of the fallback); returns the old setting.
int baton_spawn_clone3_enable(int enabled);

#endif

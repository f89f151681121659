#ifndef BATON_CLONE3_H
#define BATON_CLONE3_H

#include <sys/types.h>

/// Runs `path` (no arguments, an empty environment) born in the cgroup v2 directory open at
/// cgroup_fd: clone3(CLONE_INTO_CGROUP | CLONE_PIDFD | CLONE_VFORK), so that nobody writes its
/// `cgroup.procs`; then waits for it on its pidfd (poll, then waitid(P_PIDFD)). On x86_64 the
/// child shares the caller's memory until it execs (CLONE_VM, as posix_spawn's does); elsewhere
/// it is a copy, as a fork is. Returns 0 and the child's wait status, or an errno (ENOSYS: no
/// clone3 in this kernel).
int baton_clone3_run_in_cgroup(const char *path, int cgroup_fd, int *status);

#endif

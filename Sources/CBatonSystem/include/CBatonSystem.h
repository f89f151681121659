#ifndef CBATON_SYSTEM_H
#define CBATON_SYSTEM_H

#include <stdint.h>
#include <sys/types.h>
#include <spawn.h>

/// The peer credentials of a connected Unix socket (SO_PEERCRED). Returns 0 or -1 with errno.
int baton_peer_credentials(int fd, uint32_t *uid, uint32_t *gid, int32_t *pid);

/// Spawns argv[0] (searched in PATH when it has no slash) with posix_spawn in a new process group:
/// stdin from /dev/null, stdout and stderr to the given fds, progress_fd (if >= 0) as fd 3,
/// every other fd closed, signal mask and dispositions reset, working directory cwd (if not NULL).
/// Returns 0 and the child's pid, or an errno value.
int baton_spawn(const char *const argv[], const char *const envp[], const char *cwd,
                int stdout_fd, int stderr_fd, int progress_fd, pid_t *pid);

/// The kernel's id of the calling thread (gettid(2)), asked of the kernel once per thread.
pid_t baton_gettid(void);

/// pidfd_open(2): a file descriptor that becomes readable when the process exits, or -1 with errno.
int baton_pidfd_open(pid_t pid);

/// pidfd_send_signal(2): signals the very process the pidfd refers to (never one that reused its
/// pid). Returns 0 or -1 with errno.
int baton_pidfd_signal(int pidfd, int sig);

/// Installs a handler for each signal that writes its number, as one byte, to a pipe; returns
/// the pipe's non-blocking read end (or -1 with errno). The handler is in place when this returns,
/// so no signal sent after it is lost, whichever thread the kernel delivers it to.
int baton_signal_pipe(const int *signals, int count);

/// Sends more signals to the pipe `baton_signal_pipe` made, from now on. Returns 0 or -1 with errno.
int baton_signal_route(const int *signals, int count);

/// prctl(PR_SET_CHILD_SUBREAPER): orphaned descendants become this process's children, so that
/// it can reap what is left of an action's process group. 0 or -1 with errno.
int baton_set_subreaper(void);

/// Reaps every exited child in process group pgid without waiting; returns how many.
int baton_reap_group(pid_t pgid);

/// The pid of an exited child, left unreaped (WNOWAIT); 0 when there is none, -1 with errno.
pid_t baton_waitable_child(void);

/// The pid of an exited child in process group pgid, left unreaped; 0 when none, -1 with errno.
pid_t baton_waitable_in_group(pid_t pgid);

/// Reaps pid if it has exited, without waiting: 1 when reaped, 0 otherwise.
int baton_reap_nohang(pid_t pid);

/// 1 when the child has exited (without reaping it), 0 while it runs, -1 with errno.
int baton_has_exited(pid_t pid);

/// Reaps the child; returns 0 and fills exit code (or -1) and signal (or 0), or -1 with errno.
int baton_reap(pid_t pid, int *exit_code, int *signal);

/// pipe2(2) with O_CLOEXEC: both ends close on exec. Returns 0 or -1 with errno.
int baton_pipe(int fds[2]);
/// A pseudo-terminal pair for an attempt: 0, or an errno.
int baton_openpty(int *master, int *slave);

/// A non-blocking, close-on-exec eventfd, or -1 with errno.
int baton_eventfd(void);

/// epoll helpers: register (op 1), modify (op 3) or remove (op 2) fd with a 64-bit token.
int baton_epoll_create(void);
int baton_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t token);
/// Waits for events; fills tokens and event masks; returns the count, or -1 with errno.
int baton_epoll_wait(int epfd, uint64_t *tokens, uint32_t *events, int max, int timeout_ms);

/// Binds fd to a Unix socket path; -1 with errno ENAMETOOLONG when the path does not fit.
int baton_unix_bind(int fd, const char *path);
/// Connects fd to a Unix socket path.
int baton_unix_connect(int fd, const char *path);

/// accept4(2) with SOCK_NONBLOCK and SOCK_CLOEXEC.
int baton_accept(int fd);
/// A listening TCP socket (non-blocking, close-on-exec) on a numeric IPv4 or IPv6 address;
/// port 0 picks a free one, written to bound_port. Returns the fd, or -errno (-EINVAL: bad address).
int baton_tcp_listen(const char *host, uint16_t port, int backlog, uint16_t *bound_port);
/// The uid owning the other end of an accepted TCP connection, when that end is a socket of this
/// host (NETLINK_SOCK_DIAG); 0, or -errno (-ENOENT for a peer on another host).
int baton_tcp_peer_uid(int fd, uint32_t *uid);

#include "baton_clone3.h"

#endif

/// Sends one datagram to the Unix datagram socket at `path` (a leading '@' names an abstract
/// socket, as in NOTIFY_SOCKET). Returns 0, or -errno.
int baton_unix_sendto(const char *path, const void *bytes, size_t length);

/// mkstemp with the descriptor close-on-exec from its creation (mkostemp, O_CLOEXEC): no child
/// spawned meanwhile on another thread gets it. The descriptor, or -1 with errno.
int baton_mkstemp_cloexec(char *template);

/// Marks every descriptor from `first` on close-on-exec (close_range, or a loop of fcntl where
/// the kernel has no close_range or `by_loop`).
void baton_cloexec_from(int first, int by_loop);

/// Like baton_spawn, but with vfork and exec, so that the child can first join a cgroup (when
/// cgroup_procs_fd, an open `cgroup.procs` of that cgroup, is >= 0: it is in the cgroup before it
/// runs a single instruction of argv; and each of the v1_count cgroup v1 groups whose open
/// `cgroup.procs` v1_procs_fds holds, on a hybrid host where those enforce its limits), take
/// another identity (supplementary groups, gid, uid —
/// when set_ids; raw syscalls, so only the child changes) and umask (when set_umask). argv[0]
/// is searched in batond's PATH when it has no slash. Errors in the child before exec come back
/// as the return value. Returns 0 and the child's pid, or an errno value.
int baton_spawn_in(const char *const argv[], const char *const envp[], const char *cwd,
                   int stdout_fd, int stderr_fd, int progress_fd, int cgroup_procs_fd,
                   const int *v1_procs_fds, size_t v1_count, int set_ids, uid_t uid, gid_t gid, const gid_t *groups, size_t group_count,
                   int set_umask, mode_t mask, pid_t *pid);

/// Every process's pid, parent, group and state from /proc/PID/stat (at most max); the count, or -1.
int baton_proc_table(int32_t *pids, int32_t *parents, int32_t *groups, char *states, int max);

/// The children of every thread of pid, from /proc/PID/task/TID/children (at most max); the
/// count, or -1 when the kernel has no such files (CONFIG_PROC_CHILDREN off).
int baton_proc_children(pid_t pid, int32_t *children, int max);

/// Reaps the child if it has exited (wait4, WNOHANG) with what it and its waited-for descendants
/// used: CPU in microseconds and the largest resident set in bytes. 1 reaped, 0 still running, or
/// -1 with errno.
int baton_reap_usage(pid_t pid, int *exit_code, int *signal, int64_t *user_us, int64_t *system_us, int64_t *max_rss_bytes);

/// The start time of a process in clock ticks since boot (field 22 of /proc/PID/stat), 0 when unknown.
unsigned long long baton_proc_start_time(pid_t pid);

/// Writes "1" to the `cgroup.kill` (or any one-line control file) open at fd: 0 or an errno.
int baton_write_control(int fd, const char *text);


/// Adds "close every descriptor from `lowest` up" to `actions` (glibc's
/// posix_spawn_file_actions_addclosefrom_np, which Swift does not see): 0 or an errno.
int baton_spawn_close_from(posix_spawn_file_actions_t *actions, int lowest);

/// Names the calling thread as `top -H` and /proc/PID/task/*/comm show it (15 bytes kept).
void baton_set_thread_name(const char *name);

/// How many `Locked` locks the calling thread holds, after adding `delta` (debug builds count;
/// effects check it is 0).
int baton_lock_depth(int delta);

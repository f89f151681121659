// baton-shim: the parent of one attempt's action, which outlives batond (as containerd-shim and
// conmon outlive their daemons).
//
//     baton-shim [-s DISK] DIR LIMIT PROGRAM ARGV0 [ARG...]
//
// batond spawns it as the attempt's leader, with the setup the action needs (process group,
// cgroup, user, umask, cwd, environment, stdin /dev/null, stdout on fd 1, stderr on fd 2 and the
// progress pipe on fd 3 when open). The shim makes itself a subreaper, runs PROGRAM (a path batond
// resolved) with ARGV0.. in a child that inherits all of it, and relays the child's stdout, stderr
// and progress to its own fds 1, 2 and 3. When batond's side is gone (EPIPE), or batond hands the
// run over (SIGURG, to the shim alone: it closes its ends of the pipes), stdout and stderr go
// to DIR/output instead (its last LIMIT bytes kept, as batond's tail; progress is dropped). When
// the child has exited and its pipes are drained, the shim writes DIR/status ("exit N" or
// "signal N", tmp + rename) and exits the same way, so that a live batond sees what it saw before.
// With `-s DISK`, DIR is on a tmpfs (batond's runtime directory) and DISK on the state disk: once
// batond's pipes are gone the shim makes DISK (0700, its own: one another user made is refused) and
// spools and writes its status there (docs/architecture.md, "A run outlives batond"). Without `-s`, DIR is both.
// Exit 127 with a line on stderr: PROGRAM could not be executed; its status then says so on a
// second line, "exec-failed ERRNO ARGV0", so that batond fails the start rather than the run.
// Exit 125: a usage error. A child that writes faster than the shim relays never holds it: the
// reads are bounded per wakeup and the child's exit is looked for on every turn; once it has
// exited, what its pipes hold is relayed up to a bound and the shim ends (processes it left
// behind, still writing, are batond's to stop).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unread.h"

enum { OUT, ERR, PROGRESS, STREAMS };

static int wake[2] = { -1, -1 };  // SIGCHLD's self-pipe
static const char *dir;           // where the status goes while batond reads (and all, without -s)
static const char *disk;          // -s DISK: the spool and a status written after batond went; NULL: DIR
static int disk_made;             // 1: DISK is there, 0: not yet (not tried, or could not be made)
static long long limit;           // the spool's bound
static int spool = -1;            // DIR/output, opened when batond is gone
static long long spooled;         // bytes in DIR/output
static int gone;                  // batond's ends are closed
static int exec_failed;           // the errno of the child's failed exec, 0 if it ran
static const char *argv0;         // the action's program as configured, for the status

enum { CHUNK = 65536, READS_PER_TURN = 16, READS_AT_END = 64 };
static char buffer[CHUNK];        // the reads' buffer
static char trimming[CHUNK];      // the spool trimming's: a chunk read into `buffer` may wait to be spooled after a trim

static void on_child(int sig) { (void)sig; int saved = errno; (void)!write(wake[1], "c", 1); errno = saved; }
static void on_stop(int sig) { (void)sig; }  // TERM, INT, HUP...: meant for the action (its group gets them too)
// SIGURG, sent to the shim alone by a batond that stops and leaves the run to the next one.
static volatile sig_atomic_t handing_over;
static void on_hand_over(int sig) { (void)sig; handing_over = 1; on_child(sig); }

static void handle(int sig, void (*handler)(int)) {
    struct sigaction action = { .sa_handler = handler, .sa_flags = SA_RESTART };
    sigaction(sig, &action, NULL);
}

// Writes what it can of `data`: how many bytes went (all `n`, or those before a failure).
static size_t write_upto(int fd, const char *data, size_t n) {
    size_t sent = 0;
    while (sent < n) {
        ssize_t w = write(fd, data + sent, n - sent);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        sent += (size_t)w;
    }
    return sent;
}

static int write_all(int fd, const char *data, size_t n) { return write_upto(fd, data, n) == n ? 0 : -1; }

// Copies `n` bytes at `from` to `to` (from >= to + n: no overlap) through the fixed buffer, so
// that a large spool costs no memory of its size (it would be charged to the run's cgroup).
static int move_down(int fd, long long from, long long to, long long n) {
    while (n > 0) {
        size_t want = n < CHUNK ? (size_t)n : CHUNK;
        ssize_t got = pread(fd, trimming, want, from);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return -1;
        for (ssize_t done = 0; done < got;) {
            ssize_t w = pwrite(fd, trimming + done, (size_t)(got - done), to + done);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) return -1;
            done += w;
        }
        from += got, to += got, n -= got;
    }
    return 0;
}

// Makes `path` (0700), or takes the one there only if it is a directory of this user's that no one else
// may write (never a symlink: lstat); DISK's parent is checked so too: the database's directory may be writable by another.
static int own_dir(const char *path) {
    struct stat st;
    if (mkdir(path, 0700) == 0) return 1;
    if (errno != EEXIST) return 0;
    int ok = lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 022);
    if (!ok) errno = EACCES;
    return ok;
}

// The directory for what outlives batond: DISK (and its parent: own_dir), made at the first call, DIR without -s;
// NULL while DISK cannot be made (tried again at each call: a full disk frees up, a parent another attempt's end removed).
static const char *late_dir(void) {
    if (!disk) return dir;
    if (disk_made <= 0) {
        char parent[4096];
        snprintf(parent, sizeof(parent), "%s", disk);
        char *slash = strrchr(parent, '/');
        if (slash && slash != parent) *slash = 0;
        disk_made = (!slash || slash == parent || own_dir(parent)) && own_dir(disk);
    }
    return disk_made > 0 ? disk : NULL;
}

// batond's side is gone (a failed write, a hand-over, no reader left): from now on what is kept
// is batond's next start's to read, on the disk (its directory made now, so that the next batond
// finds the attempt even where the runtime directory does not outlive this one).
static void lose_batond(void) {
    if (gone) return;
    gone = 1;
    (void)late_dir();
}

static void spool_write(const char *data, size_t n);

// batond's end of the pipes is closed (a failed write, POLLERR): what they still hold is spooled
// first. Not at a hand-over, whose batond reads its pipes to their end.
static void batond_gone(void) {
    if (gone) return;
    lose_batond();
    unread_spool(spool_write);
}

// Keeps the spool to its last `limit` bytes: once it holds twice that, the last `limit` move to the front.
static void spool_write(const char *data, size_t n) {
    const char *place = late_dir();
    if (limit <= 0 || !place) return;
    char path[4096];
    snprintf(path, sizeof(path), "%s/output", place);
    if (spool < 0) {
        spool = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (spool < 0) return;
        spooled = lseek(spool, 0, SEEK_END);
    }
    if (write_all(spool, data, n) != 0) return;
    spooled += (long long)n;
    if (spooled < 2 * limit) return;
    // A descriptor of its own: pwrite on an O_APPEND one appends wherever it is asked to write.
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0 && move_down(fd, spooled - limit, 0, limit) == 0 && ftruncate(fd, limit) == 0) spooled = limit;
    if (fd >= 0) close(fd);
}

// One chunk from the child's stream `s`: to batond while it reads, else to the spool. A write
// that batond's end cut short (a blocked write returns what went before the reader closed)
// spools only the rest: what went is batond's (read, or lost in its pipe), never written twice.
static void relay(int s, const char *data, size_t n) {
    size_t sent = gone ? 0 : write_upto(s == OUT ? 1 : s == ERR ? 2 : 3, data, n);
    if (sent > 0 && s != PROGRESS) unread_keep(s == OUT ? 1 : 2, data, sent);
    if (sent == n) return;
    batond_gone();
    if (s != PROGRESS) spool_write(data + sent, n - sent);
}

// batond stops and hands the run over: its ends of the pipes are closed now (/dev/null in their
// place, so that no file the shim opens later takes their numbers), so that it reads them to
// their end; what the child writes from now on is spooled, as when batond is gone.
static void hand_over(int progress) {
    if (handing_over != 1) return;
    handing_over = 2;  // a second signal does it again: harmless
    lose_batond();
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    for (int fd = 1; fd <= (progress ? 3 : 2); fd++) {
        if (null >= 0) dup2(null, fd); else close(fd);
    }
    if (null >= 0) close(null);
}

// Reads what `fd` has, at most `reads` chunks (a writer faster than the relay never holds the
// shim here); returns 0 at its end (or error), 1 while open.
static int pump(int s, int fd, int reads) {
    while (reads > 0) {
        ssize_t n = read(fd, buffer, sizeof(buffer));
        if (n > 0) { relay(s, buffer, (size_t)n); reads--; continue; }
        if (n < 0 && errno == EINTR) continue;
        return n < 0 && errno == EAGAIN;
    }
    return 1;
}

// Writes `line` as `place`/status (tmp + rename); 0 when it is there.
static int write_status_in(const char *place, const char *line, int n) {
    if (!place) return -1;
    char tmp[4096], path[4096];
    snprintf(tmp, sizeof(tmp), "%s/status.tmp", place);
    snprintf(path, sizeof(path), "%s/status", place);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return -1;
    // No fsync: the file must outlive batond, not the machine (a reboot ends the run anyway), and
    // an fsync per run cost more than the rest of the shim (docs/benchmarks.md, "The shim").
    int ok = write_all(fd, line, (size_t)n) == 0;
    close(fd);
    if (ok && rename(tmp, path) == 0) return 0;
    unlink(tmp);
    return -1;
}

// Whether batond still reads fd 1 (a pipe whose reader is gone polls POLLERR): one that crashed
// while the child ran and was never written to since is seen here, so that the status goes where
// a reboot does not erase it.
static int batond_reads(void) {
    struct pollfd out = { .fd = 1, .events = 0 };
    return !(poll(&out, 1, 0) == 1 && (out.revents & (POLLERR | POLLNVAL)));
}

static void write_status(int status) {
    if (strcmp(dir, "-") == 0) return;
    char line[4200];
    // The first line as ever (a reader of it alone still sees exit 127); the exec's failure after it.
    int n = WIFSIGNALED(status) ? snprintf(line, sizeof(line), "signal %d\n", WTERMSIG(status))
          : exec_failed ? snprintf(line, sizeof(line), "exit %d\nexec-failed %d %s\n", WEXITSTATUS(status), exec_failed, argv0)
                        : snprintf(line, sizeof(line), "exit %d\n", WEXITSTATUS(status));
    if (n >= (int)sizeof(line)) { n = (int)sizeof(line) - 1; line[n - 1] = '\n'; }
    if (!gone && !batond_reads()) batond_gone();
    // While batond reads: DIR (its tmpfs), the disk only if DIR refuses it; once it is gone: the disk first.
    if (!gone) {
        if (write_status_in(dir, line, n) != 0 && disk) write_status_in(late_dir(), line, n);
    } else if (write_status_in(late_dir(), line, n) != 0 && disk) {
        write_status_in(dir, line, n);
    }
}

// Ends the way the child did: its exit code, or its signal (without a core of the shim's own).
static void exit_like(int status) {
    if (!WIFSIGNALED(status)) _exit(WEXITSTATUS(status));
    int sig = WTERMSIG(status);
    struct rlimit none = { 0, 0 };
    setrlimit(RLIMIT_CORE, &none);
    handle(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    raise(sig);
    _exit(128 + sig);
}

static const int stops[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE };
enum { STOPS = sizeof(stops) / sizeof(stops[0]) };

// The child: the signals' defaults back, its pipes on 1, 2 (and 3), then the program. The stop
// signals are blocked from before the fork: one sent meanwhile stays pending until the handlers
// are the defaults, and then kills the child (as it would the program), not a no-op handler of
// the shim's copied into it. On failure its errno goes to `report`.
static void run_child(int pipes[STREAMS][2], int report, const char *program, char **argv, const sigset_t *unblock) {
    for (int i = 0; i < STOPS; i++) handle(stops[i], SIG_DFL);
    handle(SIGCHLD, SIG_DFL);
    handle(SIGURG, SIG_DFL);
    for (int s = 0; s < STREAMS; s++) {
        if (pipes[s][1] >= 0 && dup2(pipes[s][1], s + 1) < 0) goto fail;
    }
    sigprocmask(SIG_SETMASK, unblock, NULL);
    execv(program, argv);
fail:;
    int why = errno;
    (void)!write(report, &why, sizeof(why));
    _exit(127);
}

int main(int argc, char **argv) {
    if (argc > 2 && strcmp(argv[1], "-s") == 0) {
        disk = argv[2];
        argv += 2;
        argc -= 2;
    }
    if (argc < 5) {
        fprintf(stderr, "usage: baton-shim [-s DISK] DIR LIMIT PROGRAM ARGV0 [ARG...]\n");
        return 125;
    }
    dir = argv[1];
    argv0 = argv[4];
    limit = strcmp(dir, "-") == 0 ? 0 : atoll(argv[2]);
    // Whether batond gave a progress pipe on fd 3: looked at first, before the shim's own pipes
    // could take that number (started without it, the wake pipe would be taken for it).
    int progress_given = fcntl(3, F_GETFD) >= 0;
    unread_init();
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    // Caught, not ignored: a caught signal is the default again in the child after exec.
    for (int i = 0; i < STOPS; i++) handle(stops[i], on_stop);
    int report[2];
    if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0 || pipe2(report, O_CLOEXEC) != 0) return 125;
    handle(SIGCHLD, on_child);
    handle(SIGURG, on_hand_over);
    int pipes[STREAMS][2];
    for (int s = 0; s < STREAMS; s++) {
        pipes[s][0] = pipes[s][1] = -1;
        // Progress only where batond gave fd 3.
        if (s == PROGRESS && !progress_given) continue;
        if (pipe2(pipes[s], O_CLOEXEC) != 0) return 125;
    }
    sigset_t blocked, before;
    sigemptyset(&blocked);
    for (int i = 0; i < STOPS; i++) sigaddset(&blocked, stops[i]);
    sigaddset(&blocked, SIGCHLD);
    sigaddset(&blocked, SIGURG);
    sigprocmask(SIG_BLOCK, &blocked, &before);
    pid_t child = fork();
    if (child == 0) run_child(pipes, report[1], argv[3], argv + 4, &before);
    // Its own signals unblocked whatever mask it was given (one blocking SIGURG never handed over).
    sigprocmask(SIG_UNBLOCK, &blocked, NULL);
    if (child < 0) return 125;
    close(report[1]);
    int why = 0;
    ssize_t got;
    while ((got = read(report[0], &why, sizeof(why))) < 0 && errno == EINTR) {}
    close(report[0]);
    if (got == sizeof(why)) {
        exec_failed = why ? why : EINVAL;
        fprintf(stderr, "baton-shim: cannot run %s: %s\n", argv[3], strerror(why));
    }
    struct pollfd watched[STREAMS + 2];
    for (int s = 0; s < STREAMS; s++) {
        if (pipes[s][1] >= 0) close(pipes[s][1]);
        if (pipes[s][0] >= 0) fcntl(pipes[s][0], F_SETFL, O_NONBLOCK);
        watched[s] = (struct pollfd){ .fd = pipes[s][0], .events = POLLIN };
    }
    watched[STREAMS] = (struct pollfd){ .fd = wake[0], .events = POLLIN };
    // batond's end of fd 1, for POLLERR alone: a batond that crashed while the child is silent is
    // lost at once, its disk directory made now, so that any batond's recovery finds the attempt.
    watched[STREAMS + 1] = (struct pollfd){ .fd = 1, .events = 0 };
    int status = 0, ended = 0;
    while (!ended) {
        // A second at most: a lost wake-up (SIGCHLD) never leaves the shim waiting for ever.
        if (poll(watched, STREAMS + 2, 1000) < 0 && errno != EINTR) {
            while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}
            break;
        }
        for (int s = 0; s < STREAMS; s++) {
            if (watched[s].fd >= 0 && watched[s].revents && !pump(s, watched[s].fd, READS_PER_TURN)) {
                close(watched[s].fd);
                watched[s].fd = -1;
            }
        }
        if (watched[STREAMS + 1].revents & (POLLERR | POLLNVAL)) { batond_gone(); watched[STREAMS + 1].fd = -1; }
        char drain[64];
        while (read(wake[0], drain, sizeof(drain)) > 0) {}
        hand_over(pipes[PROGRESS][0] >= 0);
        // A subreaper: orphans of the action are reaped here too; only the child's status counts.
        pid_t pid;
        int st;
        while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
            if (pid == child) { status = st; ended = 1; }
        }
    }
    // What the child wrote before it exited is in its pipes: relayed before the end, up to a
    // bound (a leftover process may write on for ever).
    hand_over(pipes[PROGRESS][0] >= 0);
    for (int s = 0; s < STREAMS; s++) if (watched[s].fd >= 0) pump(s, watched[s].fd, READS_AT_END);
    write_status(status);
    exit_like(status);
}

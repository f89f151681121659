// The bytes batond's pipes hold unread when its end closes (unread.h).
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "unread.h"

// The last `size` bytes written to the pipe on `fd` (-1: not a pipe, or no memory for the ring).
struct ring { char *bytes; size_t size; long long written; int fd; };
static struct ring rings[2] = { { NULL, 0, 0, -1 }, { NULL, 0, 0, -1 } };
static int ring_of_fd2 = 1;  // 0 where fd 2 is fd 1's pipe

void unread_init(void) {
    struct stat out, err;
    int out_pipe = fstat(1, &out) == 0 && S_ISFIFO(out.st_mode), err_pipe = fstat(2, &err) == 0 && S_ISFIFO(err.st_mode);
    int size;
    if (out_pipe && (size = fcntl(1, F_GETPIPE_SZ)) > 0) rings[0] = (struct ring){ NULL, (size_t)size, 0, 1 };
    if (err_pipe && out_pipe && out.st_ino == err.st_ino && out.st_dev == err.st_dev) ring_of_fd2 = 0;
    else if (err_pipe && (size = fcntl(2, F_GETPIPE_SZ)) > 0) rings[1] = (struct ring){ NULL, (size_t)size, 0, 2 };
}

void unread_keep(int fd, const char *data, size_t n) {
    struct ring *r = &rings[fd == 1 ? 0 : ring_of_fd2];
    if (r->fd < 0) return;
    // Allocated at the first write only: a run that writes nothing costs no memory (its cgroup's).
    if (!r->bytes && !(r->bytes = malloc(r->size))) { r->fd = -1; return; }
    if (n > r->size) data += n - r->size, r->written += (long long)(n - r->size), n = r->size;
    size_t at = (size_t)(r->written % (long long)r->size), first = n < r->size - at ? n : r->size - at;
    memcpy(r->bytes + at, data, first);
    memcpy(r->bytes, data + first, n - first);
    r->written += (long long)n;
}

void unread_spool(void (*spool)(const char *data, size_t n)) {
    for (int i = 0; i < 2; i++) {
        struct ring *r = &rings[i];
        int unread = 0;
        if (r->fd < 0 || !r->bytes || ioctl(r->fd, FIONREAD, &unread) != 0 || unread <= 0) continue;
        long long n = unread < r->written ? unread : r->written;
        if (n > (long long)r->size) n = (long long)r->size;
        size_t at = (size_t)((r->written - n) % (long long)r->size), first = (size_t)n < r->size - at ? (size_t)n : r->size - at;
        spool(r->bytes + at, first);
        if ((size_t)n > first) spool(r->bytes, (size_t)n - first);
    }
}

// What batond's stdout and stderr pipes (the shim's fds 1 and 2) may hold unread when batond's end
// goes (a batond killed, a hand-over's bound passed): the last bytes written to each, kept in a ring
// of the pipe's size (one ring where fds 1 and 2 are one pipe). The kernel keeps a pipe's bytes
// while a writer holds it and says how many are unread (FIONREAD on the write end), so the shim
// spools them rather than lose them.
#ifndef BATON_SHIM_UNREAD_H
#define BATON_SHIM_UNREAD_H
#include <stddef.h>

// Looks at fds 1 and 2 (pipes, and whether they are one), once, before anything is written.
void unread_init(void);
// `n` bytes of `data` went into the pipe on `fd` (1 or 2).
void unread_keep(int fd, const char *data, size_t n);
// batond's end is closed: hands `spool` the bytes each pipe still holds, oldest first.
void unread_spool(void (*spool)(const char *data, size_t n));

#endif

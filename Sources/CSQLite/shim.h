#include <dlfcn.h>
#include <stdio.h>
#include <sqlite3.h>

// libsqlite3 is opened with dlopen when the first connection opens, never linked: a `baton`
// that asks batond (status, run, show) never maps it, and its start is shorter by the library's
// loading and relocation (0.6 ms of a 4 ms `baton status` here). The header gives the types and
// constants; these are the functions BatonStore calls, resolved by name.
#define BATON_SQLITE_FUNCTIONS(F) \
    F(sqlite3_open_v2) F(sqlite3_close_v2) F(sqlite3_errmsg) F(sqlite3_errstr) F(sqlite3_extended_errcode) \
    F(sqlite3_extended_result_codes) F(sqlite3_busy_timeout) F(sqlite3_exec) F(sqlite3_free) F(sqlite3_get_autocommit) \
    F(sqlite3_changes) F(sqlite3_db_readonly) F(sqlite3_prepare_v3) F(sqlite3_finalize) F(sqlite3_step) F(sqlite3_reset) \
    F(sqlite3_clear_bindings) F(sqlite3_bind_null) F(sqlite3_bind_int64) F(sqlite3_bind_double) F(sqlite3_bind_text) \
    F(sqlite3_bind_blob) F(sqlite3_column_count) F(sqlite3_column_type) F(sqlite3_column_int64) F(sqlite3_column_double) \
    F(sqlite3_column_text) F(sqlite3_column_bytes) F(sqlite3_column_blob) F(sqlite3_stmt_status) F(sqlite3_bind_parameter_count)

#define BATON_SQLITE_FIELD(name) __typeof__(name) *_Nonnull name;

/// libsqlite3's functions, each under its own name.
typedef struct {
    BATON_SQLITE_FUNCTIONS(BATON_SQLITE_FIELD)
} BatonSQLite;

/// Opens `library` and fills `table` with its functions: 0, or -1 with dlerror's words in `error`.
static inline int baton_sqlite_open(const char *_Nonnull library, BatonSQLite *_Nonnull table, char *_Nonnull error, size_t size) {
    void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        snprintf(error, size, "%s", dlerror());
        return -1;
    }
#define BATON_SQLITE_RESOLVE(name) \
    table->name = (__typeof__(name) *)dlsym(handle, #name); \
    if (table->name == NULL) { snprintf(error, size, "%s", dlerror()); return -1; }
    BATON_SQLITE_FUNCTIONS(BATON_SQLITE_RESOLVE)
#undef BATON_SQLITE_RESOLVE
    // No memory statistics, before the library initializes (its first open): Debian's build has
    // no lookaside, so each of SQLite's allocations is a malloc, and with statistics on each took
    // and left a global mutex and counted itself (issue 39, docs/benchmarks.md: the writer's work per run, session 27).
    // Baton reads none of them (sqlite3_memory_used, sqlite3_status, a soft heap limit); a library
    // already initialized in this process refuses it and keeps them.
    int (*config)(int, ...) = (int (*)(int, ...))dlsym(handle, "sqlite3_config");
    if (config != NULL) (void)config(SQLITE_CONFIG_MEMSTATUS, 0);
    return 0;
}

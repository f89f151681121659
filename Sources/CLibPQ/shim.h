#include <dlfcn.h>
#include <stdio.h>
#if __has_include(<postgresql/libpq-fe.h>)
#include <postgresql/libpq-fe.h>
#else
#include <libpq-fe.h>
#endif

// libpq is opened with dlopen when a fleet makes its first connection, never linked: a batond on
// one machine then maps neither libpq nor what it brings (libssl, libkrb5, libldap, libgnutls…).
// The header gives the types; these are the functions BatonFleet calls, resolved by name.
#define BATON_LIBPQ_FUNCTIONS(F) \
    F(PQconnectdbParams) F(PQstatus) F(PQerrorMessage) F(PQsetNoticeProcessor) F(PQfinish) F(PQsocket) \
    F(PQprepare) F(PQexecPrepared) F(PQexecParams) F(PQexec) F(PQclear) F(PQresultStatus) F(PQresultErrorField) \
    F(PQenterPipelineMode) F(PQexitPipelineMode) F(PQsendPrepare) F(PQsendQueryPrepared) F(PQsendQueryParams) \
    F(PQpipelineSync) F(PQgetResult) F(PQconsumeInput) F(PQnotifies) F(PQfreemem) \
    F(PQntuples) F(PQnfields) F(PQgetisnull) F(PQgetvalue) F(PQcmdTuples)

#define BATON_LIBPQ_FIELD(name) __typeof__(name) *_Nonnull name;

/// libpq's functions, each under its own name.
typedef struct {
    BATON_LIBPQ_FUNCTIONS(BATON_LIBPQ_FIELD)
} BatonLibPQ;

/// Opens `library` and fills `table` with its functions: 0, or -1 with dlerror's words in `error`.
static inline int baton_libpq_open(const char *_Nonnull library, BatonLibPQ *_Nonnull table, char *_Nonnull error, size_t size) {
    void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        snprintf(error, size, "%s", dlerror());
        return -1;
    }
#define BATON_LIBPQ_RESOLVE(name) \
    table->name = (__typeof__(name) *)dlsym(handle, #name); \
    if (table->name == NULL) { snprintf(error, size, "%s", dlerror()); return -1; }
    BATON_LIBPQ_FUNCTIONS(BATON_LIBPQ_RESOLVE)
#undef BATON_LIBPQ_RESOLVE
    return 0;
}

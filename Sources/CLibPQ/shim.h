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

// Bytes to and from the hex text the fleet's text-only connections carry them in (an artifact's
// chunk is a megabyte: a loop in C, not one in a debug build's Swift, which took 0.1 s a MiB).
static inline void baton_hex_encode(const unsigned char *_Nonnull in, size_t count, unsigned char *_Nonnull out) {
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < count; i++) {
        out[2 * i] = (unsigned char)digits[in[i] >> 4];
        out[2 * i + 1] = (unsigned char)digits[in[i] & 15];
    }
}

static inline unsigned char baton_hex_value(unsigned char digit) {
    if (digit >= '0' && digit <= '9') return (unsigned char)(digit - '0');
    if (digit >= 'a' && digit <= 'f') return (unsigned char)(digit - 'a' + 10);
    if (digit >= 'A' && digit <= 'F') return (unsigned char)(digit - 'A' + 10);
    return 0;
}

/// `count` bytes from `2 * count` hex digits.
static inline void baton_hex_decode(const unsigned char *_Nonnull in, size_t count, unsigned char *_Nonnull out) {
    for (size_t i = 0; i < count; i++) out[i] = (unsigned char)(baton_hex_value(in[2 * i]) << 4 | baton_hex_value(in[2 * i + 1]));
}

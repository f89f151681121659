// OpenSSL's libcrypto, for HMAC-SHA256 and constant-time comparison (webhook signatures) and
// SHA-256 digests of a run's artifacts (EVP_Digest*).
// Opened with dlopen by the first webhook, never linked: a batond without webhooks does not map it.
#include <dlfcn.h>
#include <stdio.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#define BATON_LIBCRYPTO_FUNCTIONS(F) F(HMAC) F(EVP_sha256) F(CRYPTO_memcmp) \
    F(EVP_MD_CTX_new) F(EVP_MD_CTX_free) F(EVP_DigestInit_ex) F(EVP_DigestUpdate) F(EVP_DigestFinal_ex)
#define BATON_LIBCRYPTO_FIELD(name) __typeof__(name) *_Nonnull name;

/// libcrypto's functions, each under its own name.
typedef struct {
    BATON_LIBCRYPTO_FUNCTIONS(BATON_LIBCRYPTO_FIELD)
} BatonLibCrypto;

/// Opens `library` and fills `table` with its functions: 0, or -1 with dlerror's words in `error`.
static inline int baton_libcrypto_open(const char *_Nonnull library, BatonLibCrypto *_Nonnull table, char *_Nonnull error, size_t size) {
    void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        snprintf(error, size, "%s", dlerror());
        return -1;
    }
#define BATON_LIBCRYPTO_RESOLVE(name) \
    table->name = (__typeof__(name) *)dlsym(handle, #name); \
    if (table->name == NULL) { snprintf(error, size, "%s", dlerror()); return -1; }
    BATON_LIBCRYPTO_FUNCTIONS(BATON_LIBCRYPTO_RESOLVE)
#undef BATON_LIBCRYPTO_RESOLVE
    return 0;
}

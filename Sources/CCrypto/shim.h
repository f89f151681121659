// OpenSSL's libcrypto, for HMAC-SHA256 and constant-time comparison only (webhook signatures).
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

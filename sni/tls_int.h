/*
 * Shared by the ClientHello reader's files: host name checks (tls_host.c, also behind
 * sni_host_valid()) and the extension walk (tls_ext.c).
 */
#ifndef SNI_TLS_INT_H
#define SNI_TLS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sni/rd.h"
#include "sni/tls.h"

/*
 * sni_host_valid() of name, and *upper: whether it has capitals. floor: where the buffer
 * that holds name starts (floor <= name); the bytes from floor on may be read in 16- or
 * 32-byte loads that end at name + len, never outside [floor, name + len).
 */
bool sni_host_scan(const uint8_t *floor, const uint8_t *name, size_t len, bool *upper);

/*
 * The fewest bytes a ClientHello message holds before its server_name's host name: its
 * header (4), version, random and session id length (35), an empty session id, a cipher
 * suites vector of one (2 + 2), a compression methods vector of one (1 + 1), the
 * extensions' length (2), the extension's type and length (4), and server_name's list
 * length, name type and name length (5). tls_hello_fields() lets no shorter one by.
 */
#define TLS_HOST_AT	(4 + 35 + 2 + 2 + 1 + 1 + 2 + 4 + 5)

/* so that a 32-byte load that ends with a host name of one byte or more starts in the hello */
_Static_assert(TLS_HOST_AT + 1 >= 32, "a host name's last 32 bytes are the hello's");

/*
 * The server_name host of n bytes at host (a root dot included) in a ClientHello message
 * that starts TLS_HOST_AT bytes before it or earlier: SNI_FOUND with out->sni (without
 * the root dot) and out->sni_lower set when sni_host_valid(), else SNI_MALFORMED. Loads
 * that end with the name may reach back into the message, never before it.
 */
enum sni_status tls_host_judge(const uint8_t *host, size_t n, struct tls_hello *out);

/*
 * The same a byte at a time, for name without its root dot, 1..SNI_HOST_MAX bytes: what
 * sni_host_scan() does past 63 bytes, and what the tests hold its vector path to.
 */
bool sni_host_scan_bytes(const uint8_t *name, size_t len, bool *upper);

/*
 * The extensions vector exts of a ClientHello whose fixed fields were read (tls_ext.c):
 * SNI_FOUND, SNI_ABSENT or SNI_MALFORMED, with out's server name, ALPN ids and ECH flag
 * (cleared by the caller) filled. The message's first byte is at least TLS_HOST_AT - 9
 * bytes before exts (tls_host_judge()).
 */
enum sni_status tls_hello_exts(struct rd exts, struct tls_hello *out);

/* The same for tls_hello_parse_sni(): ALPN checked alike, its ids and ECH's flag not kept. */
enum sni_status tls_hello_exts_sni(struct rd exts, struct tls_hello *out);

/*
 * tls_hello_parse() without its shortcut for one record holding the whole hello: the
 * general path, which the tests hold the shortcut to.
 */
enum sni_status tls_hello_parse_general(const uint8_t *buf, size_t len, uint8_t *scratch,
    size_t scratch_len, struct tls_hello *out);

#endif

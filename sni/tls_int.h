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
 * that holds name starts (floor <= name); the bytes from floor on may be read in 16-byte
 * loads that end at name + len, never outside [floor, name + len).
 */
bool sni_host_scan(const uint8_t *floor, const uint8_t *name, size_t len, bool *upper);

/*
 * The same a byte at a time, for name without its root dot, 1..SNI_HOST_MAX bytes: what
 * sni_host_scan() does past 63 bytes, and what the tests hold its vector path to.
 */
bool sni_host_scan_bytes(const uint8_t *name, size_t len, bool *upper);

/*
 * The extensions vector exts of a ClientHello whose fixed fields were read (tls_ext.c):
 * SNI_FOUND, SNI_ABSENT or SNI_MALFORMED, with out's server name, ALPN ids and ECH flag
 * (cleared by the caller) filled. floor: the message's first byte (sni_host_scan()).
 */
enum sni_status tls_hello_exts(struct rd exts, const uint8_t *floor, struct tls_hello *out);

/*
 * tls_hello_parse() without its shortcut for one record holding the whole hello: the
 * general path, which the tests hold the shortcut to.
 */
enum sni_status tls_hello_parse_general(const uint8_t *buf, size_t len, uint8_t *scratch,
    size_t scratch_len, struct tls_hello *out);

#endif

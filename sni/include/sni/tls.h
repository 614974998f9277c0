/*
 * TLS ClientHello reader: the first bytes a client sends on a TCP stream, as far as they
 * have arrived, in; the SNI, ALPN and ECH flag out. No allocation, no logging, no policy.
 */
#ifndef SNI_TLS_H
#define SNI_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum sni_status {
	SNI_NEED_MORE,		/* a valid prefix of a ClientHello: wait for more bytes */
	SNI_FOUND,		/* a whole ClientHello with one valid host_name */
	SNI_ABSENT,		/* a whole, valid ClientHello without server_name */
	SNI_NOT_TLS,		/* the stream does not start with a TLS handshake record */
	SNI_MALFORMED,		/* a TLS handshake record that breaks the rules */
};

#define SNI_HOST_MAX	253	/* RFC 1035 s2.3.4, as text without the trailing dot */
#define SNI_LABEL_MAX	63
#define TLS_HELLO_MAX	16384	/* the most stream bytes a hello may take (SPEC s4.5) */
#define TLS_ALPN_MAX	8

/* A byte string inside the caller's buffers; never NUL-terminated. */
struct sni_name {
	const uint8_t *p;
	size_t len;
};

/* The four one-byte fields side by side: a parse clears them in one store. */
struct tls_hello {
	struct sni_name sni;			/* SNI_FOUND only */
	bool sni_lower;				/* and it has no capitals (false: it may) */
	uint8_t nb_alpn;
	bool alpn_more;				/* more than TLS_ALPN_MAX were offered */
	bool ech;				/* carries encrypted_client_hello (0xfe0d) */
	size_t stream_len;			/* stream bytes up to the end of the hello's last record */
	struct sni_name alpn[TLS_ALPN_MAX];	/* the first nb_alpn: ids in the client's order */
};

/*
 * Parse the first len bytes of a client's TCP stream as a ClientHello, which may be
 * fragmented over several TLS records (RFC 8446 s5.1). When it is, its body is gathered
 * into scratch (scratch_len bytes; TLS_HELLO_MAX is always enough); a hello that does not
 * fit is SNI_MALFORMED.
 *
 * An SSLv2-format CLIENT-HELLO, which TLS servers still accept, is a hello without a
 * server name: SNI_ABSENT when it is whole and valid.
 *
 * Returns SNI_FOUND or SNI_ABSENT only for a complete, valid hello, and then fills *out;
 * its pointers alias buf or scratch. A prefix that can still become valid is
 * SNI_NEED_MORE. *out is unspecified for every other status.
 */
enum sni_status tls_hello_parse(const uint8_t *buf, size_t len, uint8_t *scratch,
    size_t scratch_len, struct tls_hello *out);

/*
 * tls_hello_parse() for who judges a hello by its server name alone (the dataplane): the
 * same status, sni, sni_lower and stream_len, ALPN checked alike; alpn[], nb_alpn,
 * alpn_more and ech are unspecified (kept, each hello would store what nobody reads).
 */
enum sni_status tls_hello_parse_sni(const uint8_t *buf, size_t len, uint8_t *scratch,
    size_t scratch_len, struct tls_hello *out);

/*
 * The second ClientHello, the one a HelloRetryRequest asks for (RFC 8446 s4.1.4): the
 * client's bytes from the end of its first hello, which may begin with change_cipher_spec
 * records (appendix D.4), parsed as tls_hello_parse_sni() parses a first; stream_len
 * counts those records too.
 */
enum sni_status tls_hello_parse_retry(const uint8_t *buf, size_t len, uint8_t *scratch,
    size_t scratch_len, struct tls_hello *out);

/*
 * The len bytes a client sent after its hello's last record, before any answer: true
 * when no handshake record begins in them (only change_cipher_spec, alert and
 * application_data, early data, whose last may run on past them). A server would read a
 * handshake record there as a second hello once it asks for one.
 */
bool tls_hello_tail_ok(const uint8_t *buf, size_t len);

/*
 * The server's first len bytes (len > 0) on a TLS connection: could they be a
 * HelloRetryRequest (RFC 8446 s4.1.3: a ServerHello whose random is the HRR value)? True
 * when every byte present through the random says so, fewer bytes than that included: the
 * client's next bytes may then be a second hello.
 */
bool tls_server_retry(const uint8_t *buf, size_t len);

/* "need_more", "found", "absent", "not_tls", "malformed". */
const char *sni_status_str(enum sni_status st);

/*
 * True when name is a host name namegate accepts: 1..SNI_HOST_MAX bytes of
 * letters, digits, '-' and '.', labels of 1..SNI_LABEL_MAX bytes, one optional trailing dot.
 */
bool sni_host_valid(const uint8_t *name, size_t len);

#endif

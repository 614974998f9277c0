/*
 * Fixtures shared by the tls_hello_parse tests (test_tls_hello.c, test_tls_hello_bad.c):
 * a builder that assembles ClientHellos from parts, and checks that feed a stream to the
 * parser prefix by prefix. Every function fails the running cmocka test on misuse (a
 * message past TF_MSG_MAX, a bad hex digit) or on a wrong answer, so call them only
 * from inside a test.
 */
#ifndef TLS_FIXTURE_H
#define TLS_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sni/tls.h"

#define TF_MSG_MAX	20000		/* room for a hello past TLS_HELLO_MAX, in records */

/* A message or stream under construction: n bytes of b are used. */
struct tf_msg {
	uint8_t b[TF_MSG_MAX];
	size_t n;
};

/* Append bytes: raw, n copies of c, big-endian integers. */
void tf_raw(struct tf_msg *m, const void *p, size_t n);
void tf_fill(struct tf_msg *m, uint8_t c, size_t n);
void tf_u8(struct tf_msg *m, unsigned int v);
void tf_u16(struct tf_msg *m, unsigned int v);

/* Append hex digits; spaces are ignored so fixtures can show their fields. */
void tf_hex(struct tf_msg *m, const char *hex);

/*
 * Reserve a width-byte length prefix and return where it is; tf_close() fills in what was
 * added after it.
 */
size_t tf_open(struct tf_msg *m, size_t width);
void tf_close(struct tf_msg *m, size_t at, size_t width);

/* One extension whose body is given as hex. */
void tf_ext_hex(struct tf_msg *m, uint16_t type, const char *body);

/* server_name with one host_name entry of len bytes (RFC 6066 s3); _sni takes a string. */
void tf_ext_sni_n(struct tf_msg *m, const void *host, size_t len);
void tf_ext_sni(struct tf_msg *m, const char *host);

/* ALPN (RFC 7301 s3.1) from a NULL-terminated list. */
void tf_ext_alpn(struct tf_msg *m, const char *const *ids);

/* An outer encrypted_client_hello: type 0, HPKE suite, config id, enc, payload. */
void tf_ext_ech(struct tf_msg *m);

/* key_share with an X25519 share, after a post-quantum one of pq bytes when pq > 0. */
void tf_ext_key_share(struct tf_msg *m, size_t pq);

/* What every TLS 1.3 hello carries besides the extensions a test is about. */
void tf_ext_common(struct tf_msg *m);

/* A ClientHello handshake message; hs_at and exts_at are its open length prefixes. */
struct tf_hello {
	struct tf_msg m;
	size_t hs_at;
	size_t exts_at;
};

/*
 * The fixed part of a ClientHello: msg_type, u24 length, legacy_version, random,
 * session_id, cipher_suites, compression_methods; then the extensions' length is reserved.
 * suites_len counts bytes. tf_hello_begin() is a normal one: a 32-byte session_id, three
 * cipher suites, null compression.
 */
void tf_hello_begin_with(struct tf_hello *h, size_t sid_len, size_t suites_len,
    size_t nb_comp);
void tf_hello_begin(struct tf_hello *h);

/* Close the extensions' and the message's lengths. */
void tf_hello_end(struct tf_hello *h);

/* A TLS 1.2-style hello that stops after compression_methods. */
void tf_hello_end_no_exts(struct tf_hello *h);

/* The shape of a valid hello, as clients in the wild send them. */
struct tf_style {
	const char *name;
	const char *sni;		/* NULL: no server_name */
	const char *const *alpn;	/* NULL: no ALPN */
	bool ech;
	size_t pq;			/* bytes of a post-quantum key share */
	size_t pad;			/* bytes of a padding extension (RFC 7685) */
	size_t records;			/* records the hello is spread over; 0 means 1 */
};

/*
 * minimal, alpn, ech, post-quantum, three records, absent: tests pick some by index, so
 * add new ones at the end.
 */
extern const struct tf_style tf_styles[];
extern const size_t tf_nb_styles;

/* A whole hello in the given style. */
void tf_hello_style(struct tf_hello *h, const struct tf_style *s);

/*
 * Put a handshake message into records (type 22, version 3.1) cut at the offsets cuts[]
 * (ascending, inside the message). Returns the stream length.
 */
size_t tf_wrap_cuts(struct tf_msg *out, const struct tf_msg *hs, const size_t *cuts,
    size_t nb_cuts);

/* Records of equal size (the last one shorter), at most nb_records of them. */
size_t tf_wrap(struct tf_msg *out, const struct tf_msg *hs, size_t nb_records);

/* A ClientHello naming sni, with tf_ext_common()'s extensions, in one TLS record: out. */
void tf_stream_sni(struct tf_msg *out, const char *sni);

/* The scratch tf_parse() gathers fragmented hellos into, so tests can see aliasing. */
extern uint8_t tf_scratch[TLS_HELLO_MAX];

/* tls_hello_parse() with tf_scratch; tls_hello_parse_sni() of the bytes must agree. */
enum sni_status tf_parse(const uint8_t *b, size_t n, struct tls_hello *out);

/* Parse an exact-size heap copy, so valgrind sees a read one byte past the input (both ways). */
enum sni_status tf_parse_exact(const uint8_t *b, size_t n);

/*
 * Feed every prefix of b: each is NEED_MORE or want, the first definite answer never
 * changes, and the whole stream is want. A valid hello (FOUND/ABSENT) is NEED_MORE on
 * every proper prefix.
 */
void tf_check_prefixes(const uint8_t *b, size_t n, enum sni_status want);

/* Fail unless nm holds exactly the string want. */
void tf_assert_name(struct sni_name nm, const char *want);

/* A single-record stream holding h, checked prefix by prefix to give st. */
void tf_expect_hello(const struct tf_hello *h, enum sni_status st);

/* A hello with the common extensions plus one extension given as hex. */
void tf_expect_ext(uint16_t type, const char *body, enum sni_status st);

/* A hello whose only server_name carries host (len bytes). */
void tf_expect_host(const void *host, size_t len, enum sni_status st);

#endif

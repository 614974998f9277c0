/*
 * What may follow a ClientHello in the client's stream before the server answers it, and
 * the second hello a HelloRetryRequest asks for (RFC 8446 s4.1.4). A server takes the
 * second hello's server_name as the one it serves (OpenSSL does: its SNI callback runs
 * again), so a gateway that judged the first must judge the second too, and must know
 * that no handshake record rode along unjudged after the first.
 */
#include "sni/rd.h"
#include "sni/tls.h"

#define TLS_CT_CCS		20
#define TLS_CT_ALERT		21
#define TLS_CT_HANDSHAKE	22
#define TLS_CT_APPDATA		23
#define TLS_RECORD_HDR		5
#define TLS_CCS_RECORD		6	/* its header and its one byte, 1 */
#define TLS_HS_SERVER_HELLO	2
#define TLS_RETRY_DECIDES	(TLS_RECORD_HDR + 4 + 2 + 32)	/* through the random */

/*
 * SHA-256("HelloRetryRequest"): the random of a ServerHello that is a HelloRetryRequest
 * (RFC 8446 s4.1.3).
 */
static const uint8_t tls_retry_random[32] = {
	0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65,
	0xb8, 0x91, 0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2,
	0xc8, 0xa8, 0x33, 0x9c,
};

bool
tls_hello_tail_ok(const uint8_t *buf, size_t len)
{
	struct rd s = rd_make(buf, len);

	while (s.len != 0) {
		uint8_t type = s.p[0];

		/* a record a server reads before the hello's answer: none of them a handshake */
		if (type != TLS_CT_CCS && type != TLS_CT_ALERT && type != TLS_CT_APPDATA)
			return false;
		if (s.len < TLS_RECORD_HDR)
			return true;		/* its header's type told all that matters here */
		if (!rd_skip(&s, TLS_RECORD_HDR + (size_t)rd_be16(s.p + 3)))
			return true;		/* it runs on past these bytes */
	}
	return true;
}

bool
tls_server_retry(const uint8_t *buf, size_t len)
{
	size_t n = len < TLS_RETRY_DECIDES ? len : TLS_RETRY_DECIDES;

	/* a record's type and a handshake's, then the random: what is there must match */
	if (buf[0] != TLS_CT_HANDSHAKE || (n > TLS_RECORD_HDR && buf[TLS_RECORD_HDR] !=
	    TLS_HS_SERVER_HELLO))
		return false;
	for (size_t i = TLS_RETRY_DECIDES - 32; i < n; i++)
		if (buf[i] != tls_retry_random[i - (TLS_RETRY_DECIDES - 32)])
			return false;
	return true;
}

enum sni_status
tls_hello_parse_retry(const uint8_t *buf, size_t len, uint8_t *scratch, size_t scratch_len,
    struct tls_hello *out)
{
	static const uint8_t ccs[TLS_CCS_RECORD] = { TLS_CT_CCS, 3, 3, 0, 1, 1 };
	size_t at = 0;
	enum sni_status st;

	/* middlebox compatibility (RFC 8446 appendix D.4): change_cipher_spec first */
	while (at < len && buf[at] == TLS_CT_CCS) {
		for (size_t i = 1; i < TLS_CCS_RECORD; i++) {
			if (at + i == len)
				return SNI_NEED_MORE;
			/* the record version's minor byte is any, as a hello's is (s5.1) */
			if (i != 2 && buf[at + i] != ccs[i])
				return SNI_NOT_TLS;
		}
		at += TLS_CCS_RECORD;
	}
	st = tls_hello_parse_sni(buf + at, len - at, scratch, scratch_len, out);
	if (st == SNI_FOUND || st == SNI_ABSENT)
		out->stream_len += at;
	return st;
}

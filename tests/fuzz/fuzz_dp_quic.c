/*
 * libFuzzer target for dp_quic_hello_feed. The input drives one client flow:
 *
 *   u8 mode
 *   mode & 1 == 0, raw:    { u16 len | len bytes }*           datagrams fed as they are
 *   mode & 1 == 1, sealed: { u8 flags | u16 len | len bytes }* each record is the plaintext
 *                                                              of one Initial sealed here
 *
 * A fuzzer cannot forge an AES-GCM tag, so raw datagrams only reach the header walk, the
 * key trials and the refusal of what does not authenticate. Sealed records are protected
 * with real Initial keys (RFC 9001 s5), so the frame walk, CRYPTO reassembly and the
 * ClientHello parser see arbitrary decrypted content. Record flags:
 *
 *   bit 0      version 2 instead of 1
 *   bits 1-2   the header's DCID: one of four fixed ones
 *   bits 3-4   the DCID the keys come from: 0 the header's, k the fixed one k - 1
 *   bits 5-6   packet number length - 1; the packet number is the record's index
 *   bit 7      no padding: the datagram is as short as the packet (under 1200: refused)
 *
 * Checked after every datagram, abort() on failure: the status is one of the five;
 * MALFORMED is final; NOT_INITIAL changes nothing; after FOUND or ABSENT the flow never
 * goes back to NEED_MORE nor changes its answer; FOUND's name is a valid host inside the
 * flow's buffer. Each datagram is also classified as after a flow's verdict
 * (dp_quic_dgram_class): one of its three classes, and a datagram called HELLO is one a
 * fresh flow finds an Initial in (it is never passed on as nothing to judge).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "dp_quic.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)	do { if (!(cond)) abort(); } while (0)
#define STEPS_MAX	32
#define PKT_MAX		(DP_QUIC_DGRAM_MIN + 2048)

static const uint8_t dcids[4][8] = {
	{ 0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08 },	/* RFC 9001 A */
	{ 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x00, 0x11 },
	{ 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88 },
	{ 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01 },
};

static struct dp_quic_ctx *ctx;
static EVP_CIPHER_CTX *gcm, *ecb;

/*
 * Protect an Initial: header (no SCID, no token, 2-byte Length), then the plaintext and
 * pad bytes of PADDING, sealed as RFC 9001 s5.3-5.4 say. Returns the packet's length.
 */
static size_t
seal(uint8_t flags, uint64_t pn, const uint8_t *plain, size_t n, uint8_t *out)
{
	uint32_t version = flags & 1 ? QUIC_V2 : QUIC_V1;
	const uint8_t *dcid = dcids[flags >> 1 & 3];
	unsigned int kd = flags >> 3 & 3;
	size_t pn_len = (size_t)(flags >> 5 & 3) + 1, h = 0, pad = 0, pn_off, len;
	uint8_t nonce[DP_QUIC_IV_LEN], mask[32];
	struct dp_quic_keys k;
	int outl;

	CHECK(dp_quic_keys_derive(ctx, version, kd == 0 ? dcid : dcids[kd - 1], 8, &k, NULL) ==
	    0);
	out[h++] = (uint8_t)(0xc0 | (version == QUIC_V2 ? 0x10 : 0) | (pn_len - 1));
	for (int i = 3; i >= 0; i--)
		out[h++] = (uint8_t)(version >> (8 * i));
	out[h++] = 8;
	memcpy(out + h, dcid, 8);
	h += 8;
	out[h++] = 0;				/* SCID */
	out[h++] = 0;				/* token */
	/* at least the 20 bytes from the packet number that the HP sample needs */
	if (pn_len + n + DP_QUIC_TAG_LEN < 20)
		pad = 20 - pn_len - n - DP_QUIC_TAG_LEN;
	if ((flags & 0x80) == 0 && h + 2 + pn_len + n + pad + DP_QUIC_TAG_LEN < DP_QUIC_DGRAM_MIN)
		pad = DP_QUIC_DGRAM_MIN - (h + 2 + pn_len + n + DP_QUIC_TAG_LEN);
	len = pn_len + n + pad + DP_QUIC_TAG_LEN;
	out[h++] = (uint8_t)(0x40 | len >> 8);
	out[h++] = (uint8_t)len;
	pn_off = h;
	for (size_t i = 0; i < pn_len; i++)
		out[h++] = (uint8_t)(pn >> (8 * (pn_len - 1 - i)));
	memcpy(out + h, plain, n);
	memset(out + h + n, 0, pad);

	memcpy(nonce, k.iv, sizeof(nonce));
	for (size_t i = 0; i < 8; i++)
		nonce[DP_QUIC_IV_LEN - 1 - i] ^= (uint8_t)(pn >> (8 * i));
	CHECK(EVP_EncryptInit_ex2(gcm, NULL, k.key, nonce, NULL));
	CHECK(EVP_EncryptUpdate(gcm, NULL, &outl, out, (int)h));
	CHECK(EVP_EncryptUpdate(gcm, out + h, &outl, out + h, (int)(n + pad)));
	CHECK(EVP_EncryptFinal_ex(gcm, out + h + n + pad, &outl));
	CHECK(EVP_CIPHER_CTX_ctrl(gcm, EVP_CTRL_AEAD_GET_TAG, DP_QUIC_TAG_LEN,
	    out + h + n + pad));
	CHECK(EVP_EncryptInit_ex2(ecb, NULL, k.hp, NULL, NULL));
	CHECK(EVP_EncryptUpdate(ecb, mask, &outl, out + pn_off + 4, 16) && outl == 16);
	out[0] ^= mask[0] & 0x0f;
	for (size_t i = 0; i < pn_len; i++)
		out[pn_off + i] ^= mask[1 + i];
	return h + n + pad + DP_QUIC_TAG_LEN;
}

static void
init_once(void)
{
	if (ctx != NULL)
		return;
	CHECK((ctx = dp_quic_ctx_new()) != NULL);
	CHECK((gcm = EVP_CIPHER_CTX_new()) != NULL && (ecb = EVP_CIPHER_CTX_new()) != NULL);
	CHECK(EVP_EncryptInit_ex2(gcm, EVP_aes_128_gcm(), NULL, NULL, NULL));
	CHECK(EVP_EncryptInit_ex2(ecb, EVP_aes_128_ecb(), NULL, NULL, NULL));
}

/* The class after a verdict, against what a fresh flow makes of the same datagram. */
static void
check_class(const uint8_t *d, size_t len)
{
	static uint8_t fresh_buf[DP_QUIC_HELLO_BUF];
	enum dp_quic_dgram c = dp_quic_dgram_class(ctx, d, len);
	struct dp_quic_hello fresh;
	struct tls_hello out;

	CHECK(c <= DP_QUIC_DGRAM_UNREADABLE);
	if (c != DP_QUIC_DGRAM_HELLO)
		return;
	dp_quic_hello_init(&fresh, fresh_buf, sizeof(fresh_buf));
	CHECK(dp_quic_hello_feed(ctx, &fresh, d, len, &out) != DP_QUIC_NOT_INITIAL);
}

static bool
inside(const uint8_t *p, size_t n, const uint8_t *buf, size_t len)
{
	return p >= buf && n <= len && (size_t)(p - buf) <= len - n;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[DP_QUIC_HELLO_BUF], pkt[PKT_MAX], sni[SNI_HOST_MAX];
	enum dp_quic_status st, last = DP_QUIC_NEED_MORE;
	struct dp_quic_hello h, before;
	struct tls_hello out;
	size_t off = 1, sni_len = 0;
	bool sealed;

	if (size < 1)
		return 0;
	init_once();
	sealed = data[0] & 1;
	dp_quic_hello_init(&h, buf, sizeof(buf));
	for (unsigned int step = 0; step < STEPS_MAX; step++) {
		size_t hdr = sealed ? 3 : 2, n, len;
		const uint8_t *d;
		uint8_t flags = 0;

		if (size - off < hdr)
			break;
		if (sealed)
			flags = data[off++];
		n = (size_t)data[off] << 8 | data[off + 1];
		off += 2;
		if (n > size - off)
			n = size - off;
		if (sealed) {
			if (n > PKT_MAX - DP_QUIC_DGRAM_MIN)
				n = PKT_MAX - DP_QUIC_DGRAM_MIN;
			len = seal(flags, step, data + off, n, pkt);
			d = pkt;
		} else {
			len = n;
			d = data + off;
		}
		off += n;

		check_class(d, len);
		memcpy(&before, &h, sizeof(h));
		st = dp_quic_hello_feed(ctx, &h, d, len, &out);
		CHECK(st <= DP_QUIC_NOT_INITIAL && dp_quic_status_str(st) != NULL);
		if (last == DP_QUIC_MALFORMED)
			CHECK(st == DP_QUIC_MALFORMED);
		if (st == DP_QUIC_NOT_INITIAL) {
			CHECK(memcmp(&h, &before, sizeof(h)) == 0);
			continue;
		}
		if (last == DP_QUIC_FOUND || last == DP_QUIC_ABSENT)
			CHECK(st == last || st == DP_QUIC_MALFORMED);
		if (st == DP_QUIC_FOUND) {
			CHECK(inside(out.sni.p, out.sni.len, buf, sizeof(buf)));
			CHECK(sni_host_valid(out.sni.p, out.sni.len));
			if (last == DP_QUIC_FOUND)
				CHECK(out.sni.len == sni_len &&
				    memcmp(out.sni.p, sni, sni_len) == 0);
			CHECK(out.sni.len <= sizeof(sni));
			memcpy(sni, out.sni.p, out.sni.len);
			sni_len = out.sni.len;
		}
		last = st;
	}
	return 0;
}

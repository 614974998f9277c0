/*
 * QUIC Initial packet protection (RFC 9001 s5, RFC 9369 s3.3): key derivation, header
 * protection and AEAD, over OpenSSL 3 EVP.
 *
 * Algorithms are fetched and contexts allocated once per worker; per packet the contexts
 * are only re-keyed (EVP_*Init_ex2 with a NULL cipher keeps the provider context), so the
 * packet path does not allocate. HKDF is done by hand over HMAC-SHA256 because every
 * output here fits one hash block: Expand-Label is then a single HMAC, and one reusable
 * EVP_MAC_CTX serves extract and expand alike.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "dp_quic.h"

#define SHA256_LEN		32
#define LABEL_MAX		32	/* "tls13 " + the longest label, "quicv2 key" */

struct dp_quic_ctx {
	EVP_MAC *hmac;
	EVP_MAC_CTX *mac;		/* HMAC-SHA256; re-keyed per use */
	EVP_CIPHER *gcm_alg;
	EVP_CIPHER *ecb_alg;
	EVP_CIPHER_CTX *gcm;		/* AES-128-GCM, decrypt */
	EVP_CIPHER_CTX *ecb;		/* AES-128-ECB, encrypt: the header protection mask */
	uint8_t plain[DP_QUIC_DGRAM_MAX];	/* dp_quic.c's plaintext */
};

/* RFC 9001 s5.2, RFC 9369 s3.3.1 and draft-ietf-quic-tls-29 s5.2. */
static const uint8_t quic_v1_salt[20] = {
	0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17,
	0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad, 0xcc, 0xbb, 0x7f, 0x0a,
};
static const uint8_t quic_v2_salt[20] = {
	0x0d, 0xed, 0xe3, 0xde, 0xf7, 0x00, 0xa6, 0xdb, 0x81, 0x93,
	0x81, 0xbe, 0x6e, 0x26, 0x9d, 0xcb, 0xf9, 0xbd, 0x2e, 0xd9,
};
static const uint8_t quic_draft29_salt[20] = {
	0xaf, 0xbf, 0xec, 0x28, 0x99, 0x93, 0xd2, 0x4c, 0x9e, 0x97,
	0x86, 0xf1, 0x9c, 0x61, 0x11, 0xe0, 0x43, 0x90, 0xa8, 0x99,
};

void
dp_quic_ctx_free(struct dp_quic_ctx *ctx)
{
	if (ctx == NULL)
		return;
	EVP_CIPHER_CTX_free(ctx->ecb);
	EVP_CIPHER_CTX_free(ctx->gcm);
	EVP_CIPHER_free(ctx->ecb_alg);
	EVP_CIPHER_free(ctx->gcm_alg);
	EVP_MAC_CTX_free(ctx->mac);
	EVP_MAC_free(ctx->hmac);
	free(ctx);
}

struct dp_quic_ctx *
dp_quic_ctx_new(void)
{
	struct dp_quic_ctx *ctx;
	OSSL_PARAM params[2];
	char digest[] = "SHA256";

	if ((ctx = calloc(1, sizeof(*ctx))) == NULL)
		return NULL;
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0);
	params[1] = OSSL_PARAM_construct_end();
	if ((ctx->hmac = EVP_MAC_fetch(NULL, "HMAC", NULL)) == NULL ||
	    (ctx->mac = EVP_MAC_CTX_new(ctx->hmac)) == NULL ||
	    !EVP_MAC_CTX_set_params(ctx->mac, params) ||
	    (ctx->gcm_alg = EVP_CIPHER_fetch(NULL, "AES-128-GCM", NULL)) == NULL ||
	    (ctx->ecb_alg = EVP_CIPHER_fetch(NULL, "AES-128-ECB", NULL)) == NULL ||
	    (ctx->gcm = EVP_CIPHER_CTX_new()) == NULL ||
	    (ctx->ecb = EVP_CIPHER_CTX_new()) == NULL ||
	    !EVP_DecryptInit_ex2(ctx->gcm, ctx->gcm_alg, NULL, NULL, NULL) ||
	    !EVP_EncryptInit_ex2(ctx->ecb, ctx->ecb_alg, NULL, NULL, NULL) ||
	    !EVP_CIPHER_CTX_set_padding(ctx->ecb, 0)) {
		dp_quic_ctx_free(ctx);
		errno = EIO;
		return NULL;
	}
	return ctx;
}

uint8_t *
dp_quic_ctx_plain(struct dp_quic_ctx *ctx)
{
	return ctx->plain;
}

/* out = HMAC-SHA256(key, a || b); b may be empty. */
static bool
hmac2(struct dp_quic_ctx *ctx, const uint8_t *key, size_t key_len, const uint8_t *a,
    size_t a_len, const uint8_t *b, size_t b_len, uint8_t out[SHA256_LEN])
{
	size_t n;

	return EVP_MAC_init(ctx->mac, key, key_len, NULL) &&
	    EVP_MAC_update(ctx->mac, a, a_len) &&
	    (b_len == 0 || EVP_MAC_update(ctx->mac, b, b_len)) &&
	    EVP_MAC_final(ctx->mac, out, &n, SHA256_LEN) && n == SHA256_LEN;
}

/*
 * HKDF-Expand-Label (RFC 8446 s7.1) with an empty context, for len <= 32:
 *
 *   HkdfLabel = u16 len | u8 n | "tls13 " label (n bytes) | u8 0 (context)
 *   out = first len bytes of HMAC(secret, HkdfLabel || 0x01)        (RFC 5869 s2.3, T(1))
 */
static bool
expand_label(struct dp_quic_ctx *ctx, const uint8_t secret[SHA256_LEN], const char *label,
    uint8_t *out, size_t len)
{
	uint8_t info[2 + 1 + LABEL_MAX + 1 + 1], t[SHA256_LEN];
	size_t label_len = strlen(label), n = 0;

	if (len > SHA256_LEN || 6 + label_len > LABEL_MAX)
		return false;
	info[n++] = 0;
	info[n++] = (uint8_t)len;
	info[n++] = (uint8_t)(6 + label_len);
	memcpy(info + n, "tls13 ", 6);
	n += 6;
	memcpy(info + n, label, label_len);
	n += label_len;
	info[n++] = 0;
	info[n++] = 0x01;
	if (!hmac2(ctx, secret, SHA256_LEN, info, n, NULL, 0, t))
		return false;
	memcpy(out, t, len);
	return true;
}

int
dp_quic_keys_derive(struct dp_quic_ctx *ctx, uint32_t version, const uint8_t *dcid,
    size_t dcid_len, struct dp_quic_keys *out, uint8_t *client_secret)
{
	uint8_t initial[SHA256_LEN], client[SHA256_LEN];
	const uint8_t *salt;
	bool v2;

	if (!quic_version_known(version) || dcid_len > QUIC_CID_MAX)
		return -EINVAL;
	v2 = version == QUIC_V2;
	salt = v2 ? quic_v2_salt : version == QUIC_DRAFT29 ? quic_draft29_salt : quic_v1_salt;
	/* HKDF-Extract(salt, DCID) is HMAC with the salt as key (RFC 5869 s2.2). */
	if (!hmac2(ctx, salt, sizeof(quic_v1_salt), dcid, dcid_len, NULL, 0, initial) ||
	    !expand_label(ctx, initial, "client in", client, SHA256_LEN) ||
	    !expand_label(ctx, client, v2 ? "quicv2 key" : "quic key", out->key,
	    DP_QUIC_KEY_LEN) ||
	    !expand_label(ctx, client, v2 ? "quicv2 iv" : "quic iv", out->iv, DP_QUIC_IV_LEN) ||
	    !expand_label(ctx, client, v2 ? "quicv2 hp" : "quic hp", out->hp, DP_QUIC_HP_LEN))
		return -EIO;
	out->version = version;
	out->dcid_len = (uint8_t)dcid_len;
	memset(out->dcid, 0, sizeof(out->dcid));
	memcpy(out->dcid, dcid, dcid_len);
	if (client_secret != NULL)
		memcpy(client_secret, client, SHA256_LEN);
	return 0;
}

/*
 * The full packet number nearest next_pn whose low bits are the truncated ones (RFC 9000
 * appendix A.3). Written without signed arithmetic: next_pn - hwin may not exist.
 */
static uint64_t
pn_decode(uint64_t next_pn, uint64_t truncated, unsigned int bits)
{
	uint64_t win = UINT64_C(1) << bits, hwin = win / 2, mask = win - 1;
	uint64_t cand = (next_pn & ~mask) | truncated;

	if (cand + hwin <= next_pn && cand < (UINT64_C(1) << 62) - win)
		return cand + win;
	if (cand > next_pn + hwin && cand >= win)
		return cand - win;
	return cand;
}

/*
 * Long header after header protection (RFC 9001 s5.4.1):
 *
 *   pkt:  | first | version .. token .. length | pn (1-4) | ciphertext | tag (16) |
 *         0                                     pn_offset                packet_len
 *   sample = pkt[pn_offset + 4 .. + 16]    (as if the packet number were 4 bytes)
 *   mask = AES-ECB(hp, sample); first ^= mask[0] & 0x0f; pn[i] ^= mask[1 + i]
 *
 * The AAD is the header with protection removed, first byte to the end of the packet
 * number. pkt is const, so the two changed pieces go to the AEAD separately from the
 * unchanged middle.
 */
int
dp_quic_packet_open(struct dp_quic_ctx *ctx, const struct dp_quic_keys *k,
    const uint8_t *pkt, const struct quic_initial *q, uint64_t next_pn, uint8_t *plain,
    size_t *plain_len, uint64_t *pn)
{
	uint8_t mask[16], first, pnb[4], nonce[DP_QUIC_IV_LEN], tag[DP_QUIC_TAG_LEN];
	size_t pn_len, ct_len;
	uint64_t trunc = 0, full;
	int n;

	/* quic_initial_parse() guarantees payload_len >= 20: the sample is in the packet. */
	if (!EVP_EncryptInit_ex2(ctx->ecb, NULL, k->hp, NULL, NULL) ||
	    !EVP_EncryptUpdate(ctx->ecb, mask, &n, pkt + q->pn_offset + 4, 16) || n != 16)
		return -EIO;
	first = pkt[0] ^ (mask[0] & 0x0f);
	pn_len = (size_t)(first & 0x03) + 1;
	for (size_t i = 0; i < pn_len; i++) {
		pnb[i] = pkt[q->pn_offset + i] ^ mask[1 + i];
		trunc = trunc << 8 | pnb[i];
	}
	full = pn_decode(next_pn, trunc, (unsigned int)(8 * pn_len));
	ct_len = q->payload_len - pn_len - DP_QUIC_TAG_LEN;

	/* nonce = iv XOR the packet number, left-padded to the IV length (RFC 9001 s5.3) */
	memcpy(nonce, k->iv, sizeof(nonce));
	for (size_t i = 0; i < 8; i++)
		nonce[DP_QUIC_IV_LEN - 1 - i] ^= (uint8_t)(full >> (8 * i));
	memcpy(tag, pkt + q->packet_len - DP_QUIC_TAG_LEN, sizeof(tag));

	if (!EVP_DecryptInit_ex2(ctx->gcm, NULL, k->key, nonce, NULL) ||
	    !EVP_DecryptUpdate(ctx->gcm, NULL, &n, &first, 1) ||
	    !EVP_DecryptUpdate(ctx->gcm, NULL, &n, pkt + 1, (int)(q->pn_offset - 1)) ||
	    !EVP_DecryptUpdate(ctx->gcm, NULL, &n, pnb, (int)pn_len) ||
	    !EVP_DecryptUpdate(ctx->gcm, plain, &n, pkt + q->pn_offset + pn_len, (int)ct_len) ||
	    !EVP_CIPHER_CTX_ctrl(ctx->gcm, EVP_CTRL_AEAD_SET_TAG, sizeof(tag), tag))
		return -EIO;
	if (EVP_DecryptFinal_ex(ctx->gcm, plain + n, &n) <= 0)
		return -EBADMSG;
	/* RFC 9000 s17.2: judged after removing both header and packet protection. */
	if ((first & 0x0c) != 0)
		return -EPROTO;
	*plain_len = ct_len;
	*pn = full;
	return 0;
}

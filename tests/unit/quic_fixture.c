/*
 * Fixtures shared by the dp_quic tests (test_dp_quic.c, test_dp_quic_crypto.c,
 * test_dp_quic_bad.c): the RFC vectors, a client flow, an Initial sealer built on the
 * module's own key derivation, and the UDP payload of a captured frame.
 * Failures go through cmocka, so these may only be called from inside a running test.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include <openssl/evp.h>

#include "dp_quic.h"
#include "quic_fixture.h"
#include "quic_vectors.h"
#include "tls_fixture.h"

struct dp_quic_ctx *qf_ctx;
struct qf_flow qf_fl;

/* RFC 9001 A.2 and RFC 9369 A.2: the client's Initial, protected; then its CRYPTO frame. */
const char qf_rfc9001_a2_hex[] =
	"c000000001088394c8f03e5157080000449e7b9aec34d1b1c98dd7689fb8ec11d242b123dc9bd8ba"
	"b936b47d92ec356c0bab7df5976d27cd449f63300099f3991c260ec4c60d17b31f8429157bb35a12"
	"82a643a8d2262cad67500cadb8e7378c8eb7539ec4d4905fed1bee1fc8aafba17c750e2c7ace01e6"
	"005f80fcb7df621230c83711b39343fa028cea7f7fb5ff89eac2308249a02252155e2347b63d58c5"
	"457afd84d05dfffdb20392844ae812154682e9cf012f9021a6f0be17ddd0c2084dce25ff9b06cde5"
	"35d0f920a2db1bf362c23e596d11a4f5a6cf3948838a3aec4e15daf8500a6ef69ec4e3feb6b1d98e"
	"610ac8b7ec3faf6ad760b7bad1db4ba3485e8a94dc250ae3fdb41ed15fb6a8e5eba0fc3dd60bc8e3"
	"0c5c4287e53805db059ae0648db2f64264ed5e39be2e20d82df566da8dd5998ccabdae053060ae6c"
	"7b4378e846d29f37ed7b4ea9ec5d82e7961b7f25a9323851f681d582363aa5f89937f5a67258bf63"
	"ad6f1a0b1d96dbd4faddfcefc5266ba6611722395c906556be52afe3f565636ad1b17d508b73d874"
	"3eeb524be22b3dcbc2c7468d54119c7468449a13d8e3b95811a198f3491de3e7fe942b330407abf8"
	"2a4ed7c1b311663ac69890f4157015853d91e923037c227a33cdd5ec281ca3f79c44546b9d90ca00"
	"f064c99e3dd97911d39fe9c5d0b23a229a234cb36186c4819e8b9c5927726632291d6a418211cc29"
	"62e20fe47feb3edf330f2c603a9d48c0fcb5699dbfe5896425c5bac4aee82e57a85aaf4e2513e4f0"
	"5796b07ba2ee47d80506f8d2c25e50fd14de71e6c418559302f939b0e1abd576f279c4b2e0feb85c"
	"1f28ff18f58891ffef132eef2fa09346aee33c28eb130ff28f5b766953334113211996d20011a198"
	"e3fc433f9f2541010ae17c1bf202580f6047472fb36857fe843b19f5984009ddc324044e847a4f4a"
	"0ab34f719595de37252d6235365e9b84392b061085349d73203a4a13e96f5432ec0fd4a1ee65accd"
	"d5e3904df54c1da510b0ff20dcc0c77fcb2c0e0eb605cb0504db87632cf3d8b4dae6e705769d1de3"
	"54270123cb11450efc60ac47683d7b8d0f811365565fd98c4c8eb936bcab8d069fc33bd801b03ade"
	"a2e1fbc5aa463d08ca19896d2bf59a071b851e6c239052172f296bfb5e72404790a2181014f3b94a"
	"4e97d117b438130368cc39dbb2d198065ae3986547926cd2162f40a29f0c3c8745c0f50fba3852e5"
	"66d44575c29d39a03f0cda721984b6f440591f355e12d439ff150aab7613499dbd49adabc8676eef"
	"023b15b65bfc5ca06948109f23f350db82123535eb8a7433bdabcb909271a6ecbcb58b936a88cd4e"
	"8f2e6ff5800175f113253d8fa9ca8885c2f552e657dc603f252e1a8e308f76f0be79e2fb8f5d5fbb"
	"e2e30ecadd220723c8c0aea8078cdfcb3868263ff8f0940054da48781893a7e49ad5aff4af300cd8"
	"04a6b6279ab3ff3afb64491c85194aab760d58a606654f9f4400e8b38591356fbf6425aca26dc852"
	"44259ff2b19c41b9f96f3ca9ec1dde434da7d2d392b905ddf3d1f9af93d1af5950bd493f5aa731b4"
	"056df31bd267b6b90a079831aaf579be0a39013137aac6d404f518cfd46840647e78bfe706ca4cf5"
	"e9c5453e9f7cfd2b8b4c8d169a44e55c88d4a9a7f9474241e221af44860018ab0856972e194cd934";

const char qf_rfc9369_a2_hex[] =
	"d76b3343cf088394c8f03e5157080000449ea0c95e82ffe67b6abcdb4298b485dd04de806071bf03"
	"dceebfa162e75d6c96058bdbfb127cdfcbf903388e99ad049f9a3dd4425ae4d0992cfff18ecf0fdb"
	"5a842d09747052f17ac2053d21f57c5d250f2c4f0e0202b70785b7946e992e58a59ac52dea6774d4"
	"f03b55545243cf1a12834e3f249a78d395e0d18f4d766004f1a2674802a747eaa901c3f10cda5500"
	"cb9122faa9f1df66c392079a1b40f0de1c6054196a11cbea40afb6ef5253cd6818f6625efce3b6de"
	"f6ba7e4b37a40f7732e093daa7d52190935b8da58976ff3312ae50b187c1433c0f028edcc4c2838b"
	"6a9bfc226ca4b4530e7a4ccee1bfa2a3d396ae5a3fb512384b2fdd851f784a65e03f2c4fbe11a53c"
	"7777c023462239dd6f7521a3f6c7d5dd3ec9b3f233773d4b46d23cc375eb198c63301c21801f6520"
	"bcfb7966fc49b393f0061d974a2706df8c4a9449f11d7f3d2dcbb90c6b877045636e7c0c0fe4eb0f"
	"697545460c806910d2c355f1d253bc9d2452aaa549e27a1fac7cf4ed77f322e8fa894b6a83810a34"
	"b361901751a6f5eb65a0326e07de7c1216ccce2d0193f958bb3850a833f7ae432b65bc5a53975c15"
	"5aa4bcb4f7b2c4e54df16efaf6ddea94e2c50b4cd1dfe06017e0e9d02900cffe1935e0491d77ffb4"
	"fdf85290fdd893d577b1131a610ef6a5c32b2ee0293617a37cbb08b847741c3b8017c25ca9052ca1"
	"079d8b78aebd47876d330a30f6a8c6d61dd1ab5589329de714d19d61370f8149748c72f132f0fc99"
	"f34d766c6938597040d8f9e2bb522ff99c63a344d6a2ae8aa8e51b7b90a4a806105fcbca31506c44"
	"6151adfeceb51b91abfe43960977c87471cf9ad4074d30e10d6a7f03c63bd5d4317f68ff325ba3bd"
	"80bf4dc8b52a0ba031758022eb025cdd770b44d6d6cf0670f4e990b22347a7db848265e3e5eb72df"
	"e8299ad7481a408322cac55786e52f633b2fb6b614eaed18d703dd84045a274ae8bfa73379661388"
	"d6991fe39b0d93debb41700b41f90a15c4d526250235ddcd6776fc77bc97e7a417ebcb31600d01e5"
	"7f32162a8560cacc7e27a096d37a1a86952ec71bd89a3e9a30a2a26162984d7740f81193e8238e61"
	"f6b5b984d4d3dfa033c1bb7e4f0037febf406d91c0dccf32acf423cfa1e7071010d3f270121b493c"
	"e85054ef58bada42310138fe081adb04e2bd901f2f13458b3d6758158197107c14ebb193230cd115"
	"7380aa79cae1374a7c1e5bbcb80ee23e06ebfde206bfb0fcbc0edc4ebec309661bdd908d532eb0c6"
	"adc38b7ca7331dce8dfce39ab71e7c32d318d136b6100671a1ae6a6600e3899f31f0eed19e3417d1"
	"34b90c9058f8632c798d4490da4987307cba922d61c39805d072b589bd52fdf1e86215c2d54e6670"
	"e07383a27bbffb5addf47d66aa85a0c6f9f32e59d85a44dd5d3b22dc2be80919b490437ae4f36a0a"
	"e55edf1d0b5cb4e9a3ecabee93dfc6e38d209d0fa6536d27a5d6fbb17641cde27525d61093f1b280"
	"72d111b2b4ae5f89d5974ee12e5cf7d5da4d6a31123041f33e61407e76cffcdcfd7e19ba58cf4b53"
	"6f4c4938ae79324dc402894b44faf8afbab35282ab659d13c93f70412e85cb199a37ddec60054547"
	"3cfb5a05e08d0b209973b2172b4d21fb69745a262ccde96ba18b2faa745b6fe189cf772a9f84cbfc";

const char qf_rfc_a2_crypto_hex[] =
	"060040f1010000ed0303ebf8fa56f12939b9584a3896472ec40bb863cfd3e86804fe3a47f06a2b69"
	"484c00000413011302010000c000000010000e00000b6578616d706c652e636f6dff01000100000a"
	"00080006001d0017001800100007000504616c706e000500050100000000003300260024001d0020"
	"9370b2c9caa47fbabaf4559fedba753de171fa71f50f1ce15d43e994ec74d748002b000302030400"
	"0d0010000e0403050306030203080408050806002d00020101001c00024001003900320408ffffff"
	"ffffffffff05048000ffff07048000ffff0801100104800075300901100f088394c8f03e51570806"
	"048000ffff";

void
qf_flow_init(struct qf_flow *f)
{
	dp_quic_hello_init(&f->h, f->buf, sizeof(f->buf));
}

/* Feed an exact-size heap copy, so valgrind and ASan see a read past the datagram. */
enum dp_quic_status
qf_feed(struct qf_flow *f, const uint8_t *d, size_t n)
{
	uint8_t *copy = malloc(n > 0 ? n : 1);
	enum dp_quic_status st;

	assert_non_null(copy);
	memcpy(copy, d, n);
	st = dp_quic_hello_feed(qf_ctx, &f->h, copy, n, &f->out);
	free(copy);
	return st;
}

void
qf_assert_sni(const struct qf_flow *f, const char *want)
{
	tf_assert_name(f->out.sni, want);
	/* out aliases the flow's buffer, not the datagram */
	assert_true(f->out.sni.p > f->buf && f->out.sni.p + f->out.sni.len <= f->buf +
	    sizeof(f->buf));
}

/* A QUIC varint in its shortest form (RFC 9000 s16). */
void
qf_put_varint(struct tf_msg *m, uint64_t v)
{
	if (v < 64) {
		tf_u8(m, (unsigned int)v);
	} else if (v < 16384) {
		tf_u16(m, (unsigned int)(0x4000 | v));
	} else {
		assert_true(v < (UINT64_C(1) << 30));
		tf_u16(m, (unsigned int)(0x8000 | v >> 16));
		tf_u16(m, (unsigned int)(v & 0xffff));
	}
}

void
qf_crypto_frame(struct tf_msg *m, size_t off, const uint8_t *data, size_t n)
{
	tf_u8(m, 0x06);
	qf_put_varint(m, off);
	qf_put_varint(m, n);
	tf_raw(m, data, n);
}


/*
 * Protect one Initial whose payload is frames (n bytes) and pad zero bytes (PADDING) into
 * out, as a client does (RFC 9001 s5.3-5.4). Returns its length.
 */
size_t
qf_seal_pad(const struct qf_seal *s, const uint8_t *frames, size_t n, size_t pad, uint8_t *out)
{
	uint32_t version = s->version ? s->version : QUIC_V1;
	const char *dcid_hex = s->dcid ? s->dcid : QF_RFC_DCID;
	size_t pn_len = s->pn_len ? s->pn_len : 2, pl = n + pad, h = 0, pn_off, dl, kl, sl;
	uint8_t dcid[QUIC_CID_MAX], kdcid[QUIC_CID_MAX], scid[QUIC_CID_MAX], nonce[12];
	uint8_t mask[32], *plain;
	struct dp_quic_keys k;
	EVP_CIPHER_CTX *c;
	int len;

	dl = qf_unhex(dcid_hex, dcid, sizeof(dcid));
	kl = qf_unhex(s->key_dcid ? s->key_dcid : dcid_hex, kdcid, sizeof(kdcid));
	sl = qf_unhex(s->scid ? s->scid : "", scid, sizeof(scid));
	assert_int_equal(dp_quic_keys_derive(qf_ctx, s->key_version ? s->key_version : version,
	    kdcid, kl, &k, NULL), 0);
	plain = malloc(pl > 0 ? pl : 1);
	assert_non_null(plain);
	memcpy(plain, frames, n);
	memset(plain + n, 0, pad);

	out[h++] = (uint8_t)(0xc0 | (version == QUIC_V2 ? 0x10 : 0) | s->reserved << 2 |
	    (pn_len - 1));
	for (int i = 3; i >= 0; i--)
		out[h++] = (uint8_t)(version >> (8 * i));
	out[h++] = (uint8_t)dl;
	memcpy(out + h, dcid, dl);
	h += dl;
	out[h++] = (uint8_t)sl;
	memcpy(out + h, scid, sl);
	h += sl;
	out[h++] = 0;					/* no token */
	assert_true(pn_len + pl + 16 < 16384);
	out[h++] = (uint8_t)(0x40 | (pn_len + pl + 16) >> 8);
	out[h++] = (uint8_t)(pn_len + pl + 16);
	pn_off = h;
	for (size_t i = 0; i < pn_len; i++)
		out[h++] = (uint8_t)(s->pn >> (8 * (pn_len - 1 - i)));

	memcpy(nonce, k.iv, sizeof(nonce));
	for (size_t i = 0; i < 8; i++)
		nonce[11 - i] ^= (uint8_t)(s->pn >> (8 * i));
	assert_non_null(c = EVP_CIPHER_CTX_new());
	assert_true(EVP_EncryptInit_ex(c, EVP_aes_128_gcm(), NULL, k.key, nonce));
	assert_true(EVP_EncryptUpdate(c, NULL, &len, out, (int)h));
	assert_true(EVP_EncryptUpdate(c, out + h, &len, plain, (int)pl) || pl == 0);
	assert_true(EVP_EncryptFinal_ex(c, out + h + pl, &len));
	assert_true(EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, 16, out + h + pl));
	assert_true(EVP_EncryptInit_ex(c, EVP_aes_128_ecb(), NULL, k.hp, NULL));
	assert_true(EVP_EncryptUpdate(c, mask, &len, out + pn_off + 4, 16) && len == 16);
	EVP_CIPHER_CTX_free(c);
	free(plain);

	out[0] ^= mask[0] & 0x0f;
	for (size_t i = 0; i < pn_len; i++)
		out[pn_off + i] ^= mask[1 + i];
	return h + pl + 16;
}

/* One Initial filling a datagram of QF_DGRAM bytes (more if the frames need it). */
size_t
qf_seal(const struct qf_seal *s, const struct tf_msg *frames, uint8_t *out)
{
	size_t bare = qf_seal_pad(s, frames->b, frames->n, 0, out);

	return bare >= QF_DGRAM ? bare : qf_seal_pad(s, frames->b, frames->n, QF_DGRAM - bare, out);
}

/* A TLS 1.3 ClientHello (no record header) for host, NULL for none, pq key-share bytes. */
void
qf_hello_make(struct tf_hello *th, const char *host, size_t pq)
{
	static const char *const h3[] = { "h3", NULL };

	tf_hello_begin(th);
	if (host != NULL)
		tf_ext_sni(&th->m, host);
	tf_ext_common(&th->m);
	tf_ext_alpn(&th->m, h3);
	tf_ext_key_share(&th->m, pq);
	tf_hello_end(th);
}

/* Seal and feed one Initial with one CRYPTO frame: data (n bytes) at stream offset off. */
enum dp_quic_status
qf_feed_crypto(struct qf_flow *f, const struct qf_seal *s, size_t off, const uint8_t *data,
    size_t n)
{
	static struct tf_msg fr;
	static uint8_t pkt[4096];
	size_t len;

	fr.n = 0;
	qf_crypto_frame(&fr, off, data, n);
	len = qf_seal(s, &fr, pkt);
	return qf_feed(f, pkt, len);
}

int
qf_setup(void **state)
{
	(void)state;
	return (qf_ctx = dp_quic_ctx_new()) == NULL ? -1 : 0;
}

int
qf_teardown(void **state)
{
	(void)state;
	dp_quic_ctx_free(qf_ctx);
	return 0;
}

/* The UDP payload of a client datagram to port 443 in an Ethernet frame, or NULL. */
const uint8_t *
qf_udp443(const uint8_t *p, size_t n, uint8_t key[34], size_t *len)
{
	size_t l3 = 14, l4;
	uint16_t type;

	if (n < 14)
		return NULL;
	type = (uint16_t)(p[12] << 8 | p[13]);
	while ((type == 0x8100 || type == 0x88a8) && n >= l3 + 4) {
		type = (uint16_t)(p[l3 + 2] << 8 | p[l3 + 3]);
		l3 += 4;
	}
	memset(key, 0, 34);
	if (type == 0x0800 && n >= l3 + 20 && p[l3 + 9] == 17) {
		l4 = l3 + (size_t)(p[l3] & 0x0f) * 4;
		memcpy(key, p + l3 + 12, 4);
		memcpy(key + 18, p + l3 + 16, 4);
	} else if (type == 0x86dd && n >= l3 + 40 && p[l3 + 6] == 17) {
		l4 = l3 + 40;
		memcpy(key, p + l3 + 8, 16);
		memcpy(key + 18, p + l3 + 24, 16);
	} else {
		return NULL;
	}
	if (n < l4 + 8 || p[l4 + 2] != 0x01 || p[l4 + 3] != 0xbb)
		return NULL;
	memcpy(key + 16, p + l4, 2);
	*len = (size_t)(p[l4 + 4] << 8 | p[l4 + 5]) - 8;
	if (*len > n - l4 - 8)
		return NULL;
	return p + l4 + 8;
}

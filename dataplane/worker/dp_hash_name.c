/*
 * The name hash, dp_hash_name(): CLNH then AES-128 where the CPU has them, SipHash
 * elsewhere (dp_hash.h says why it is a PRF).
 */
#include <endian.h>
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#if defined(__x86_64__)
#include <emmintrin.h>
#include <immintrin.h>	// IWYU pragma: keep (PCLMULQDQ; its own wmmintrin.h is no layout header)
#endif

#include "dp_aes.h"
#include "dp_hash.h"
#include "dp_hash_int.h"

static uint64_t dp_hash_name_nh[DP_HASH_NAME_BYTES / 8];	/* dp_hash_name()'s CLNH key */
static uint8_t dp_hash_name_aes[16];		/* and its AES-128 key */

/*
 * dp_hash_name() (dp_hash.h says why it is a PRF): the name's CLNH sum under its own key,
 * then that sum encrypted with AES-128 under another, its low 64 bits kept. AES-NI's
 * rounds are one instruction each; the key is expanded once, at dp_hash_init().
 */
#if defined(__x86_64__)
static bool dp_hash_aesni;	/* dp_hash_clmul, and the CPU has AES-NI: dp_hash_name is this */
static __m128i dp_hash_name_rk[11];	/* the name key's AES-128 round keys */

/*
 * A name of 1..16 bytes as one zero-padded block, the words dp_digest_tail() makes of it,
 * from loads within it that overlap: no byte before or after it is read.
 */
static inline __m128i
dp_name_block(const uint8_t *p, size_t len)
{
	uint64_t m0, m1 = 0;
	uint32_t a, b;

	if (len >= 8) {
		m0 = dp_ld64(p);
		if (len > 8)
			m1 = dp_ld64(p + len - 8) >> (8 * (16 - len));
	} else if (len >= 4) {
		memcpy(&a, p, 4);
		memcpy(&b, p + len - 4, 4);
		m0 = le32toh(a) | (uint64_t)le32toh(b) << (8 * (len - 4));
	} else {
		m0 = p[0] | (uint64_t)p[len / 2] << (8 * (len / 2)) |
		    (uint64_t)p[len - 1] << (8 * (len - 1));
	}
	return _mm_set_epi64x((long long)m1, (long long)m0);
}

/* One CLNH term: the block x under its two key words at k, multiplied. */
__attribute__((target("avx,aes,pclmul,ssse3"), always_inline)) static inline __m128i
dp_hash_name_term(__m128i x, const uint64_t *k)
{
	x = _mm_xor_si128(x, _mm_loadu_si128((const __m128i *)(const void *)k));
	return _mm_clmulepi64_si128(x, x, 0x01);
}

/*
 * CLNH of the name (dp_hash_clnh_run()'s sum), then AES-128 of it. len <= DP_HASH_NAME_BYTES.
 * Inline in dp_hash_name_ni(), the form dp_hash_name() calls: no second call a name.
 */
__attribute__((target("avx,aes,pclmul,ssse3"), always_inline)) static inline uint64_t
dp_hash_name_run(const __m128i rk[11], const uint64_t *nh_key, const uint8_t *p, size_t len)
{
	__m128i sum = _mm_cvtsi64_si128((long long)len);
	size_t i = 16;

	if (len > 16) {
		/*
		 * the whole blocks before the last: the first, then (past 32 bytes) a loop; a
		 * name of 17..32 bytes, most, takes no turn of it and its last block's place is
		 * known
		 */
		sum = _mm_xor_si128(sum, dp_hash_name_term(_mm_loadu_si128((const __m128i *)
		    (const void *)p), nh_key));
		if (len > 32) {
			for (; i + 16 < len; i += 16)
				sum = _mm_xor_si128(sum, dp_hash_name_term(_mm_loadu_si128(
				    (const __m128i *)(const void *)(p + i)), nh_key + i / 8));
		}
		/* the 16 bytes that end the name, moved down over those a block took */
		sum = _mm_xor_si128(sum, dp_hash_name_term(_mm_shuffle_epi8(_mm_loadu_si128(
		    (const __m128i *)(const void *)(p + len - 16)), _mm_loadu_si128(
		    (const __m128i *)(const void *)(dp_hash_shift + 16 - (len - i)))),
		    nh_key + i / 8));
	} else if (len > 0) {
		sum = _mm_xor_si128(sum, dp_hash_name_term(dp_name_block(p, len), nh_key));
	}
	return (uint64_t)_mm_cvtsi128_si64(dp_aes_encrypt(rk, sum));
}
#endif

#if defined(__x86_64__)
/* dp_hash_name_run() as a call, for dp_hash_name_keyed(), which is built for any CPU. */
__attribute__((target("avx,aes,pclmul,ssse3"))) static uint64_t
dp_hash_name_run_keyed(const __m128i rk[11], const uint64_t *nh_key, const uint8_t *p,
    size_t len)
{
	return dp_hash_name_run(rk, nh_key, p, len);
}

/* dp_hash_name() where the CPU has AES-NI and PCLMULQDQ: SipHash past DP_HASH_NAME_BYTES. */
__attribute__((target("avx,aes,pclmul,ssse3"))) static uint64_t
dp_hash_name_ni(const void *buf, size_t len)
{
	if (len > DP_HASH_NAME_BYTES)
		return dp_hash_bytes(buf, len);
	return dp_hash_name_run(dp_hash_name_rk, dp_hash_name_nh, buf, len);
}

__attribute__((constructor)) static void
dp_hash_aes_probe(void)
{
	__builtin_cpu_init();
	dp_hash_aesni = __builtin_cpu_supports("avx") && __builtin_cpu_supports("pclmul") &&
	    __builtin_cpu_supports("aes");
	if (dp_hash_aesni)
		dp_hash_name_fn = dp_hash_name_ni;
}
#endif

int
dp_hash_name_init(void)
{
	if (getrandom(dp_hash_name_nh, sizeof(dp_hash_name_nh), 0) != (ssize_t)sizeof(dp_hash_name_nh) ||
	    getrandom(dp_hash_name_aes, sizeof(dp_hash_name_aes), 0) !=
	    (ssize_t)sizeof(dp_hash_name_aes))
		return -errno;
#if defined(__x86_64__)
	if (dp_hash_aesni)
		dp_aes_expand(dp_hash_name_aes, dp_hash_name_rk);
#endif
	return 0;
}

bool
dp_hash_has_aes(void)
{
#if defined(__x86_64__)
	return dp_hash_aesni;
#else
	return false;
#endif
}

bool
dp_hash_aes128(const uint8_t key[16], const uint8_t in[16], uint8_t out[16])
{
#if defined(__x86_64__)
	__m128i rk[11];

	if (!dp_hash_aesni)
		return false;
	dp_aes_expand(key, rk);
	_mm_storeu_si128((__m128i *)(void *)out,
	    dp_aes_encrypt(rk, _mm_loadu_si128((const __m128i *)(const void *)in)));
	return true;
#else
	(void)key, (void)in, (void)out;
	return false;
#endif
}

uint64_t
dp_hash_name_keyed(const uint64_t *nh_key, const uint8_t aes_key[16], uint64_t k0, uint64_t k1,
    const void *buf, size_t len)
{
#if defined(__x86_64__)
	__m128i rk[11];

	if (dp_hash_aesni && len <= DP_HASH_NAME_BYTES) {
		dp_aes_expand(aes_key, rk);
		return dp_hash_name_run_keyed(rk, nh_key, buf, len);
	}
#else
	(void)nh_key, (void)aes_key;
#endif
	return dp_siphash24(k0, k1, buf, len);
}

uint64_t (*dp_hash_name_fn)(const void *buf, size_t len) = dp_hash_bytes;

/*
 * Host names as a ClientHello's server_name carries them (RFC 6066 s3): RFC 1035 s2.3.4
 * limits as text, at most 253 bytes and labels of 1..63 once the optional root dot is
 * dropped, and only the bytes RFC 952 LDH allows.
 *
 * Every connection's SNI is checked here, so a short name (most are) is judged 16 bytes
 * at a time with SSE2, x86-64's baseline, or with AVX2 in one 32-byte load (two that
 * overlap up to 63 bytes): which bytes are allowed, which are dots, which are capitals, as
 * bit masks; a name of at most 63 bytes holds no label too long, so the dots' places
 * settle the rest. Longer names, and names too close to their buffer's start for a load
 * that ends with them, go a byte at a time.
 */
#include <string.h>

#include "sni/tls.h"
#include "tls_int.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__SSE2__) && defined(__x86_64__)
#include <immintrin.h>

/* the CPU has AVX2: a name of up to 63 bytes takes its loads */
static bool host_avx2;

__attribute__((constructor)) static void
host_avx2_probe(void)
{
	__builtin_cpu_init();
	host_avx2 = __builtin_cpu_supports("avx2");
}
#endif

/*
 * What each byte may be in a host name: HOST_LDH a lower-case letter, a digit or '-';
 * HOST_CAP a capital (a letter, with HOST_UPPER to tell it needs folding); HOST_DOT; 0 none.
 */
#define HOST_LDH	1
#define HOST_UPPER	2
#define HOST_CAP	(HOST_LDH | HOST_UPPER)
#define HOST_DOT	4

static const uint8_t host_byte[256] = {
	['a'] = HOST_LDH, ['b'] = HOST_LDH, ['c'] = HOST_LDH, ['d'] = HOST_LDH,
	['e'] = HOST_LDH, ['f'] = HOST_LDH, ['g'] = HOST_LDH, ['h'] = HOST_LDH,
	['i'] = HOST_LDH, ['j'] = HOST_LDH, ['k'] = HOST_LDH, ['l'] = HOST_LDH,
	['m'] = HOST_LDH, ['n'] = HOST_LDH, ['o'] = HOST_LDH, ['p'] = HOST_LDH,
	['q'] = HOST_LDH, ['r'] = HOST_LDH, ['s'] = HOST_LDH, ['t'] = HOST_LDH,
	['u'] = HOST_LDH, ['v'] = HOST_LDH, ['w'] = HOST_LDH, ['x'] = HOST_LDH,
	['y'] = HOST_LDH, ['z'] = HOST_LDH,
	['0'] = HOST_LDH, ['1'] = HOST_LDH, ['2'] = HOST_LDH, ['3'] = HOST_LDH,
	['4'] = HOST_LDH, ['5'] = HOST_LDH, ['6'] = HOST_LDH, ['7'] = HOST_LDH,
	['8'] = HOST_LDH, ['9'] = HOST_LDH, ['-'] = HOST_LDH,
	['A'] = HOST_CAP, ['B'] = HOST_CAP, ['C'] = HOST_CAP, ['D'] = HOST_CAP,
	['E'] = HOST_CAP, ['F'] = HOST_CAP, ['G'] = HOST_CAP, ['H'] = HOST_CAP,
	['I'] = HOST_CAP, ['J'] = HOST_CAP, ['K'] = HOST_CAP, ['L'] = HOST_CAP,
	['M'] = HOST_CAP, ['N'] = HOST_CAP, ['O'] = HOST_CAP, ['P'] = HOST_CAP,
	['Q'] = HOST_CAP, ['R'] = HOST_CAP, ['S'] = HOST_CAP, ['T'] = HOST_CAP,
	['U'] = HOST_CAP, ['V'] = HOST_CAP, ['W'] = HOST_CAP, ['X'] = HOST_CAP,
	['Y'] = HOST_CAP, ['Z'] = HOST_CAP,
	['.'] = HOST_DOT,
};

/*
 * A byte at a time, name without its root dot and 1..SNI_HOST_MAX bytes long. Only
 * letters, digits and '-' (RFC 952 LDH, the only bytes RFC 6066 s3 lets a HostName carry
 * once IDNs are in their A-label form); NUL, '_', spaces and high bytes are refused
 * because a filter and a server could read them differently. *upper: whether it has
 * capitals, so that who needs it in lower case copies it only then.
 */
bool
sni_host_scan_bytes(const uint8_t *name, size_t len, bool *upper)
{
	size_t label = 0;
	uint8_t seen = 0;

	for (size_t i = 0; i < len; i++) {
		uint8_t k = host_byte[name[i]];

		seen |= k;
		if (k & HOST_LDH) {
			if (++label > SNI_LABEL_MAX)
				return false;
		} else if (k != HOST_DOT || label == 0) {	/* another byte, a leading dot or ".." */
			return false;
		} else {
			label = 0;
		}
	}
	*upper = (seen & HOST_UPPER) != 0;
	return label > 0;
}

#if defined(__SSE2__)
/* Bytes of x in [lo, hi]: x - lo, moved to the signed range, below hi - lo + 1. */
static inline __m128i
host_in_range(__m128i x, int lo, int hi)
{
	return _mm_cmplt_epi8(_mm_add_epi8(x, _mm_set1_epi8((char)(-lo - 128))),
	    _mm_set1_epi8((char)(hi - lo + 1 - 128)));
}

/* 16 bytes of a name: bit i of *bad, *dot, *up for byte i not allowed, a dot, a capital. */
static inline void
host_chunk(const uint8_t *p, uint32_t *bad, uint32_t *dot, uint32_t *up)
{
	__m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
	__m128i k20 = _mm_set1_epi8(0x20);
	/* | 0x20 folds capitals onto letters; no other byte lands in 'a'..'z' */
	__m128i letter = host_in_range(_mm_or_si128(x, k20), 'a', 'z');
	__m128i dots = _mm_cmpeq_epi8(x, _mm_set1_epi8('.'));
	__m128i ok = _mm_or_si128(_mm_or_si128(letter, dots),
	    _mm_or_si128(host_in_range(x, '0', '9'), _mm_cmpeq_epi8(x, _mm_set1_epi8('-'))));

	*bad = ~(uint32_t)_mm_movemask_epi8(ok) & 0xffff;
	*dot = (uint32_t)_mm_movemask_epi8(dots);
	*up = (uint32_t)_mm_movemask_epi8(_mm_andnot_si128(_mm_cmpeq_epi8(_mm_and_si128(x, k20),
	    k20), letter));
}

/*
 * Whether the dots of a name of len bytes, 1..63, at the bits of dot (none past len) are
 * in place: not first, not last, no two together: no dot where the byte after it, the
 * name's start or its last byte is one.
 */
static inline bool
host_dots_ok(uint64_t dot, size_t len)
{
	return (dot & (dot >> 1 | 1 | UINT64_C(1) << (len - 1))) == 0;
}

/*
 * The verdict on a name of len bytes, 1..63, from its masks (bit i for byte i; bits past
 * len are ignored): a byte no name has; a leading or a last dot ("a.." less its root
 * dot); "..". *upper: whether it has capitals.
 */
static inline bool
host_masks_ok(uint64_t bad, uint64_t dot, uint64_t up, size_t len, bool *upper)
{
	uint64_t all = (UINT64_C(1) << len) - 1;

	if ((bad & all) != 0 || (dot & 1) != 0 || (dot >> (len - 1) & 1) != 0 ||
	    (dot & dot >> 1 & all) != 0)
		return false;
	*upper = (up & all) != 0;
	return true;
}

/*
 * name of len bytes, 1..63, with at least 16 bytes from floor to its end: the chunk that
 * ends with it (reaching before name when it is shorter than 16), then the whole chunks
 * from its start that end before it (the last one may overlap it), each one's bits moved
 * to the bytes they stand for. A name of up to 16 bytes takes one chunk and no loop.
 */
static bool
sni_host_scan_vec(const uint8_t *name, size_t len, bool *upper)
{
	uint64_t bad, dot, up;
	uint32_t b, d, u;

	host_chunk(name + len - 16, &b, &d, &u);
	if (len <= 16) {
		bad = b >> (16 - len);
		dot = d >> (16 - len);
		up = u >> (16 - len);
	} else {
		bad = (uint64_t)b << (len - 16);
		dot = (uint64_t)d << (len - 16);
		up = (uint64_t)u << (len - 16);
		for (size_t i = 0; i + 16 < len; i += 16) {	/* the whole ones before it */
			host_chunk(name + i, &b, &d, &u);
			bad |= (uint64_t)b << i;
			dot |= (uint64_t)d << i;
			up |= (uint64_t)u << i;
		}
	}
	return host_masks_ok(bad, dot, up, len, upper);
}

#if defined(__x86_64__)
/*
 * What a byte may be, for the AVX2 scan: the AND of a row for its low nibble and one for
 * its high nibble (PSHUFB looks each up in a 16-byte table), one bit for each run of
 * allowed bytes under one high nibble, so a byte no name has is 0 (one from 0x80 up looks
 * up 0, PSHUFB's rule). A dot takes the sign bit, which PMOVMSKB gathers; capitals are
 * the two classes over HOST_C_DASH as signed bytes.
 */
#define HOST_C_AO	1	/* 'a'..'o': high nibble 6, low 1..f */
#define HOST_C_PZ	2	/* 'p'..'z': 7, 0..a */
#define HOST_C_DIGIT	4	/* 3, 0..9 */
#define HOST_C_DASH	8	/* 0x2d */
#define HOST_C_CAP_AO	32	/* 'A'..'O': 4, 1..f */
#define HOST_C_CAP_PZ	64	/* 'P'..'Z': 5, 0..a */
#define HOST_C_DOT	128	/* 0x2e */

#define HOST_LO(l)	(((l) >= 1 ? HOST_C_AO | HOST_C_CAP_AO : 0) |			\
			 ((l) <= 0xa ? HOST_C_PZ | HOST_C_CAP_PZ : 0) |			\
			 ((l) <= 9 ? HOST_C_DIGIT : 0) | ((l) == 0xd ? HOST_C_DASH : 0) |	\
			 ((l) == 0xe ? HOST_C_DOT : 0))
#define HOST_HI(h)	((h) == 2 ? HOST_C_DASH | HOST_C_DOT : (h) == 3 ? HOST_C_DIGIT :	\
			 (h) == 4 ? HOST_C_CAP_AO : (h) == 5 ? HOST_C_CAP_PZ :		\
			 (h) == 6 ? HOST_C_AO : (h) == 7 ? HOST_C_PZ : 0)
#define HOST_NIBBLES(f)	f(0), f(1), f(2), f(3), f(4), f(5), f(6), f(7), f(8), f(9), f(10),	\
			f(11), f(12), f(13), f(14), f(15)
#define HOST_ROW4(b)	b, b, b, b
#define HOST_ROW(b)	{ HOST_ROW4(b), HOST_ROW4(b), HOST_ROW4(b), HOST_ROW4(b), \
			  HOST_ROW4(b), HOST_ROW4(b), HOST_ROW4(b), HOST_ROW4(b) }

/* host_judge_avx2()'s constants: a byte over a vector, or a nibble's table in each half */
enum { HOST_K0F, HOST_KLO, HOST_KHI, HOST_KZERO, HOST_KCAPS, HOST_KS };

static const uint8_t host_rows[HOST_KS][32] __attribute__((aligned(32))) = {
	[HOST_K0F] = HOST_ROW(0x0f),
	[HOST_KLO] = { HOST_NIBBLES(HOST_LO), HOST_NIBBLES(HOST_LO) },
	[HOST_KHI] = { HOST_NIBBLES(HOST_HI), HOST_NIBBLES(HOST_HI) },
	[HOST_KZERO] = HOST_ROW(0),
	[HOST_KCAPS] = HOST_ROW(HOST_C_DASH),
};

/* row i of k, a load: see host_judge_avx2() */
__attribute__((target("avx2"))) static inline __m256i
host_row(const uint8_t (*k)[32], unsigned int i)
{
	return _mm256_load_si256((const __m256i *)(const void *)k[i]);
}

/* The classes of the 32 bytes at p: see host_rows. */
__attribute__((target("avx2"))) static inline __m256i
host_classes(const uint8_t (*k)[32], const uint8_t *p)
{
	__m256i x = _mm256_loadu_si256((const __m256i *)(const void *)p);

	return _mm256_and_si256(_mm256_shuffle_epi8(host_row(k, HOST_KLO), x),
	    _mm256_shuffle_epi8(host_row(k, HOST_KHI),
	    _mm256_and_si256(_mm256_srli_epi16(x, 4), host_row(k, HOST_K0F))));
}

/* Bit i for byte i of c's classes: *bad none, *dot a dot, *caps a capital. */
__attribute__((target("avx2"))) static inline void
host_class_masks(const uint8_t (*k)[32], __m256i c, uint32_t *bad, uint32_t *dot,
    uint32_t *caps)
{
	*bad = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(c, host_row(k, HOST_KZERO)));
	*dot = (uint32_t)_mm256_movemask_epi8(c);
	*caps = (uint32_t)_mm256_movemask_epi8(_mm256_cmpgt_epi8(c, host_row(k, HOST_KCAPS)));
}

/*
 * A name of 1..32 bytes with at least 32 bytes from its buffer's start to its end: the
 * classes of the one 32-byte load that ends with it, where SSE2 takes two past 16 bytes
 * and tests ranges. *lower: no capitals. The constants are loaded from host_rows through
 * a pointer the compiler cannot see through (the empty asm): told their values, GCC built
 * each from an immediate in three instructions, where a load is one or none (an operand
 * of the instruction that uses it).
 */
__attribute__((target("avx2"))) static enum sni_status
host_judge_avx2(const uint8_t *name, size_t len, bool *lower)
{
	const uint8_t (*k)[32] = host_rows;
	unsigned int drop = 32 - (unsigned int)len;
	uint32_t bad, dot, caps;

	__asm__("" : "+r"(k));
	host_class_masks(k, host_classes(k, name + len - 32), &bad, &dot, &caps);
	/*
	 * The masks shifted down by drop have no bit past len: host_masks_ok()'s tests
	 * without its mask of the name's bits, the dots' three as one (host_dots_ok())
	 */
	if (bad >> drop != 0 || !host_dots_ok(dot >> drop, len))
		return SNI_MALFORMED;
	*lower = caps >> drop == 0;
	return SNI_FOUND;
}

/*
 * host_judge_avx2() for a name of 33..63 bytes: the load at its start and the one that
 * ends with it (they overlap), the second's bits moved up to the bytes they stand for.
 */
__attribute__((target("avx2"))) static enum sni_status
host_judge_avx2_long(const uint8_t *name, size_t len, bool *lower)
{
	const uint8_t (*k)[32] = host_rows;
	uint32_t bad0, dot0, caps0, bad1, dot1, caps1;
	unsigned int up = (unsigned int)len - 32;

	__asm__("" : "+r"(k));
	host_class_masks(k, host_classes(k, name), &bad0, &dot0, &caps0);
	host_class_masks(k, host_classes(k, name + len - 32), &bad1, &dot1, &caps1);
	if ((bad0 | bad1) != 0 || !host_dots_ok((uint64_t)dot1 << up | dot0, len))
		return SNI_MALFORMED;
	*lower = (caps0 | caps1) == 0;
	return SNI_FOUND;
}
#endif
#endif

/*
 * host_judge_far() but by AVX2: a longer name, or a CPU without it (a call of its own, so
 * that the AVX2 way keeps no frame).
 */
static __attribute__((noinline)) enum sni_status
host_judge_rest(const uint8_t *name, size_t len, bool *lower)
{
	bool upper, ok;

#if defined(__SSE2__)
	if (len <= SNI_LABEL_MAX)
		ok = sni_host_scan_vec(name, len, &upper);
	else
#endif
		ok = sni_host_scan_bytes(name, len, &upper);
	if (!ok)
		return SNI_MALFORMED;
	*lower = !upper;
	return SNI_FOUND;
}

/*
 * name without its root dot, 1..SNI_HOST_MAX bytes, with at least 32 bytes from its
 * buffer's start to its end: SNI_FOUND with *lower when it is a host name.
 */
static inline enum sni_status
host_judge_far(const uint8_t *name, size_t len, bool *lower)
{
#if defined(__SSE2__) && defined(__x86_64__)
	if (len <= 32 && host_avx2)
		return host_judge_avx2(name, len, lower);
	if (len <= SNI_LABEL_MAX && host_avx2)
		return host_judge_avx2_long(name, len, lower);
#endif
	return host_judge_rest(name, len, lower);
}

bool
sni_host_scan(const uint8_t *floor, const uint8_t *name, size_t len, bool *upper)
{
	bool lower;

	if (len > 0 && name[len - 1] == '.')
		len--;
	if (len == 0 || len > SNI_HOST_MAX)
		return false;
	if ((size_t)(name - floor) + len >= 32) {
		if (host_judge_far(name, len, &lower) != SNI_FOUND)
			return false;
		*upper = !lower;
		return true;
	}
#if defined(__SSE2__)
	if (len <= SNI_LABEL_MAX && (size_t)(name - floor) + len >= 16)
		return sni_host_scan_vec(name, len, upper);
#else
	(void)floor;
#endif
	return sni_host_scan_bytes(name, len, upper);
}

enum sni_status
tls_host_judge(const uint8_t *host, size_t n, struct tls_hello *out)
{
	if (n > 0 && host[n - 1] == '.')
		n--;
	if (n - 1 >= SNI_HOST_MAX)	/* 0 wraps */
		return SNI_MALFORMED;
	out->sni = (struct sni_name){ .p = host, .len = n };
	return host_judge_far(host, n, &out->sni_lower);
}

bool
sni_host_valid(const uint8_t *name, size_t len)
{
	bool upper;

	return sni_host_scan(name, name, len, &upper);
}


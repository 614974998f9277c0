/*
 * A ClientHello's extensions (RFC 8446 s4.2): the walk over them, each type at most once,
 * and the two it reads, server_name (RFC 6066 s3) and ALPN (RFC 7301 s3.1). What
 * tls_hello.c finds past the fixed fields comes here.
 */
#include <string.h>

#include "sni/rd.h"
#include "sni/tls.h"
#include "tls_int.h"

#define TLS_EXT_SERVER_NAME	0x0000
#define TLS_EXT_ALPN		0x0010
#define TLS_EXT_ECH		0xfe0d
#define TLS_NAME_HOST		0

#define TLS_EXT_RARE	8	/* types past 63 checked pairwise, up to this many */
#define TLS_EXT_MAX	(TLS_HELLO_MAX / 4)	/* the most extensions a vector can hold */

/*
 * The types past 63 of a hello with more than TLS_EXT_RARE of them: a 2^16-bit set whose
 * 64-bit words are cleared only when first touched (live says which), so that a hello
 * stuffed with thousands of extensions still costs O(1) per extension.
 */
struct tls_ext_seen {
	uint64_t live[1024 / 64];
	uint64_t word[65536 / 64];
};

/*
 * server_name extension_data (RFC 6066 s3):
 *
 *   u16 list_len | u8 name_type (0 = host_name) | u16 len | host_name
 *
 * Exactly one entry: RFC 6066 forbids two of one type and defines no other type, and a
 * filter that picks "the first" can disagree with the server about which name counts.
 * One trailing dot is accepted and left out of out->sni, which aliases the message.
 * SNI_FOUND or SNI_MALFORMED.
 */
static inline __attribute__((always_inline)) enum sni_status
tls_ext_sni(struct rd ext, struct tls_hello *out)
{
	size_t n = ext.len;

	/*
	 * Each length must be what follows it fills: list_len n - 2, and len n - 5 after a
	 * name_type of 0. The first four bytes are compared as one word with what they must
	 * be (n < 2^16: the high byte of len is (n - 5) >> 8), the fifth as a byte.
	 */
	if (n < 5 || rd_be32(ext.p) != ((uint32_t)(n - 2) << 16 | TLS_NAME_HOST << 8 |
	    (uint32_t)(n - 5) >> 8) || ext.p[4] != (uint8_t)(n - 5))
		return SNI_MALFORMED;
	return tls_host_judge(ext.p + 5, n - 5, out);
}

/*
 * application_layer_protocol_negotiation extension_data (RFC 7301 s3.1):
 *
 *   u16 list_len (>= 2) | { u8 len (>= 1) | protocol_name }+
 *
 * The first TLS_ALPN_MAX ids are kept in the client's order; out->alpn[] aliases the message.
 */
static inline __attribute__((always_inline)) bool
tls_ext_alpn(struct rd ext, struct tls_hello *out, bool ids)
{
	struct sni_name *id = out->alpn, *const ids_end = out->alpn + TLS_ALPN_MAX;
	const uint8_t *q, *last;

	/* an empty list (list_len 0, ext.len 2) fails with the too short */
	if (ext.len < 3 || rd_be16(ext.p) != ext.len - 2)
		return false;
	/*
	 * q walks the ids' length bytes up to last, the byte where the last id must end; an
	 * id of 0 bytes, or one past last, fails: k - 1 wraps for 0, so one unsigned compare
	 * asks 1 <= k <= last - q. The ids are stored through a pointer that walks alpn[],
	 * whose place is their count, stored once.
	 */
	q = ext.p + 2;
	last = ext.p + ext.len - 1;	/* not before q, as ext.len >= 3: one id at least */
	do {
		size_t k = *q;

		if (k - 1 >= (size_t)(last - q))
			return false;
		if (ids) {	/* tls_hello_parse_sni() checks the ids only */
			if (id < ids_end)
				*id++ = (struct sni_name){ .p = q + 1, .len = k };
			else
				out->alpn_more = true;
		}
		q += 1 + k;
	} while (q <= last);
	if (ids)
		out->nb_alpn = (uint8_t)(id - out->alpn);
	return true;
}

/* The data of the extension at ext, whose length the walk has checked. */
static inline struct rd
tls_ext_data(const uint8_t *ext)
{
	return rd_make(ext + 4, rd_be16(ext + 2));
}

/* Into the set; false when type was already in it. */
static inline bool
tls_ext_set_add(struct tls_ext_seen *seen, uint16_t type)
{
	unsigned int w = type >> 6;
	uint64_t bit = UINT64_C(1) << (type & 63);

	if ((seen->live[w >> 6] >> (w & 63) & 1) == 0) {
		seen->live[w >> 6] |= UINT64_C(1) << (w & 63);
		seen->word[w] = 0;
	}
	if (seen->word[w] & bit)
		return false;
	seen->word[w] |= bit;
	return true;
}

/* tls_ext_rare_check() past TLS_EXT_RARE types: through the set, whose frame only it needs. */
static __attribute__((noinline)) bool
tls_ext_rare_many(const uint16_t *rare, size_t n, struct tls_hello *out)
{
	struct tls_ext_seen seen;

	memset(seen.live, 0, sizeof(seen.live));
	for (size_t i = 0; i < n; i++) {
		if (rare[i] == TLS_EXT_ECH)
			out->ech = true;
		if (!tls_ext_set_add(&seen, rare[i]))
			return false;
	}
	return true;
}

/*
 * Bit type (below 64) of *low set; true when it was set already. On x86-64 one BTS, whose
 * carry is the old bit: the test, then the set, cost the walk an instruction more on each
 * extension.
 */
static inline bool
tls_ext_low_add(uint64_t *low, uint64_t type)
{
	bool was;

#if defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__)
	__asm__("btsq %2, %0" : "+r"(*low), "=@ccc"(was) : "r"(type));
#else
	was = *low >> type & 1;
	*low |= UINT64_C(1) << type;
#endif
	return was;
}

/*
 * The extension at ext, of a type below 64, noted in *low and at[]; true when its type was
 * seen already. Below 64, the type is its second byte: one load, where taking it from the
 * swapped header word is a copy and a shift. A word: an index and BTS's operand.
 */
static inline __attribute__((always_inline)) bool
tls_ext_low_note(uint64_t *low, const uint8_t **at, const uint8_t *ext)
{
	uint64_t type = ext[1];

	if (tls_ext_low_add(low, type))
		return true;
	at[type] = ext;
	return false;
}

/*
 * The bit of the 64 a type past 63 takes for the duplicate check: the top 6 bits of its
 * product with a multiplier found to give those a client sends (all 16 GREASE values,
 * 0xff01, 0xfe0d, 0x4469, 0x44cd) bits of their own, so that a hello whose types take
 * distinct bits has no duplicate without a scan; a shared bit only costs the scan.
 */
#define TLS_EXT_RARE_BIT(type)	((uint32_t)((type) * UINT32_C(0x129ac)) >> 26)

/* Whether type is among rare[0..n). */
static __attribute__((noinline)) bool
tls_ext_rare_has(const uint16_t *rare, size_t n, uint16_t type)
{
	for (size_t i = 0; i < n; i++)
		if (rare[i] == type)
			return true;
	return false;
}

/*
 * The n types past 63 the walk listed (GREASE, renegotiation_info, ECH, ALPS: nearly
 * always a few), bits their set of TLS_EXT_RARE_BIT()s, clash whether two took one, and
 * by_bit[b] the type that took bit b: false when a type is there twice, which only a clash
 * allows. ECH flagged: without a clash, the one type that took ECH's bit says.
 */
static inline bool
tls_ext_rare_check(const uint16_t *rare, size_t n, uint64_t bits, bool clash,
    const uint16_t *by_bit, struct tls_hello *out)
{
	if (n > TLS_EXT_RARE)
		return tls_ext_rare_many(rare, n, out);
	if (clash) {
		for (size_t i = 1; i < n; i++)
			if (tls_ext_rare_has(rare, i, rare[i]))
				return false;
	}
	if ((bits >> TLS_EXT_RARE_BIT(TLS_EXT_ECH) & 1) &&
	    (clash ? tls_ext_rare_has(rare, n, TLS_EXT_ECH) :
	    by_bit[TLS_EXT_RARE_BIT(TLS_EXT_ECH)] == TLS_EXT_ECH))
		out->ech = true;
	return true;
}

/*
 * The two extensions read, once the walk is done (low: the types below 64 seen, at[]
 * where each starts): every way to fail is SNI_MALFORMED, so the order of the checks does
 * not matter, and the loop keeps no test for them.
 */
static inline __attribute__((always_inline)) enum sni_status
tls_ext_read(uint64_t low, const uint8_t *const *at, struct tls_hello *out, bool ids)
{
	if ((low >> TLS_EXT_ALPN & 1) && !tls_ext_alpn(tls_ext_data(at[TLS_EXT_ALPN]), out, ids))
		return SNI_MALFORMED;
	if ((low >> TLS_EXT_SERVER_NAME & 1) == 0)
		return SNI_ABSENT;
	return tls_ext_sni(tls_ext_data(at[TLS_EXT_SERVER_NAME]), out);
}

/*
 * extensions (RFC 8446 s4.2), filling their vector exactly:
 *
 *   { u16 extension_type | u16 len | extension_data (len) }*
 *
 * No type may appear twice (s4.2): two server_name or ALPN copies would let a filter and a
 * server judge different values, and no client sends duplicates. ECH (draft-ietf-tls-esni
 * s5) is only flagged: the outer hello's SNI is what gets judged.
 */
static __attribute__((noinline)) enum sni_status
tls_hello_exts_general(struct rd exts, struct tls_hello *out)
{
	/*
	 * Addresses as integers: one extension's length may take p past the vector's end
	 * (by at most 4 + 65535), which the walk then only compares. last: where the last
	 * type and length that fit would start (below p when none does: p is no buffer's
	 * first four bytes' address).
	 */
	uintptr_t p = (uintptr_t)exts.p, end = p + exts.len, last = end - 4;
	uint64_t low = 0;	/* the types below 64 seen: a register, not memory */
	uint64_t bits = 0;	/* the TLS_EXT_RARE_BIT()s of the others */
	bool clash = false;	/* two of those took one bit */
	uint16_t by_bit[64];	/* the type that took each (read for bits set only) */
	const uint8_t *at[64];	/* where each of them starts (read for those seen only) */
	uint16_t rare[TLS_EXT_MAX];	/* the others, in order, checked after the walk */
	size_t nrare = 0;

	if (exts.len > TLS_EXT_MAX * 4)	/* never from a hello within TLS_HELLO_MAX */
		return SNI_MALFORMED;
	/*
	 * An extension's type and length, four bytes, there while p <= last. One whose
	 * data runs past the vector leaves p past end, which ends the loop and fails the test
	 * after it: every way to fail is SNI_MALFORMED, and nothing it noted on the way (its
	 * place, its type as seen) is read once the walk has failed.
	 */
	while (p <= last) {
		uint32_t hdr = rd_be32((const uint8_t *)p);	/* the type, then the length */

		/*
		 * Told nothing of hdr, gcc takes nothing from the word it loaded before
		 * swapping it, which cost a move an extension
		 */
		__asm__("" : "+r"(hdr));
		if (hdr >= UINT32_C(64) << 16) {
			uint32_t bit = TLS_EXT_RARE_BIT(hdr >> 16);

			rare[nrare++] = (uint16_t)(hdr >> 16);
			by_bit[bit] = (uint16_t)(hdr >> 16);
			clash |= tls_ext_low_add(&bits, bit);
		} else if (tls_ext_low_note(&low, at, (const uint8_t *)p)) {
			return SNI_MALFORMED;
		}
		p += 4 + (hdr & 0xffff);
	}
	if (p != end)		/* less than a type and a length at the end, or an overrun */
		return SNI_MALFORMED;
	if (!tls_ext_rare_check(rare, nrare, bits, clash, by_bit, out))
		return SNI_MALFORMED;
	return tls_ext_read(low, at, out, true);
}

/*
 * The walk as most hellos let it go: the types past 63 only take their bits, with no list
 * of them. While no two of those share a bit, none is there twice and ECH is the type that
 * took ECH's bit; the first shared bit hands the whole vector to the general walk, which
 * lists them and decides (a shared bit is no duplicate yet). Whatever this walk answers,
 * the general one answers of the same vector: it fails where that one fails, at a
 * duplicate below 64 or at the end test, and reads the two extensions after the walk
 * the same way.
 */
static inline __attribute__((always_inline)) enum sni_status
tls_hello_exts_as(struct rd exts, struct tls_hello *out, bool ids)
{
	uintptr_t p = (uintptr_t)exts.p, end = p + exts.len, last = end - 4;
	uint64_t low = 0, bits = 0;
	uint16_t by_bit[64];	/* the type that took each bit (read for bits set only) */
	const uint8_t *at[64];	/* where each type below 64 starts (read for those seen only) */

	if (exts.len > TLS_EXT_MAX * 4)
		return tls_hello_exts_general(exts, out);
	while (p <= last) {
		uint32_t hdr = rd_be32((const uint8_t *)p);

		__asm__("" : "+r"(hdr));	/* as in tls_hello_exts_general() */
		if (__builtin_expect(hdr >= UINT32_C(64) << 16, 0)) {	/* 2 in 13 */
			uint32_t bit = TLS_EXT_RARE_BIT(hdr >> 16);

			if (ids)
				by_bit[bit] = (uint16_t)(hdr >> 16);
			if (tls_ext_low_add(&bits, bit))
				return tls_hello_exts_general(exts, out);
		} else if (tls_ext_low_note(&low, at, (const uint8_t *)p)) {
			return SNI_MALFORMED;
		}
		p += 4 + (hdr & 0xffff);
	}
	if (p != end)
		return SNI_MALFORMED;
	if (ids && (bits >> TLS_EXT_RARE_BIT(TLS_EXT_ECH) & 1) &&
	    by_bit[TLS_EXT_RARE_BIT(TLS_EXT_ECH)] == TLS_EXT_ECH)
		out->ech = true;
	return tls_ext_read(low, at, out, ids);
}

enum sni_status
tls_hello_exts(struct rd exts, struct tls_hello *out)
{
	return tls_hello_exts_as(exts, out, true);
}

enum sni_status
tls_hello_exts_sni(struct rd exts, struct tls_hello *out)
{
	return tls_hello_exts_as(exts, out, false);
}

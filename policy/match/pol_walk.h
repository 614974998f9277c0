/*
 * The walk of a name for its policy keys, eight bytes at a time. Private to policy/match
 * (and its unit test, which holds it to the byte-by-byte walk it replaced).
 *
 * The name is read in words that end where it ends (pol_hash_name()'s), right to left, so
 * that the hash of the suffix after each dot is the hash of the words to its right and
 * one more for the bytes of its own word past the dot: every probe key's hash comes from
 * the one pass, and no byte is read outside the name.
 */
#ifndef POL_WALK_H
#define POL_WALK_H

#include "pol_set.h"

/*
 * One probe of the walk: the unfinished hash (pol_hash_final() to come) of the key of kind
 * that is the name's len bytes from off.
 */
typedef void (*pol_walk_fn)(void *arg, uint64_t hash, uint8_t kind, size_t off, size_t len);

#define POL_ONES8	0x0101010101010101ULL
#define POL_HIGH8	(POL_ONES8 * 0x80)

/* The high bit of each byte of w that is a '.', and of no other (nothing carries). */
static inline uint64_t
pol_dots8(uint64_t w)
{
	uint64_t x = w ^ POL_ONES8 * '.';

	return ~(((x & ~POL_HIGH8) + ~POL_HIGH8) | x) & POL_HIGH8;
}

/*
 * The word of name (len bytes) that ends at end: its eight bytes before end, or when fewer
 * are left (the leftmost word), those in its high bytes and zero below (pol_hash_name()).
 */
static inline uint64_t
pol_walk_word(const char *name, size_t len, size_t end)
{
	uint64_t w;

	if (end >= 8) {
		memcpy(&w, name + end - 8, 8);
		return w;
	}
	if (len < 8)
		return pol_word_high((const uint8_t *)name, end);
	memcpy(&w, name, 8);
	return w << (8 * (8 - end));
}

/*
 * The unfinished hash of the exact key of name (len bytes) that holds no upper-case letter,
 * its labels unchecked: pol_match_lower_and_ports()'s, for a policy without wildcards.
 */
static inline __attribute__((always_inline)) uint64_t
pol_hash_name_lower(const char *name, size_t len)
{
	uint64_t h = POL_FNV_OFFSET;

	for (size_t end = len; end > 0; end = end >= 8 ? end - 8 : 0)
		h = pol_hash_word_lower(h, pol_walk_word(name, len, end));
	return h;
}

/*
 * pol_name_walk() for a policy without wildcards, whose one probe is the exact key: the
 * labels are checked a word's dots at a time, not dot by dot. Within a word only its
 * outer dots bound a label that may be empty or too long (the label to the right of its
 * highest dot); one between two of its dots is empty only when they stand side by side.
 */
static inline __attribute__((always_inline)) bool
pol_name_walk_exact(const char *name, size_t len, pol_walk_fn probe, void *arg)
{
	uint64_t h = POL_FNV_OFFSET;
	size_t label_end = len;

	for (size_t end = len; end > 0; end = end >= 8 ? end - 8 : 0) {
		uint64_t w = pol_walk_word(name, len, end), dots = pol_dots8(w);
		size_t hi, lo;

		h = pol_hash_word(h, w);
		if (dots == 0)
			continue;
		/* the leftmost word's zero bytes are no dots */
		hi = end - (8 - (63 - (size_t)__builtin_clzll(dots)) / 8);
		lo = end - (8 - (size_t)__builtin_ctzll(dots) / 8);
		if (label_end - hi - 1 == 0 || label_end - hi - 1 > POL_LABEL_MAX ||
		    (dots & dots >> 8) != 0)
			return false;
		label_end = lo;
	}
	if (label_end == 0 || label_end > POL_LABEL_MAX)	/* the leftmost label */
		return false;
	probe(arg, h, POL_NAME_EXACT, 0, len);
	return true;
}

/*
 * Call probe for every key the name (len bytes, one trailing dot ignored) may be stored
 * as: for each dot from the right, once the label after it is found to hold 1 to
 * POL_LABEL_MAX bytes, the wildcard key of the suffix after it (when wild); at last the
 * exact key of the whole name. A later probe is the more specific key. False, the walk
 * ended where it found it, for a name that is not a host name: empty, longer than
 * POL_NAME_MAX, or with a label empty or too long. Inlined, so that a caller's probe is
 * a direct call it can inline in turn, not one through a pointer a key.
 */
static inline __attribute__((always_inline)) bool
pol_name_walk(const char *name, size_t len, bool wild, pol_walk_fn probe, void *arg)
{
	uint64_t h = POL_FNV_OFFSET;
	size_t label_end;

	if (len > 0 && name[len - 1] == '.')
		len--;
	if (len == 0 || len > POL_NAME_MAX)
		return false;
	if (!wild)
		return pol_name_walk_exact(name, len, probe, arg);
	label_end = len;
	for (size_t end = len; end > 0; end = end >= 8 ? end - 8 : 0) {
		uint64_t w = pol_walk_word(name, len, end);

		/* the leftmost word's zero bytes are no dots */
		for (uint64_t dots = pol_dots8(w); dots != 0;) {
			unsigned int k = (63 - (unsigned int)__builtin_clzll(dots)) / 8;
			size_t at = end - (8 - k);	/* the dot's offset in name */

			dots &= ~(0x80ULL << (8 * k));
			if (label_end - at - 1 == 0 || label_end - at - 1 > POL_LABEL_MAX)
				return false;
			if (wild)
				probe(arg, k == 7 ? h : pol_hash_word(h, w & ~0ULL << (8 * (k + 1))),
				    POL_NAME_WILD, at + 1, len - at - 1);
			label_end = at;
		}
		h = pol_hash_word(h, w);
	}
	if (label_end == 0 || label_end > POL_LABEL_MAX)	/* the leftmost label */
		return false;
	probe(arg, h, POL_NAME_EXACT, 0, len);
	return true;
}

#endif /* POL_WALK_H */

/*
 * What the binding table's two sides share (dp_bind.h): its entries and their index, and
 * the lock-free lookup. dp_bind.c creates, learns and sweeps; dp_bind_view.c reads, and
 * dp_bind_allow.h, where a connection opens, asks its common question inline.
 */
#ifndef DP_BIND_INT_H
#define DP_BIND_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <rte_pause.h>
#include <rte_rcu_qsbr.h>
#include <rte_spinlock.h>

#include "dp_bind.h"
#include "dp_flow_tab.h"
#include "dp_hash.h"

struct dp_bind_key {
	uint16_t vm;
	uint8_t family;
	uint8_t zero;
	uint8_t addr[16];
	uint32_t pad;			/* whole 64-bit words for dp_hash_crc_inline() */
};
_Static_assert(sizeof(struct dp_bind_key) == 24, "a bind key is three words");

struct dp_bind_name {
	uint64_t hash;
	uint32_t gen;			/* the generation whose policy computed ports */
	uint64_t expires;
	struct pol_ports ports;
};

/*
 * What a lookup reads, the key to the first name, is in the entry's first two lines: an
 * entry is 256 bytes at a 128-byte boundary, the pair of lines the CPU fetches together.
 */
struct dp_binding {
	struct dp_bind_key key;		/* stable while live: set before the index has it */
	atomic_uint seq;		/* odd while a writer is inside */
	rte_spinlock_t lock;		/* writers */
	atomic_uint_fast64_t expires;	/* the latest of the names' */
	/*
	 * The budgets of every name learned for the address under generation budgets_gen,
	 * evicted ones included: a VM resolving more names of a shared address than an entry
	 * keeps must not push a budgeted one out, and the address out of its budget.
	 */
	uint32_t budgets_gen;
	uint8_t budgets;
	uint8_t nnames;
	atomic_bool live;		/* in the index (b->lock) */
	uint64_t retired;		/* the RCU token of its deletion */
	struct dp_bind_name names[DP_BIND_NAMES];
} __attribute__((aligned(128)));
_Static_assert(sizeof(struct dp_binding) == 256 &&
    offsetof(struct dp_binding, names[1]) <= 128, "a lookup reads a pair of lines");

struct dp_binds {
	struct dp_ft ft;		/* key hash -> entry index */
	struct dp_binding *e;
	uint32_t cap;
	uint16_t nvms;
	rte_spinlock_t lock;		/* the index, the entries' allocation */
	struct rte_rcu_qsbr *qsbr;
	uint32_t *free;			/* a stack of entries no reader can hold */
	uint32_t nfree;
	uint32_t *retired;		/* a ring of deleted entries, oldest token first */
	uint32_t retired_at, nretired;	/* the oldest's place, how many */
	uint32_t used;			/* entries ever handed out: the sweep's end (atomic) */
	atomic_uint_fast64_t *count;	/* per VM */
};

/*
 * The key's three words built in registers: stored field by field, gcc staged the key on
 * the stack and read its words back for the hash and the comparison. Little-endian words,
 * the fields' bytes in order (x86, as dp_flow_tab.h's SSE). a: the address's 16 bytes.
 */
static inline void
dp_bind_key_of(struct dp_bind_key *k, uint16_t vm, uint8_t family, const uint8_t *a)
{
	uint64_t w[3] = { (uint64_t)vm | (uint64_t)family << 16, 0, 0 };
	uint32_t four;

	_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "key words in field order");
	memcpy(&four, a, sizeof(four));
	w[0] |= (uint64_t)four << 32;
	if (family != 4) {	/* an IPv4 key is its four bytes, whatever follows */
		memcpy(&w[1], a + 4, sizeof(w[1]));
		memcpy(&four, a + 12, sizeof(four));
		w[2] = four;
	}
	memcpy(k, w, sizeof(w));
}

static inline void
dp_bind_key_make(struct dp_bind_key *k, uint16_t vm, const struct pol_addr *addr)
{
	dp_bind_key_of(k, vm, addr->family, addr->a);
}

/*
 * An IPv4 key's hash is its first word's: its other two are zero in every IPv4 key
 * (dp_bind_key_of()), and CRC over constant words maps the state one to one, so hashing
 * them too would part no two keys that collide without them. family: k's, where the caller
 * has it in a register (a key just made from it, dp_bind_key_of()).
 */
static inline uint32_t
dp_bind_hash_of(const struct dp_binds *b, const struct dp_bind_key *k, uint8_t family)
{
	return dp_hash_crc_inline(k, family == 4 ? 8 : sizeof(*k), b->ft.seed);
}

/* dp_bind_hash_of() of k, its family read back from it. */
static inline uint32_t
dp_bind_hash(const struct dp_binds *b, const struct dp_bind_key *k)
{
	return dp_bind_hash_of(b, k, k->family);
}

/* Word i of k: loaded straight from the entry, where copying the key whole staged it */
static inline uint64_t
dp_bind_key_word(const struct dp_bind_key *k, unsigned int i)
{
	uint64_t w;

	memcpy(&w, (const uint8_t *)k + 8 * i, sizeof(w));
	return w;
}

static inline bool
dp_bind_key_eq(const struct dp_bind_key *a, const struct dp_bind_key *b)
{
	return ((dp_bind_key_word(a, 0) ^ dp_bind_key_word(b, 0)) |
	    (dp_bind_key_word(a, 1) ^ dp_bind_key_word(b, 1)) |
	    (dp_bind_key_word(a, 2) ^ dp_bind_key_word(b, 2))) == 0;
}

/*
 * The entry holding k among the slots of bucket bk tagged tag (dp_ft_tag_vec(): spread
 * from the hash in the vector register, where the scalar tag took a round trip through a
 * general register and back), or NULL. v4: k is an IPv4 key (a constant where inlined),
 * told by its first word alone, which holds the family: an entry's equal to it is an IPv4
 * key's, whose other words are zero as k's are.
 */
static inline __attribute__((always_inline)) struct dp_binding *
dp_bind_find_in(const struct dp_binds *b, const struct dp_ft_bucket *bk, __m128i tag,
    const struct dp_bind_key *k, bool v4)
{
	uint32_t m = dp_ft_match_pairs_vec(bk, tag) & 0x5555u;

	atomic_thread_fence(memory_order_acquire);	/* the tags before their idx */
	for (; m != 0; m &= m - 1) {
		/* idx[bit / 2] at byte offset bit * 2 (dp_ft_idx_at), loaded whole beside writers */
		const uint32_t *at = (const uint32_t *)(const void *)
		    ((const uint8_t *)bk->idx + 2 * (size_t)__builtin_ctz(m));
		struct dp_binding *e = &b->e[__atomic_load_n(at, __ATOMIC_RELAXED)];

		if (v4 ? dp_bind_key_word(&e->key, 0) == dp_bind_key_word(k, 0) :
		    dp_bind_key_eq(&e->key, k))
			return e;
	}
	return NULL;
}

/*
 * k's entry (h its hash), or NULL. Safe beside the index's writer (dp_flow_tab.h).
 * Inlined: gcc kept it apart, and each connection's opening paid the call and its spills.
 */
static inline __attribute__((always_inline)) struct dp_binding *
dp_bind_find(const struct dp_binds *b, const struct dp_bind_key *k, uint32_t h)
{
	const struct dp_ft *ft = &b->ft;
	uint16_t tag = dp_ft_tag(h);
	uint32_t b1 = dp_ft_first(ft, h), moved;
	struct dp_binding *e;

	do {
		moved = __atomic_load_n(&ft->moved, __ATOMIC_ACQUIRE);
		/* the tag spread from the one the other bucket's place needs */
		if ((e = dp_bind_find_in(b, &ft->b[b1], _mm_set1_epi16((short)tag), k,
		    false)) != NULL || (e = dp_bind_find_in(b, &ft->b[dp_ft_alt(ft, b1, tag)],
		    _mm_set1_epi16((short)tag), k, false)) != NULL)
			return e;
		atomic_thread_fence(memory_order_acquire);
	} while (__atomic_load_n(&ft->moved, __ATOMIC_RELAXED) != moved);
	return NULL;
}

/*
 * A reader's pass over e's names, made in place: the sequence word when no writer is
 * inside. What the pass reads may be torn by a writer that enters meanwhile; every loop
 * over the entry is bounded by the arrays' sizes, never by a count read in the pass
 * (pol_ports_allow() bounds its own), and the pass's result is used only once
 * dp_bind_read_ok() says no writer entered. Copying the names first cost each connection's
 * opening more than the reads.
 */
static inline unsigned int
dp_bind_read_begin(const struct dp_binding *e)
{
	unsigned int s;

	while ((s = atomic_load_explicit(&e->seq, memory_order_acquire)) & 1)
		rte_pause();
	return s;
}

/* Did the pass begun at s read e whole, no writer in between? */
static inline bool
dp_bind_read_ok(const struct dp_binding *e, unsigned int s)
{
	atomic_thread_fence(memory_order_acquire);
	return atomic_load_explicit(&e->seq, memory_order_relaxed) == s;
}

#endif

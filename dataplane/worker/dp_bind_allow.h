/*
 * dp_bind_allows()'s common case, inline where a connection opens (dp_conn.c): each
 * opening by a binding asks it, and the call cost it its stack frame and the address's
 * staging. What the common case does not answer goes to dp_bind_allows_far().
 */
#ifndef DP_BIND_ALLOW_H
#define DP_BIND_ALLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "dp_bind.h"
#include "dp_bind_int.h"
#include "dp_gen.h"

/*
 * dp_bind_allows() in full, from the lookup on (a, the address's 16 bytes: an IPv4
 * address's first four): the key in its second bucket or moved meanwhile, a VM with
 * budgets, a first name that does not admit.
 */
struct dp_bind_allow dp_bind_allows_far(struct dp_binds *b, uint16_t vm, uint8_t family,
    const uint8_t *a, uint16_t port, uint64_t now, const struct dp_gen *g);

/*
 * Does p allow every port, whatever the one asked: a port-less allow and no deny at all?
 * Its flags and counts are bytes 0-5 of p (bool any, deny_any, allow_more, deny_more,
 * uint8_t nallow, ndeny), tested as one word where pol_ports_allow() tested five bytes.
 * What it says of a torn read counts only once the read is whole (dp_bind_read_ok()).
 */
static inline bool
dp_bind_ports_all(const struct pol_ports *p)
{
	uint64_t w;

	_Static_assert(offsetof(struct pol_ports, any) == 0 &&
	    offsetof(struct pol_ports, deny_any) == 1 &&
	    offsetof(struct pol_ports, deny_more) == 3 &&
	    offsetof(struct pol_ports, ndeny) == 5 && sizeof(*p) >= sizeof(w) &&
	    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the flags' bytes in the first word");
	memcpy(&w, p, sizeof(w));
	/* any 1; deny_any, deny_more and ndeny 0; allow_more, nallow, budget, pad any value */
	return (w & UINT64_C(0x0000ff00ff00ffff)) == 1;
}

/*
 * dp_bind_allows() of the address family, a (its 16 bytes), for a VM the caller has seen
 * has no budgets (a budget's account is the whole way's), in its common case: the key is
 * in its first bucket, and its first name, learned under g and live, allows port. Then
 * the first name is the one the common pass (dp_bind_pass_common()) would find, and the
 * binding is live: e->expires, the latest of its names', is no earlier than the first's,
 * each name put in the same write that extends it (dp_bind_put_name()). A live entry
 * always has a first name: its creation puts one before the index has it. Its answer
 * (allowed) into *by and true; anything else false, for the whole way, from the lookup
 * on. A caller that leaves the whole way to a path of its own keeps no arguments of the
 * far call across the lookup.
 */
static inline __attribute__((always_inline)) bool
dp_bind_allows_common(struct dp_binds *b, uint16_t vm, uint8_t family, const uint8_t *a,
    uint16_t port, uint64_t now, const struct dp_gen *g, struct dp_bind_allow *by)
{
	const struct dp_binding *e;
	const struct dp_bind_name *nm;
	struct dp_bind_key k;
	unsigned int s;
	uint64_t hash;
	uint32_t h;
	bool yes;

	dp_bind_key_of(&k, vm, family, a);
	if (family == 4) {	/* one word to hash and compare (dp_bind_hash()) */
		h = dp_hash_crc_inline(&k, 8, b->ft.seed);
		e = dp_bind_find_in(b, &b->ft.b[dp_ft_first(&b->ft, h)], dp_ft_tag_vec(h), &k,
		    true);
	} else {
		h = dp_hash_crc_inline(&k, sizeof(k), b->ft.seed);
		e = dp_bind_find_in(b, &b->ft.b[dp_ft_first(&b->ft, h)], dp_ft_tag_vec(h), &k,
		    false);
	}
	if (e == NULL)
		return false;
	nm = &e->names[0];
	/* the answer acted on in the loop once its read is whole: after it, a flag to test */
	for (;;) {
		s = dp_bind_read_begin(e);
		yes = nm->gen == g->id && nm->expires > now &&
		    (dp_bind_ports_all(&nm->ports) || pol_ports_allow(&nm->ports, port));
		hash = nm->hash;
		if (!dp_bind_read_ok(e, s))
			continue;
		if (!yes)
			return false;
		*by = (struct dp_bind_allow){ .name_hash = hash, .allowed = true };
		return true;
	}
}

/* dp_bind_allows() of the address family, a: its common case inline, the rest called. */
static inline __attribute__((always_inline)) struct dp_bind_allow
dp_bind_allows_inline(struct dp_binds *b, uint16_t vm, uint8_t family, const uint8_t *a,
    uint16_t port, uint64_t now, const struct dp_gen *g)
{
	struct dp_bind_allow by;

	if (g->vms[vm].budgets == 0 &&
	    dp_bind_allows_common(b, vm, family, a, port, now, g, &by))
		return by;
	return dp_bind_allows_far(b, vm, family, a, port, now, g);
}

#endif

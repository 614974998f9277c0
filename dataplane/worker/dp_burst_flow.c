/*
 * The last stage's flow re-check (dp_burst_int.h): what a frame's lookup says once an
 * earlier frame of its burst opened or closed a flow.
 */
#include <string.h>

#include "dp_burst_int.h"

/*
 * One of 256 bits for k's ports, the same for equal keys: a frame that found no flow
 * compares its key with the noted ones only when one of them has its bit (a SYN's ports
 * are its own; a burst of SYNs, each noted, leaves most bits clear).
 */
static inline unsigned int
dp_burst_ports_bit(const struct dp_flow_key *k)
{
	return (k->vm_port ^ k->peer_port) & 255;
}

/*
 * The flow frame fr looked up to, or what it is now if an earlier frame of the burst
 * changed it. Only the connection stage opens a flow, and only for its frame's key; a
 * close is that frame's flow's, or an idle one an open reclaimed (any). So when the epoch
 * moved since the last frame looked up, that frame's key is noted, and a frame's answer
 * is looked up again only if its flow is no longer its key's (closed, or its entry reused)
 * or it found none and a noted key is its own. The frames that look up are those with a
 * key, in the order of their keys, so the last one before fr is key fr->key - 1.
 */
struct dp_flow *
dp_burst_flow_moved(struct dp_worker *w, struct dp_burst *b, const struct dp_burst_frame *fr,
    struct dp_flow *f, uint32_t epoch)
{
	const struct dp_flow_key *k = &b->keys[fr->key];
	unsigned int bit;

	if (epoch != b->epoch) {
		b->epoch = epoch;
		if (fr->key > 0) {
			bit = dp_burst_ports_bit(k - 1);
			/* the set starts with its first key: the burst's start clears nothing */
			if (b->nmoved == 0)
				memset(b->moved_ports, 0, sizeof(b->moved_ports));
			b->moved_ports[bit / 64] |= UINT64_C(1) << (bit % 64);
			b->moved[b->nmoved++] = (uint8_t)(fr->key - 1);
		}
	}
	if (b->nmoved == 0) {
		b->clean = epoch;
		return f;
	}
	b->clean = UINT64_MAX;
	if (f != NULL)
		return dp_flow_is(f, k) ? f : dp_flow_lookup(w->flows, k);
	bit = dp_burst_ports_bit(k);
	if (!(b->moved_ports[bit / 64] & UINT64_C(1) << (bit % 64)))
		return NULL;
	for (unsigned int i = 0; i < b->nmoved; i++)
		if (dp_flow_key_eq(&b->keys[b->moved[i]], k))
			return dp_flow_lookup(w->flows, k);
	return NULL;
}

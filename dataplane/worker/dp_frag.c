/*
 * The mbuf side of IP fragments: sni/ipfrag.c does the parsing, placing and cutting over
 * plain buffers; this file only moves bytes between those buffers and mbufs.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_malloc.h>

#include "dp_frag.h"
#include "dp_hash.h"
#include "dp_mem.h"

#define DP_FRAG_SCRATCH		65536	/* a frame of several segments, gathered */
#define DP_FRAG_BIG_ROOM	UINT16_MAX	/* data room of a big mbuf, headroom included */

struct dp_frags {
	struct ipfrag_table table;
	struct ipfrag_slot *slots;
	uint8_t *bufs;				/* nb_slots * IPFRAG_BUF_SIZE */
	uint8_t *scratch;			/* DP_FRAG_SCRATCH */
	struct rte_mempool *normal;		/* the caller's */
	struct rte_mempool *big;		/* ours */
	unsigned int id;			/* the caller's: its IDs apart from others' */
	uint64_t ids_drawn;			/* fragment IDs drawn: the next one's input */
};

struct dp_frags *
dp_frags_create(unsigned int id, uint32_t nb_slots, uint32_t per_vm, uint64_t timeout,
    struct rte_mempool *normal, int socket)
{
	char name[RTE_MEMPOOL_NAMESIZE];
	struct dp_frags *t;

	if (nb_slots == 0 || normal == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	if ((t = rte_zmalloc_socket("dp_frags", sizeof(*t), RTE_CACHE_LINE_SIZE, socket)) == NULL)
		return NULL;
	t->normal = normal;
	t->id = id;
	t->slots = rte_zmalloc_socket("dp_frag_slots", (size_t)nb_slots * sizeof(t->slots[0]),
	    RTE_CACHE_LINE_SIZE, socket);
	t->bufs = rte_malloc_socket("dp_frag_bufs", (size_t)nb_slots * IPFRAG_BUF_SIZE,
	    RTE_CACHE_LINE_SIZE, socket);
	t->scratch = rte_malloc_socket("dp_frag_scratch", DP_FRAG_SCRATCH, RTE_CACHE_LINE_SIZE,
	    socket);
	snprintf(name, sizeof(name), "ng_frag_%u", id);
	/* no per-lcore cache: one worker uses the pool, and 128 mbufs of 64 KiB are few */
	t->big = rte_pktmbuf_pool_create(name, DP_FRAG_BIG_MBUFS, 0, 0, DP_FRAG_BIG_ROOM, socket);
	if (t->slots == NULL || t->bufs == NULL || t->scratch == NULL || t->big == NULL) {
		dp_frags_free(t);
		rte_errno = ENOMEM;
		return NULL;
	}
	for (uint32_t i = 0; i < nb_slots; i++)
		t->slots[i].buf = t->bufs + (size_t)i * IPFRAG_BUF_SIZE;
	ipfrag_init(&t->table, t->slots, nb_slots, per_vm, timeout);
	return t;
}

void
dp_frags_free(struct dp_frags *t)
{
	if (t == NULL)
		return;
	rte_mempool_free(t->big);
	rte_free(t->scratch);
	rte_free(t->bufs);
	rte_free(t->slots);
	rte_free(t);
}

/* m's bytes, contiguous: in place if they are, else gathered in the scratch buffer. */
static const uint8_t *
frame_bytes(struct dp_frags *t, const struct rte_mbuf *m)
{
	if (rte_pktmbuf_pkt_len(m) > DP_FRAG_SCRATCH)
		return NULL;
	return rte_pktmbuf_read(m, 0, rte_pktmbuf_pkt_len(m), t->scratch);
}

/* A single-segment mbuf holding len bytes: from normal if they fit, else a big one. */
static struct rte_mbuf *
frame_alloc(struct dp_frags *t, size_t len)
{
	struct rte_mbuf *r;

	if (len <= (size_t)rte_pktmbuf_data_room_size(t->normal) - RTE_PKTMBUF_HEADROOM)
		return rte_pktmbuf_alloc(t->normal);
	if ((r = rte_pktmbuf_alloc(t->big)) == NULL)
		return NULL;
	/* IPFRAG_DATAGRAM_MAX fills the room past the headroom: the link header goes into it */
	if (len > rte_pktmbuf_tailroom(r)) {
		if (len > r->buf_len) {
			rte_pktmbuf_free(r);
			return NULL;
		}
		r->data_off = (uint16_t)(r->buf_len - len);
	}
	return r;
}

struct rte_mbuf *
dp_frag_add(struct dp_frags *t, struct rte_mbuf *m, uint16_t l3_off, uint16_t vm, uint64_t now,
    enum ipfrag_status *st)
{
	const uint8_t *frame = frame_bytes(t, m);
	struct ipfrag_out out;
	struct rte_mbuf *r;
	size_t len;
	char *p;

	if (frame == NULL || l3_off >= rte_pktmbuf_pkt_len(m)) {
		*st = IPFRAG_MALFORMED;
		return NULL;
	}
	*st = ipfrag_add(&t->table, frame, rte_pktmbuf_pkt_len(m), l3_off, vm, now, &out);
	if (*st != IPFRAG_COMPLETE)
		return NULL;
	len = (size_t)out.pre_len + out.ip_len;
	if ((r = frame_alloc(t, len)) == NULL)
		return NULL;
	if ((p = rte_pktmbuf_append(r, (uint16_t)len)) == NULL) {
		rte_pktmbuf_free(r);
		return NULL;
	}
	memcpy(p, out.ip - out.pre_len, len);
	r->port = m->port;
	return r;
}

uint32_t
dp_frag_age(struct dp_frags *t, uint64_t now, uint32_t budget, ipfrag_expired_fn *fn, void *arg)
{
	return ipfrag_age(&t->table, now, budget, fn, arg);
}

uint32_t
dp_frag_vm_count(const struct dp_frags *t, uint16_t vm)
{
	return ipfrag_owner_count(&t->table, vm);
}

int
dp_frag_split(struct dp_frags *t, struct rte_mbuf *m, uint16_t l3_off, uint16_t mtu,
    struct rte_mempool *pool, struct rte_mbuf **out, unsigned int max)
{
	const uint8_t *frame = frame_bytes(t, m);
	struct ipfrag_plan plan;
	unsigned int i;
	uint64_t in[2];
	int nb, rc;

	if (frame == NULL || l3_off >= rte_pktmbuf_pkt_len(m))
		return -EINVAL;
	/*
	 * RFC 7739 s5.1: an unpredictable ID, so no one off the path can forge fragments;
	 * from a keyed PRF (dp_hash_bytes()) of the table and a count, not rte_rand(), whose
	 * generator is linear: anyone who read enough IDs would know the next ones
	 */
	in[0] = t->id;
	in[1] = t->ids_drawn++;
	nb = ipfrag_cut_plan(frame + l3_off, rte_pktmbuf_pkt_len(m) - l3_off, mtu,
	    (uint32_t)dp_hash_bytes(in, sizeof(in)), &plan);
	if (nb < 0)
		return nb;
	if ((unsigned int)nb > max)
		return -ENOSPC;
	for (i = 0; i < (unsigned int)nb; i++) {
		size_t len = ipfrag_cut_len(&plan, i);
		struct rte_mbuf *f;
		uint8_t *p;

		if ((f = rte_pktmbuf_alloc(pool)) == NULL) {
			rc = -ENOMEM;
			goto fail;
		}
		out[i] = f;
		if (l3_off + len > rte_pktmbuf_tailroom(f) ||
		    (p = (uint8_t *)rte_pktmbuf_append(f, (uint16_t)(l3_off + len))) == NULL) {
			rc = -EMSGSIZE;
			i++;
			goto fail;
		}
		memcpy(p, frame, l3_off);
		ipfrag_cut_one(&plan, frame + l3_off, i, p + l3_off, len);
		f->port = m->port;
	}
	return nb;
fail:
	while (i > 0)
		rte_pktmbuf_free(out[--i]);
	return rc;
}

uint64_t
dp_frags_mem(uint32_t nb_slots)
{
	struct dp_frags *t = NULL;

	return dp_mem_alloc(sizeof(*t)) + dp_mem_alloc((uint64_t)nb_slots * sizeof(t->slots[0])) +
	    dp_mem_alloc((uint64_t)nb_slots * IPFRAG_BUF_SIZE) + dp_mem_alloc(DP_FRAG_SCRATCH) +
	    dp_mem_pool(DP_FRAG_BIG_MBUFS, DP_FRAG_BIG_ROOM, false);
}

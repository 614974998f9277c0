/*
 * IP fragments in the fast path: one reassembly table per worker (sni/ipfrag.h over
 * DPDK memory), and the cut of a reassembled datagram back into fragments for a port's
 * MTU. No locks; in the hot path nothing is allocated but mbufs from pools.
 */
#ifndef DP_FRAG_H
#define DP_FRAG_H

#include <stdint.h>

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "sni/ipfrag.h"

#define DP_FRAG_SLOTS_DEFAULT	64	/* datagrams in reassembly per worker */
#define DP_FRAG_PER_VM_DEFAULT	8	/* ... of which one VM may hold */
#define DP_FRAG_BIG_MBUFS	128	/* the worker's pool of 64 KiB mbufs */

struct dp_frags;

/*
 * A worker's table: nb_slots datagrams (each with an IPFRAG_BUF_SIZE buffer, from
 * rte_zmalloc_socket), per_vm of them per VM, freed timeout ticks (the unit of now: the
 * worker's seconds) after their first fragment. Completed datagrams go into an mbuf of
 * normal when they fit one, otherwise into the table's own pool of DP_FRAG_BIG_MBUFS
 * single-segment mbufs of 65535 bytes, named "ng_frag_<id>" (id: the worker's number,
 * unique per process). NULL and rte_errno on failure.
 */
struct dp_frags *dp_frags_create(unsigned int id, uint32_t nb_slots, uint32_t per_vm,
    uint64_t timeout, struct rte_mempool *normal, int socket);

/* Free t, its slots and its pool (every mbuf of the pool must be back). NULL is fine. */
void dp_frags_free(struct dp_frags *t);

/* The EAL memory dp_frags_create() takes for nb_slots datagrams (dp_mem.h). */
uint64_t dp_frags_mem(uint32_t nb_slots);

/*
 * Add fragment frame m (link header of l3_off bytes, at most IPFRAG_PRE_MAX, then the IP
 * packet; trailing padding is fine) for VM vm at time now. m is copied, never freed or
 * changed: the caller frees and counts it. *st is the ipfrag status (NOT_FRAGMENT if m is
 * none: the caller should not have called; MALFORMED also for an l3_off past the frame).
 *
 * Returns NULL unless m completed its datagram; then a new single-segment mbuf holding
 * the whole frame: the first fragment's (offset 0) l3_off bytes of link header, then the
 * reassembled datagram (see ipfrag_add). Its port is m's; no offload flags, no packet
 * type: checksums have not been looked at. It is from normal if it fits, else from the
 * big pool. NULL with *st == IPFRAG_COMPLETE: no mbuf was free; the datagram is lost.
 */
struct rte_mbuf *dp_frag_add(struct dp_frags *t, struct rte_mbuf *m, uint16_t l3_off,
    uint16_t vm, uint64_t now, enum ipfrag_status *st);

/*
 * Free datagrams not completed in time, looking at up to budget slots (round robin).
 * fn (may be NULL) is told each one's VM and fragment count. Returns how many.
 */
uint32_t dp_frag_age(struct dp_frags *t, uint64_t now, uint32_t budget, ipfrag_expired_fn *fn,
    void *arg);

/*
 * Cut frame m (link header of l3_off bytes, then a whole IP datagram longer than mtu) into
 * fragment frames of at most mtu IP bytes each, see ipfrag_cut_plan: IPv4 keeps the ID,
 * clears DF, copies only options with the copied flag past the first fragment; IPv6 gets
 * a fragment header with a random ID after the unfragmentable part. Each piece is a new
 * mbuf from pool with m's link header and port. m is not touched.
 *
 * Returns the number of pieces put in out[0 ..), or -EINVAL (not a whole datagram longer
 * than mtu, or l3_off past the frame), -EMSGSIZE (mtu too small for the headers, or a
 * piece larger than pool's mbufs), -ENOSPC (more than max pieces), -ENOMEM (pool empty).
 * On failure no piece is left: those made are freed here. The caller still frees m.
 */
int dp_frag_split(struct dp_frags *t, struct rte_mbuf *m, uint16_t l3_off, uint16_t mtu,
    struct rte_mempool *pool, struct rte_mbuf **out, unsigned int max);

/* Datagrams held for vm (in reassembly or killed and not yet timed out). */
uint32_t dp_frag_vm_count(const struct dp_frags *t, uint16_t vm);

#endif

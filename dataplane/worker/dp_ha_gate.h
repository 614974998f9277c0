/*
 * The HA pair's gate (namegate(8), HA PAIR): read once per received burst. A box whose
 * gate is shut (not its pair's master, a peer of higher priority forwarding, or held
 * after a stall) keeps its ports up and forwards nothing: the burst is dropped, counted
 * (ha_standby), and the uplink's stations in it noted for the takeover's announcements.
 * Before it, the pair's beacons are taken out of the burst for the main lcore, whatever
 * the gate says. A box without ha: is always open: one relaxed load and one test of a
 * flag per burst.
 */
#ifndef DP_HA_GATE_H
#define DP_HA_GATE_H

#include <stdatomic.h>
#include <stdbool.h>

#include <rte_branch_prediction.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "dp.h"
#include "dp_evt.h"

#define DP_HA_ETH_RARP	0x8035

/*
 * Frame m's source as a station to announce at a takeover, unless it is a group address
 * (no station sends from one): from the uplink any frame's; from the VM port only a RARP's,
 * what the peer announces there (dp_ha.c), so a standby knows the uplink's stations even
 * when all it is sent is the master's announcements.
 */
static inline void
dp_ha_learn(struct dp_worker *w, const struct rte_mbuf *m, unsigned int port)
{
	const uint8_t *e = rte_pktmbuf_mtod(m, const uint8_t *);
	struct dp_ha_seen *s = &w->ha_seen;
	uint16_t vlan = 0, type;
	uint64_t k;

	if (rte_pktmbuf_data_len(m) < 18 || (e[6] & 1) != 0)
		return;
	type = (uint16_t)(e[12] << 8 | e[13]);
	if (type == 0x8100) {
		vlan = (uint16_t)((e[14] << 8 | e[15]) & 0xfff);
		type = (uint16_t)(e[16] << 8 | e[17]);
	}
	if (port != DP_PORT_UPLINK && type != DP_HA_ETH_RARP)
		return;
	k = dp_ha_seen_key(e + 6, vlan);
	for (unsigned int i = 0; i < DP_HA_SEEN_MAX; i++)
		if (atomic_load_explicit(&s->mac[i], memory_order_relaxed) == k)
			return;
	atomic_store_explicit(&s->mac[s->next], k, memory_order_relaxed);
	s->next = (s->next + 1) % DP_HA_SEEN_MAX;
}

/*
 * Takes the pair's beacons (untagged, their ethertype) out of the burst onto the main
 * lcore's ring, without a lock (single producer), and compacts the rest: how many are
 * left. A beacon never reaches a VM or the uplink, whatever the gate says; one the ring
 * has no room for is freed. Both are counted (ha_beacon). A VM can write frames of that
 * type as fast as it likes: from the VM port a beacon takes only the ring's first half,
 * so a flood there never crowds out the peer's beacons from the uplink.
 */
static inline uint16_t
dp_ha_take_beacons(struct dp_worker *w, struct rte_mbuf **pkts, uint16_t n, unsigned int port)
{
	uint16_t k = 0, took = 0;

	for (uint16_t i = 0; i < n; i++) {
		const uint8_t *e = rte_pktmbuf_mtod(pkts[i], const uint8_t *);

		if (likely(rte_pktmbuf_data_len(pkts[i]) < 14 ||
		    (e[12] << 8 | e[13]) != DP_HA_ETH_BEACON)) {
			pkts[k++] = pkts[i];
			continue;
		}
		if ((port != DP_PORT_UPLINK && rte_ring_count(w->ha_in) >= DP_HA_RING / 2) ||
		    rte_ring_sp_enqueue(w->ha_in, pkts[i]) != 0)
			rte_pktmbuf_free(pkts[i]);
		took++;
	}
	if (took > 0) {
		w->drops[DP_DROP_HA_BEACON] += took;
		dp_main_wake(w->ctx);
	}
	return k;
}

/*
 * A gap of gap cycles since this worker's last poll (SIGSTOP, a VM's host paused, a
 * scheduler that forgot it): what it forwards now would go out on a table that missed
 * what the peer learned meanwhile. Shut at once, before this poll's frames, and counted
 * for the main lcore, which opens again once the peer's resync is in.
 */
static inline void
dp_ha_stalled(struct dp_worker *w, uint64_t gap)
{
	(void)gap;
	atomic_fetch_or_explicit(&w->ctx->ha_shut, DP_HA_SHUT_HELD, memory_order_seq_cst);
	atomic_fetch_add_explicit(&w->ha_stalls, 1, memory_order_relaxed);
	dp_main_wake(w->ctx);
}

/*
 * Whether the burst goes on; when not, it is freed and counted here. A master notes the
 * source of each uplink burst's first frame (a router's, mostly): its announcements then
 * name the stations it serves, and the peer learns them from those.
 */
static inline bool
dp_ha_gate(struct dp_worker *w, struct rte_mbuf **pkts, uint16_t n, unsigned int port)
{
	if (likely(atomic_load_explicit(&w->ctx->ha_shut, memory_order_relaxed) == 0)) {
		if (w->ctx->ha && port == DP_PORT_UPLINK)
			dp_ha_learn(w, pkts[0], port);
		return true;
	}
	for (uint16_t i = 0; i < n; i++)
		dp_ha_learn(w, pkts[i], port);
	w->drops[DP_DROP_HA_STANDBY] += n;
	rte_pktmbuf_free_bulk(pkts, n);
	return false;
}

#endif

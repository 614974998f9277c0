/*
 * The HA pair's gate (namegate(8), HA PAIR): read once per received burst. A box that is
 * not its pair's master keeps its ports up and forwards nothing: the burst is dropped,
 * counted (ha_standby), and the uplink's stations in it noted for the takeover's
 * announcements. A box without ha: is always open: one relaxed load and one test of a
 * flag per burst.
 */
#ifndef DP_HA_GATE_H
#define DP_HA_GATE_H

#include <stdbool.h>

#include <rte_branch_prediction.h>
#include <rte_mbuf.h>

#include "dp.h"

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
 * Whether the burst goes on; when not, it is freed and counted here. A master notes the
 * source of each uplink burst's first frame (a router's, mostly): its announcements then
 * name the stations it serves, and the peer learns them from those.
 */
static inline bool
dp_ha_gate(struct dp_worker *w, struct rte_mbuf **pkts, uint16_t n, unsigned int port)
{
	if (likely(!atomic_load_explicit(&w->ctx->ha_standby, memory_order_relaxed))) {
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

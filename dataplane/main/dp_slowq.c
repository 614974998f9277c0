/*
 * The main lcore's side of the exception path (dp_slowq.h).
 */
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "dp.h"
#include "dp_slowq.h"

/*
 * Bursts moved per queue and call at most: a flood through the exception path must not
 * keep the main lcore from the bindings; what is left wakes it again at once.
 */
#define DP_SLOWQ_BURSTS	8

/* Write n frames, all for one TAP, to its queue; what it does not take is freed, counted. */
static void
dp_slowq_tx(struct dp_ctx *ctx, unsigned int tap, struct rte_mbuf **pkts, uint16_t n)
{
	uint16_t sent = rte_eth_tx_burst(ctx->port[tap], 0, pkts, n);

	if (sent < n) {
		ctx->main_drops[DP_DROP_TX_FULL] += n - sent;
		rte_pktmbuf_free_bulk(&pkts[sent], n - sent);
	}
}

/* A worker's frames for the kernel, in order, each run of one TAP in one burst. */
static unsigned int
dp_slowq_from_worker(struct dp_ctx *ctx, struct dp_worker *w)
{
	struct rte_mbuf *pkts[DP_BURST];
	unsigned int n, total = 0;

	for (int b = 0; b < DP_SLOWQ_BURSTS &&
	    (n = rte_ring_sc_dequeue_burst(w->slow_out, (void **)pkts, DP_BURST, NULL)) > 0; b++) {
		unsigned int from = 0;

		for (unsigned int i = 1; i <= n; i++)
			if (i == n || pkts[i]->port != pkts[from]->port) {
				dp_slowq_tx(ctx, pkts[from]->port, &pkts[from], (uint16_t)(i - from));
				from = i;
			}
		total += n;
	}
	return total;
}

/*
 * The worker that sends m on: any may (each has its own queue on both ports); the same
 * for both directions between two MACs, so one conversation is never reordered.
 */
static struct dp_worker *
dp_slowq_worker(const struct dp_ctx *ctx, const struct rte_mbuf *m)
{
	const uint8_t *eth = rte_pktmbuf_mtod(m, const uint8_t *);
	unsigned int h = 0;

	if (ctx->nworkers == 1 || rte_pktmbuf_data_len(m) < 12)
		return ctx->workers[0];
	for (int i = 0; i < 6; i++)
		h += eth[i] ^ eth[6 + i];
	return ctx->workers[h % ctx->nworkers];
}

/* What the kernel let through tap, to a worker. */
static unsigned int
dp_slowq_from_tap(struct dp_ctx *ctx, unsigned int tap)
{
	struct rte_mbuf *pkts[DP_BURST];
	unsigned int total = 0;
	uint16_t n;

	for (int b = 0; b < DP_SLOWQ_BURSTS &&
	    (n = rte_eth_rx_burst(ctx->port[tap], 0, pkts, DP_BURST)) > 0; b++) {
		for (uint16_t i = 0; i < n; i++) {
			struct dp_worker *w = dp_slowq_worker(ctx, pkts[i]);

			pkts[i]->port = (uint16_t)tap;
			if (rte_ring_sp_enqueue(w->slow_back, pkts[i]) != 0) {
				ctx->main_drops[DP_DROP_SLOW_QUEUE_FULL]++;
				rte_pktmbuf_free(pkts[i]);
			}
		}
		total += n;
	}
	return total;
}

unsigned int
dp_slowq_run(struct dp_ctx *ctx)
{
	unsigned int n = 0;

	if (!ctx->slow_path)
		return 0;
	for (unsigned int i = 0; i < ctx->nworkers; i++)
		n += dp_slowq_from_worker(ctx, ctx->workers[i]);
	/* the kernel forwards a frame within the write: usually it is waiting here already */
	n += dp_slowq_from_tap(ctx, DP_PORT_SLOW_VM);
	n += dp_slowq_from_tap(ctx, DP_PORT_SLOW_UP);
	return n;
}

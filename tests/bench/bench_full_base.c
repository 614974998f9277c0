/*
 * bench_full's baselines on its two ring ports (issue 25): io moves the frames' pointers
 * and reads no byte (a sanity line only); csum is testpmd's csum engine and l3fwd its LPM
 * path (bench_base_csum.c, bench_base_l3fwd.c), each a burst from each port per poll, as
 * namegate's worker takes one. Their RESULT lines: namegate's rate over the baseline's,
 * the median of the per-round ratios (> 1: namegate is faster), with their spread.
 */
#include <stdio.h>

#include <rte_lcore.h>

#include "bench_full.h"

const char *
bench_drv_name(enum bench_drv drv)
{
	static const char *const names[BENCH_DRVS] = { "namegate", "io", "csum", "l3fwd" };

	return names[drv];
}

/* The csum driver always (it holds no memory); l3fwd's tables when a run uses them. */
int
bench_base_setup(struct bench *b)
{
	uint16_t ports[2] = { b->ctx.port[BENCH_VM], b->ctx.port[BENCH_UP] };
	struct bench_l3fwd_hosts h;

	bench_csum_init(&b->csum, ports);
	if (!b->baselines && b->instr_drv != BENCH_L3FWD)
		return 0;
	if (bench_l3fwd_hosts_load(&h, b->traffic) != 0 ||
	    (b->l3fwd = bench_l3fwd_new(ports, &h, (int)rte_socket_id())) == NULL)
		return -1;
	printf("INFO l3fwd routes to the VM port: %u IPv4 and %u IPv6 host routes\n", h.n4, h.n6);
	return 0;
}

void
bench_base_close(struct bench *b)
{
	bench_l3fwd_free(b->l3fwd);
	b->l3fwd = NULL;
}

/* One poll of baseline drv: a burst from each port, the VM port's first. Frames taken. */
unsigned int
bench_base_poll(struct bench *b, enum bench_drv drv)
{
	switch (drv) {
	case BENCH_CSUM:
		return bench_csum_burst(&b->csum, BENCH_VM) + bench_csum_burst(&b->csum, BENCH_UP);
	case BENCH_L3FWD:
		return bench_l3fwd_burst(b->l3fwd, BENCH_VM) + bench_l3fwd_burst(b->l3fwd, BENCH_UP);
	default:
		return bench_io_burst(b->ctx.port[BENCH_VM], b->ctx.port[BENCH_UP]) +
		    bench_io_burst(b->ctx.port[BENCH_UP], b->ctx.port[BENCH_VM]);
	}
}

/*
 * The csum and l3fwd lines of a mode: the baselines' rates (mode_csum_mpps) and
 * ratio_name_vs_csum, ratio_name_vs_l3fwd, each with its spread and goal.
 */
void
bench_base_report(const struct bench *b, const char *mode, const char *ratio_name,
    const struct bench_res *res)
{
	bool small = ratio_name[0] == 's';	/* small64's goal, or the mix's */

	printf("INFO csum driver parsed ip4=%lu ip6=%lu tcp=%lu udp=%lu other=%lu "
	    "rx_bad_ip=%lu rx_bad_l4=%lu sums_differed=%lu (all its passes)\n",
	    (unsigned long)b->csum.ip4, (unsigned long)b->csum.ip6, (unsigned long)b->csum.tcp,
	    (unsigned long)b->csum.udp, (unsigned long)b->csum.other,
	    (unsigned long)b->csum.rx_bad_ip, (unsigned long)b->csum.rx_bad_l4,
	    (unsigned long)b->csum.differed);
	for (enum bench_drv d = BENCH_CSUM; d <= BENCH_L3FWD; d++) {
		printf("RESULT %s_%s_mpps=%.3f\n", mode, bench_drv_name(d), res->rate[d] / 1e6);
		printf("RESULT %s_vs_%s=%.3f\n", ratio_name, bench_drv_name(d), res->ratio[d]);
		printf("INFO %s_vs_%s spread %.3f-%.3f over %u rounds (median of the per-round "
		    "ratios of namegate's rate over the baseline's: > 1 namegate is faster)\n",
		    ratio_name, bench_drv_name(d), res->lo[d], res->hi[d], res->rounds);
	}
	printf("INFO goal: %s_vs_csum >= %s (%s)\n", ratio_name, small ? "1.0" : "0.8",
	    res->ratio[BENCH_CSUM] >= (small ? 1.0 : 0.8) ? "met" : "not met");
	printf("INFO %s_vs_l3fwd has no goal of its own: reported beside it\n", ratio_name);
}

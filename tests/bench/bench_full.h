/*
 * bench_full: the harness the full-inspection benchmark's files share. One process holds
 * the real dataplane (dp_ctx_setup(), one worker) on two ring-PMD ports whose rings this
 * bench owns, so rx and tx are ring moves; a generator puts a trace's frames on the rx
 * rings, one dp_worker_poll() takes them, and only the cycles inside that call are timed.
 * The baselines move the same frames through the same ports in the same rounds: io
 * (rx_burst/tx_burst, no byte read), testpmd's csum engine and l3fwd's LPM path
 * (bench_base.h).
 */
#ifndef BENCH_FULL_H
#define BENCH_FULL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "bench_base.h"
#include "dp.h"

#define BENCH_BURST	32	/* frames a side gets per poll: what one rx_burst takes */
#define BENCH_VM	0	/* the side a frame enters on: the VM port */
#define BENCH_UP	1	/* the uplink */

enum bench_kind {
	BF_OTHER,
	BF_QUERY,		/* a DNS query from a VM over UDP */
	BF_ANSWER,		/* its answer from the resolver */
	BF_HELLO,		/* the first segment of a ClientHello */
};

/* Who moves a pass's frames: namegate's worker, or one of the baselines. */
enum bench_drv {
	BENCH_NG,
	BENCH_IO,
	BENCH_CSUM,
	BENCH_L3FWD,
	BENCH_DRVS
};

/* One frame of a trace, decoded once when the trace is built. */
struct bench_frame {
	uint8_t *data;
	uint16_t len;
	uint8_t side;		/* BENCH_VM or BENCH_UP */
	uint8_t kind;		/* enum bench_kind */
	bool rotate;		/* its VM-side port is ephemeral: a pass moves it */
	uint8_t proto;		/* 6 or 17 when rotate */
	uint16_t l4_off;
	uint32_t flow;		/* the connection, the same value both ways */
	uint32_t vm;		/* the VM side's MAC, its last four bytes */
	int32_t query;		/* BF_ANSWER: the index of its query, or -1 */
	uint32_t seq_step;	/* VM-side TCP: bytes its flow sends a pass (seq moves on) */
};

struct bench_trace {
	struct bench_frame *f;
	uint32_t n, cap;
	uint32_t first_timed;	/* frames before it run once, before the timed passes */
	uint32_t conns;		/* connections one timed pass opens (conn mode) */
};

/* What the bench set up: the dataplane and the rings behind its two ports. */
struct bench {
	struct dp_ctx ctx;
	struct pol_config *cfg;
	struct dp_worker *w;
	struct rte_ring *rx[2], *tx[2];	/* by side: what the port receives, what it sends */
	struct rte_mempool *pool;	/* the generator's frames: the ports' rx pool */
	const char *traffic;
	bool eal;			/* EAL is up: there is something to close */
	bool instr;			/* under callgrind: collect inside dp_worker_poll only */
	enum bench_drv instr_drv;	/* ... or inside this baseline's bursts (BENCH_INSTR) */
	bool baselines;			/* the rounds time csum and l3fwd too, not io only */
	struct bench_csum csum;
	struct bench_l3fwd *l3fwd;
	bool age_passes;		/* lifecycle: the sweep ages each pass's flows out */
	bool csum_offload;		/* frames arrive marked checksum-good, as from a NIC
					 * that verifies them (the ring PMD verifies nothing) */
	/* $BENCH_FLOWLOG: the flow log on, to /dev/null; the sweep writes its records */
	struct dp_flowlog_out *flowlog;
};

/* A pass's figures, from the loop and from what left the ports. */
struct bench_pass {
	uint64_t cycles, frames, polls;
	uint64_t queries_out, answers_in, hellos_out, syns_out, bind_evts;
	uint64_t answers_skipped;	/* their query was refused: no resolver would answer */
};

/* The rounds' medians by driver: rates, and namegate's rate over each per round. */
struct bench_res {
	double rate[BENCH_DRVS];
	double ratio[BENCH_DRVS];		/* [BENCH_NG] unused */
	double lo[BENCH_DRVS], hi[BENCH_DRVS];	/* the per-round ratios' spread */
	double rate_lo[BENCH_DRVS], rate_hi[BENCH_DRVS];	/* the rates' */
	unsigned int rounds;
};

/* bench_full.c */
int bench_open(struct bench *b, const char *yaml, size_t len, const char *mem_mb);
void bench_close(struct bench *b);
char *bench_config(const char *traffic, const char *policy, const char *resolvers,
    const char *dataplane, size_t *len);
int bench_vm0(const char *traffic, uint8_t mac[6], uint8_t ip4[4]);
int bench_hosts(const char *traffic, FILE *out);
int bench_resolvers(const struct bench_trace *t, char *out, size_t cap);
void bench_counters(const struct bench *b, const char *mode, FILE *out);
uint64_t bench_count(const struct bench *b, int family, unsigned int i);
double bench_rate(uint64_t n, uint64_t cycles);

/* bench_full_trace.c */
int bench_trace_pcap(struct bench_trace *t, const char *path, uint32_t max);
struct bench_frame *bench_trace_add(struct bench_trace *t, const uint8_t *d, size_t len);
void bench_trace_link_answers(struct bench_trace *t);
void bench_trace_free(struct bench_trace *t);

/* bench_full_synth.c */
int bench_synth_dns(struct bench_trace *t, const struct bench_frame *tmpl, const char *host,
    uint16_t qid, uint16_t port);
int bench_synth_tcp(struct bench_trace *t, const struct bench_frame *tmpl, bool reply,
    uint8_t flags, uint32_t seq, uint32_t ack);
int bench_synth_tcp_data(struct bench_trace *t, const struct bench_frame *tmpl, bool reply,
    uint8_t flags, uint32_t seq, uint32_t ack, size_t len);
int bench_bind_missing(struct bench_trace *t);
int bench_host_of(const struct bench_trace *t, uint32_t first, uint32_t flow, char *host,
    size_t cap);

/* bench_full_loop.c */
struct bench_loop;
struct bench_loop *bench_loop_new(struct bench *b, const struct bench_trace *t);
void bench_loop_free(struct bench_loop *l);
int bench_loop_pass(struct bench_loop *l, enum bench_drv drv, uint32_t from, uint32_t to,
    struct bench_pass *out);

/* bench_full_base.c: the baselines on the bench's ports */
int bench_base_setup(struct bench *b);
void bench_base_close(struct bench *b);
unsigned int bench_base_poll(struct bench *b, enum bench_drv drv);
const char *bench_drv_name(enum bench_drv drv);
void bench_base_report(const struct bench *b, const char *mode, const char *ratio_name,
    const struct bench_res *res);

/* bench_full_rounds.c */
double bench_median(double *v, unsigned int n);
int bench_rounds(struct bench *b, const struct bench_trace *t, const char *name,
    unsigned int rounds, struct bench_res *res, struct bench_pass *last);
void bench_pass_print(const char *mode, const struct bench_trace *t, const struct bench_pass *p);

/* bench_full_sustain.c: the capacity mode's full table under new connections */
struct bench_sustain {
	uint64_t clock;			/* the worker's second: where it starts, where it ended */
	uint64_t admitted, offered;
	double seconds;
	double occ_start, occ_end, occ_min;	/* the flow table's flows over its room */
};
void bench_clock_set(struct bench *b, uint64_t s);
int bench_sustain(struct bench *b, const struct bench_trace *t, unsigned int seconds,
    uint32_t group, struct bench_sustain *r);
unsigned int bench_age_sweep(struct bench *b, unsigned int jump, bool collect, double *ns);

/* bench_full_capacity.c's fill, which bench_full_cores.c uses too */
int bench_cap_from_vm0(const struct bench *b);
int bench_cap_syn_trace(struct bench_trace *t, uint32_t n, uint16_t sport, uint32_t first,
    uint32_t step);
int bench_cap_fill(struct bench *b, const struct bench_trace *t, uint32_t from, uint32_t to,
    uint64_t clock, const char *what, struct bench_pass *p);

/* bench_full_modes.c, bench_full_capacity.c, bench_full_cores.c */
int bench_mix_trace(struct bench *b, struct bench_trace *t, char *resolvers, size_t cap);
int bench_start(struct bench *b, const char *policy, const char *resolvers,
    const char *dataplane, const char *mem_mb);
int bench_mode_mix(struct bench *b);
int bench_mode_small64(struct bench *b);
int bench_mode_conn(struct bench *b);
int bench_mode_lifecycle(struct bench *b);
int bench_mode_capacity(struct bench *b);
int bench_mode_cores(struct bench *b);

#endif

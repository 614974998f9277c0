/*
 * bench_full's measurement: a warm-up pass, then rounds of a namegate pass and an io pass
 * over the same frames, interleaved so that both see the same moment of a machine that
 * drifts 1.3-1.7x between minutes; medians of the rates and of the per-round ratios.
 */
#include <stdio.h>
#include <stdlib.h>

#include "bench_full.h"

#define BENCH_CLOSED_IDLE	11	/* seconds: past a closed connection's timeout (10 s) */

static int
bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double
bench_median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(v[0]), bench_cmp_double);
	return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* What one namegate pass offered and what came out of it, and the worker's counters. */
void
bench_pass_print(const char *mode, const struct bench_trace *t, const struct bench_pass *p)
{
	unsigned long hellos = 0, queries = 0, answers = 0;

	for (uint32_t i = t->first_timed; i < t->n; i++) {
		hellos += t->f[i].kind == BF_HELLO;
		queries += t->f[i].kind == BF_QUERY;
		answers += t->f[i].kind == BF_ANSWER;
	}
	printf("PASS %s frames=%lu polls=%lu hellos_offered=%lu hellos_allowed=%lu "
	    "syns_forwarded=%lu dns_queries_offered=%lu dns_queries_forwarded=%lu "
	    "dns_answers_offered=%lu dns_answers_accepted=%lu answers_not_sent=%lu "
	    "binding_events=%lu\n", mode, (unsigned long)p->frames, (unsigned long)p->polls,
	    hellos, (unsigned long)p->hellos_out, (unsigned long)p->syns_out, queries,
	    (unsigned long)p->queries_out, answers, (unsigned long)p->answers_in,
	    (unsigned long)p->answers_skipped, (unsigned long)p->bind_evts);
}

/*
 * One untimed pass of the whole trace (its setup frames and a warm-up), then rounds of a
 * namegate pass and an io pass over its timed part, interleaved so that both see the same
 * moment of the machine. Returns the medians: namegate and io frames per second of poll
 * time, and their per-round ratio; *last the last namegate pass. Under BENCH_INSTR one
 * namegate pass after the warm-up, collected, printed as INSTR. With b->age_passes each
 * namegate pass's connections are aged out after it by one sweep, untimed (so passes do
 * not pile closed flows up), and under BENCH_INSTR counted apart: INSTR_AGE.
 */
int
bench_rounds(struct bench *b, const struct bench_trace *t, const char *name,
    unsigned int rounds, double rates[3], struct bench_pass *last)
{
	struct bench_loop *l = bench_loop_new(b, t);
	const char *env = getenv("BENCH_ROUNDS");	/* fewer or more, to look closer */
	double *ng, *io, *ratio, ns;
	struct bench_pass p, warm;
	bool instr = b->instr;
	int rc = -1;

	if (env != NULL && atoi(env) >= 0)
		rounds = (unsigned int)atoi(env);
	ng = calloc(rounds + 1, sizeof(double));
	io = calloc(rounds + 1, sizeof(double));
	ratio = calloc(rounds + 1, sizeof(double));
	if (l == NULL || ng == NULL || io == NULL || ratio == NULL)
		goto out;
	b->instr = false;
	if (bench_loop_pass(l, false, 0, t->n, &warm) != 0)
		goto out;
	if (b->age_passes)
		printf("AGED %s flows=%u\n", name, bench_age_sweep(b, BENCH_CLOSED_IDLE, false, &ns));
	*last = warm;
	printf("WARM %s frames=%lu hellos_allowed=%lu syns_forwarded=%lu dns_answers_accepted=%lu "
	    "binding_events=%lu\n", name, (unsigned long)warm.frames, (unsigned long)warm.hellos_out,
	    (unsigned long)warm.syns_out, (unsigned long)warm.answers_in,
	    (unsigned long)warm.bind_evts);
	if (instr) {
		b->instr = true;
		if (bench_loop_pass(l, false, t->first_timed, t->n, last) != 0)
			goto out;
		printf("INSTR %s frames=%lu conns=%u hellos=%lu\n", name,
		    (unsigned long)last->frames, t->conns, (unsigned long)last->hellos_out);
		if (b->age_passes)
			printf("INSTR_AGE %s aged=%u\n", name,
			    bench_age_sweep(b, BENCH_CLOSED_IDLE, true, &ns));
		rc = 0;
		goto out;
	}
	for (unsigned int r = 0; r < rounds; r++) {
		if (bench_loop_pass(l, false, t->first_timed, t->n, last) != 0)
			goto out;
		if (b->age_passes)
			bench_age_sweep(b, BENCH_CLOSED_IDLE, false, &ns);
		if (bench_loop_pass(l, true, t->first_timed, t->n, &p) != 0)
			goto out;
		ng[r] = bench_rate(last->frames, last->cycles);
		io[r] = bench_rate(p.frames, p.cycles);
		ratio[r] = io[r] > 0 ? ng[r] / io[r] : 0;
		printf("ROUND %s %u namegate_mpps=%.3f io_mpps=%.3f ratio=%.3f frames=%lu/%lu\n",
		    name, r, ng[r] / 1e6, io[r] / 1e6, ratio[r], (unsigned long)last->frames,
		    (unsigned long)p.frames);
	}
	rates[0] = bench_median(ng, rounds);
	rates[1] = bench_median(io, rounds);
	rates[2] = bench_median(ratio, rounds);
	rc = 0;
out:
	free(ng);
	free(io);
	free(ratio);
	bench_loop_free(l);
	return rc;
}

/*
 * bench_full's measurement: a warm-up pass, then rounds of a namegate pass and a pass of
 * each baseline over the same frames, interleaved so that all see the same moment of a
 * machine that drifts 1.3-1.7x between minutes; medians of the rates and of the per-round
 * ratios, and their spread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef BENCH_HAVE_CALLGRIND
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_START_INSTRUMENTATION
#endif

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

/* v's n values: their median into *med, lowest and highest into *lo, *hi (v is sorted). */
static void
bench_spread(double *v, unsigned int n, double *med, double *lo, double *hi)
{
	*med = bench_median(v, n);
	*lo = n > 0 ? v[0] : 0;
	*hi = n > 0 ? v[n - 1] : 0;
}

/*
 * One untimed pass of the whole trace (its setup frames and a warm-up), then rounds of a
 * namegate pass and a pass of each baseline (io; with b->baselines csum and l3fwd too)
 * over its timed part, interleaved so that all see the same moment of the machine. *res:
 * the medians of the rates (frames per second of poll time) and of the per-round ratios of
 * namegate's rate over each baseline's, with their spread; *last the last namegate pass.
 * Under BENCH_INSTR one pass after the warm-up, collected, printed as INSTR: namegate's,
 * or b->instr_drv's. With b->age_passes each namegate pass's connections are aged out
 * after it by one sweep, untimed (so passes do not pile closed flows up), and under
 * BENCH_INSTR counted apart: INSTR_AGE.
 */
int
bench_rounds(struct bench *b, const struct bench_trace *t, const char *name,
    unsigned int rounds, struct bench_res *res, struct bench_pass *last)
{
	struct bench_loop *l = bench_loop_new(b, t);
	const char *env = getenv("BENCH_ROUNDS");	/* fewer or more, to look closer */
	enum bench_drv ndrv = b->baselines ? BENCH_DRVS : BENCH_CSUM;
	double *rate[BENCH_DRVS] = { NULL }, *ratio[BENCH_DRVS] = { NULL }, ns;
	struct bench_pass p, warm;
	bool instr = b->instr;
	double load[1];
	int rc = -1;

	if (env != NULL && atoi(env) >= 0)
		rounds = (unsigned int)atoi(env);
	/* how busy the machine was: on a shared one, what the spread comes from */
	if (getloadavg(load, 1) == 1)
		printf("INFO %s load average at the start of the rounds: %.2f on %u CPUs\n", name,
		    load[0], (unsigned int)sysconf(_SC_NPROCESSORS_ONLN));
	memset(res, 0, sizeof(*res));
	res->rounds = rounds;
	for (int d = 0; d < BENCH_DRVS; d++)
		if ((rate[d] = calloc(rounds + 1, sizeof(double))) == NULL ||
		    (ratio[d] = calloc(rounds + 1, sizeof(double))) == NULL)
			goto out;
	if (l == NULL)
		goto out;
	b->instr = false;
	if (bench_loop_pass(l, BENCH_NG, 0, t->n, &warm) != 0)
		goto out;
	if (b->age_passes)
		printf("AGED %s flows=%u\n", name, bench_age_sweep(b, BENCH_CLOSED_IDLE, false, &ns));
	*last = warm;
	printf("WARM %s frames=%lu hellos_allowed=%lu syns_forwarded=%lu dns_answers_accepted=%lu "
	    "binding_events=%lu\n", name, (unsigned long)warm.frames, (unsigned long)warm.hellos_out,
	    (unsigned long)warm.syns_out, (unsigned long)warm.answers_in,
	    (unsigned long)warm.bind_evts);
	if (instr) {
		/*
		 * callgrind counts calls while it collects no cost, and no request zeroes the
		 * counts: bench_instr.py starts it with instrumentation off, so that a call count
		 * (its DNS messages) holds this pass's calls and not the warm pass's too.
		 */
		CALLGRIND_START_INSTRUMENTATION;
		b->instr = true;
		if (bench_loop_pass(l, b->instr_drv, t->first_timed, t->n,
		    b->instr_drv == BENCH_NG ? last : &p) != 0)
			goto out;
		if (b->instr_drv != BENCH_NG)
			*last = p;
		printf("INSTR %s frames=%lu conns=%u hellos=%lu driver=%s\n", name,
		    (unsigned long)last->frames, t->conns, (unsigned long)last->hellos_out,
		    bench_drv_name(b->instr_drv));
		if (b->age_passes && b->instr_drv == BENCH_NG)
			printf("INSTR_AGE %s aged=%u\n", name,
			    bench_age_sweep(b, BENCH_CLOSED_IDLE, true, &ns));
		rc = 0;
		goto out;
	}
	for (unsigned int r = 0; r < rounds; r++) {
		if (bench_loop_pass(l, BENCH_NG, t->first_timed, t->n, last) != 0)
			goto out;
		if (b->age_passes)
			bench_age_sweep(b, BENCH_CLOSED_IDLE, false, &ns);
		rate[BENCH_NG][r] = bench_rate(last->frames, last->cycles);
		printf("ROUND %s %u namegate_mpps=%.3f", name, r, rate[BENCH_NG][r] / 1e6);
		for (enum bench_drv d = BENCH_IO; d < ndrv; d++) {
			if (bench_loop_pass(l, d, t->first_timed, t->n, &p) != 0)
				goto out;
			rate[d][r] = bench_rate(p.frames, p.cycles);
			ratio[d][r] = rate[d][r] > 0 ? rate[BENCH_NG][r] / rate[d][r] : 0;
			printf(" %s_mpps=%.3f vs_%s=%.3f", bench_drv_name(d), rate[d][r] / 1e6,
			    bench_drv_name(d), ratio[d][r]);
		}
		printf(" frames=%lu/%lu\n", (unsigned long)last->frames, (unsigned long)p.frames);
	}
	for (enum bench_drv d = BENCH_NG; d < ndrv; d++) {
		bench_spread(rate[d], rounds, &res->rate[d], &res->rate_lo[d], &res->rate_hi[d]);
		bench_spread(ratio[d], rounds, &res->ratio[d], &res->lo[d], &res->hi[d]);
	}
	rc = 0;
out:
	for (int d = 0; d < BENCH_DRVS; d++) {
		free(rate[d]);
		free(ratio[d]);
	}
	bench_loop_free(l);
	return rc;
}

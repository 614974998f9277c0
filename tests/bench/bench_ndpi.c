/*
 * Connection-rate baseline: nDPI 4.2 (Debian's libndpi) extracting the SNI of every flow of
 * hello.pcap, the figure namegate's new-connection rate is divided by (conn_vs_ndpi, see
 * bench_conn.py).
 *
 * Every flow gets a fresh flow struct, allocated and zeroed the way nDPI's own ndpiReader
 * does (ndpi_flow_malloc(SIZEOF_FLOW_STRUCT) + memset, released with ndpi_flow_free), and
 * its frames, from the IP header on, go to ndpi_detection_process_packet until
 * host_server_name, where 4.2 keeps a hello's SNI, is filled. Frames are preloaded; only
 * the timed passes are timed. A first, untimed pass checks every answer against the SNI
 * namegate's own reassembler and parser read from the same frames.
 *
 * ndpi_conn_per_s is the median of the per-pass rates: the statistic bench_full reports
 * for namegate (the median of its rounds), so bench_conn.py divides like by like.
 *
 * With BENCH_INSTR=N (bench_instr.py runs it under callgrind --collect-atstart=no): after
 * the checking pass, one pass over the first N flows (bench_full conn's N connections are
 * the same hellos), collected only around each flow's handling, printed as INSTR.
 *
 * Prints RESULT lines; never fails on speed, only when the capture or nDPI can't be used.
 * Usage: bench_ndpi HELLO_PCAP [PASSES]
 */
#include <ndpi_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#ifdef BENCH_HAVE_CALLGRIND
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_TOGGLE_COLLECT
#endif

#include "bench_input.h"
#include "hello_flows.h"

#define PASSES_DEFAULT		20
#define MISMATCHES_SHOWN	5
/* host_server_name keeps the last sizeof - 1 bytes of a longer name (ndpi_hostname_sni_set) */
#define NDPI_NAME_MAX		(sizeof(((struct ndpi_flow_struct *)0)->host_server_name) - 1)

struct agreement {
	size_t found;		/* flows where nDPI gave a name */
	size_t mismatch;	/* flows where nDPI's answer (a name, or none) differs from ours */
	size_t truncated;	/* of those: our name cut to the last NDPI_NAME_MAX bytes */
	size_t missed;		/* of those: we found a name, nDPI none */
	size_t ours;		/* flows where namegate's parser found a name */
};

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static struct ndpi_detection_module_struct *
bench_ndpi_module(void)
{
	struct ndpi_detection_module_struct *mod;
	NDPI_PROTOCOL_BITMASK all;

	if ((mod = ndpi_init_detection_module(ndpi_no_prefs)) == NULL)
		return NULL;
	/* Every dissector, as ndpiReader enables them: what a user of the library gets. */
	NDPI_BITMASK_SET_ALL(all);
	ndpi_set_protocol_detection_bitmask2(mod, &all);
	ndpi_finalize_initialization(mod);
	return mod;
}

/*
 * One connection as an nDPI user handles it: a zeroed flow, its packets until the SNI is
 * known. Returns the flow for the caller to read and ndpi_flow_free, or NULL.
 */
static struct ndpi_flow_struct *
bench_ndpi_flow(struct ndpi_detection_module_struct *mod, const struct hello_flows *hf,
    const struct hello_flow *fl)
{
	struct ndpi_flow_struct *f;

	if ((f = ndpi_flow_malloc(SIZEOF_FLOW_STRUCT)) == NULL)
		return NULL;
	memset(f, 0, SIZEOF_FLOW_STRUCT);
	for (uint32_t i = 0; i < fl->nb_frames && f->host_server_name[0] == '\0'; i++) {
		const struct hello_frame *fr = &hf->frames[fl->first + i];

		ndpi_detection_process_packet(mod, f, fr->l3, fr->l3_len, fr->ts_ms);
	}
	return f;
}

/* DNS names compare without case (RFC 4343); nDPI lower-cases what it keeps. */
static void
agreement_add(struct agreement *a, const struct hello_flow *fl, const char *name, size_t i)
{
	bool ours = fl->st == SNI_FOUND, theirs = name[0] != '\0';

	a->ours += ours;
	a->found += theirs;
	if (ours && theirs && strcasecmp(name, fl->sni) == 0)
		return;
	if (!ours && !theirs)
		return;
	a->mismatch++;
	if (ours && !theirs)
		a->missed++;
	else if (ours && fl->sni_len > NDPI_NAME_MAX &&
	    strcasecmp(name, fl->sni + fl->sni_len - NDPI_NAME_MAX) == 0)
		a->truncated++;
	if (a->mismatch <= MISMATCHES_SHOWN)
		fprintf(stderr, "bench_ndpi: flow %zu: namegate %s \"%s\", nDPI \"%s\"\n", i,
		    sni_status_str(fl->st), ours ? fl->sni : "", name);
}

static int
verify(struct ndpi_detection_module_struct *mod, const struct hello_flows *hf,
    struct agreement *a)
{
	*a = (struct agreement){ 0 };
	for (size_t i = 0; i < hf->nb_flows; i++) {
		struct ndpi_flow_struct *f = bench_ndpi_flow(mod, hf, &hf->flows[i]);

		if (f == NULL)
			return -1;
		agreement_add(a, &hf->flows[i], f->host_server_name, i);
		ndpi_flow_free(f);
	}
	return 0;
}

/*
 * One pass over the first n flows; returns how many gave a name, or -1. With instr,
 * callgrind collects only inside each flow's handling (its allocation and release too).
 */
static long
pass(struct ndpi_detection_module_struct *mod, const struct hello_flows *hf, size_t n,
    bool instr)
{
	long found = 0;

	for (size_t i = 0; i < n; i++) {
		struct ndpi_flow_struct *f;

		if (instr)
			CALLGRIND_TOGGLE_COLLECT;
		f = bench_ndpi_flow(mod, hf, &hf->flows[i]);
		if (f != NULL) {
			found += f->host_server_name[0] != '\0';
			ndpi_flow_free(f);
		}
		if (instr)
			CALLGRIND_TOGGLE_COLLECT;
		if (f == NULL)
			return -1;
	}
	return found;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of n rates (sorts them). */
static double
median(double *v, long n)
{
	qsort(v, (size_t)n, sizeof(v[0]), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* BENCH_INSTR=N: the flows to collect over, or 0. */
static size_t
instr_flows(size_t nb_flows)
{
	const char *env = getenv("BENCH_INSTR");
	long n = env != NULL ? strtol(env, NULL, 10) : 0;

	return n <= 0 ? 0 : (size_t)n < nb_flows ? (size_t)n : nb_flows;
}

int
main(int argc, char **argv)
{
	struct ndpi_detection_module_struct *mod = NULL;
	struct hello_flows hf = { 0 };
	struct agreement a;
	long passes = PASSES_DEFAULT, found;
	double *rates = NULL, t0;
	bool steady = true;
	size_t instr;
	int rc = 1;

	if (argc < 2 || argc > 3 || (argc == 3 && (passes = strtol(argv[2], NULL, 10)) < 1)) {
		fprintf(stderr, "usage: bench_ndpi HELLO_PCAP [PASSES]\n");
		return 2;
	}
	if (bench_input_missing("bench_ndpi", argv[1]) || hello_flows_load(argv[1], &hf) != 0)
		goto out;
	if ((mod = bench_ndpi_module()) == NULL) {
		fprintf(stderr, "bench_ndpi: ndpi_init_detection_module failed\n");
		goto out;
	}
	if (verify(mod, &hf, &a) != 0)
		goto oom;
	if ((instr = instr_flows(hf.nb_flows)) > 0) {
		if (pass(mod, &hf, instr, true) < 0)
			goto oom;
		printf("INSTR ndpi flows=%zu\n", instr);
		rc = 0;
		goto out;
	}
	if ((rates = calloc((size_t)passes, sizeof(*rates))) == NULL)
		goto oom;
	for (long p = 0; p < passes; p++) {
		t0 = now_s();
		if ((found = pass(mod, &hf, hf.nb_flows, false)) < 0)
			goto oom;
		rates[p] = (double)hf.nb_flows / (now_s() - t0);
		steady &= (size_t)found == a.found;
	}
	if (!steady)
		fprintf(stderr, "bench_ndpi: a timed pass found another number of names than %zu\n",
		    a.found);
	printf("RESULT ndpi_version=%s\n", ndpi_revision());
	printf("RESULT ndpi_flows=%zu\n", hf.nb_flows);
	printf("RESULT ndpi_frames=%zu\n", hf.nb_frames);
	printf("RESULT ndpi_passes=%ld\n", passes);
	printf("RESULT ndpi_flow_struct_bytes=%zu\n", SIZEOF_FLOW_STRUCT);
	printf("RESULT namegate_sni_found=%zu\n", a.ours);
	printf("RESULT ndpi_sni_found=%zu\n", a.found);
	printf("RESULT ndpi_sni_mismatch=%zu\n", a.mismatch);
	printf("RESULT ndpi_sni_missed=%zu\n", a.missed);
	printf("RESULT ndpi_sni_truncated=%zu\n", a.truncated);
	printf("RESULT ndpi_conn_per_s=%.0f\n", median(rates, passes));
	rc = steady ? 0 : 1;
	goto out;
oom:
	fprintf(stderr, "bench_ndpi: out of memory\n");
out:
	free(rates);
	if (mod != NULL)
		ndpi_exit_detection_module(mod);
	hello_flows_free(&hf);
	return rc;
}

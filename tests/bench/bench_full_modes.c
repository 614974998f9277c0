/*
 * bench_full's traffic modes: how each trace is built from its capture, the config it
 * runs under, and the RESULT lines it prints (see bench_full.c for what each means).
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "api/dp_counters.h"
#include "bench_full.h"
#include "bench_input.h"
#include "sni/pkt.h"
#include "sni/tls.h"

#define BENCH_ROUNDS		15
#define BENCH_ROUNDS_BASE	31	/* with csum and l3fwd: their passes are short (l3fwd's
					 * 1 ms), so a neighbour's time slice is more of a pass */
#define BENCH_INSTR_FRAMES	20000	/* mix frames under callgrind */
#define BENCH_INSTR_CONNS	1000	/* conn-mode connections under callgrind */
#define BENCH_WAVE		16	/* connections whose SYNs go out together */
#define BENCH_CONNS_MAX		8192

/* The resolvers the trace's queries go to, as quoted YAML list entries. */
int
bench_resolvers(const struct bench_trace *t, char *out, size_t cap)
{
	uint8_t seen[16][16];
	unsigned int n = 0;
	size_t used = 0;

	out[0] = '\0';
	for (uint32_t i = 0; i < t->n && n < 16; i++) {
		const struct bench_frame *f = &t->f[i];
		char text[INET6_ADDRSTRLEN];
		unsigned int k;
		struct pkt p;

		if (f->kind != BF_QUERY || pkt_decode(f->data, f->len, &p) != PKT_OK)
			continue;
		for (k = 0; k < n && memcmp(seen[k], p.dst, 16) != 0; k++)
			;
		if (k < n)
			continue;
		memcpy(seen[n++], p.dst, 16);
		inet_ntop(p.family == 4 ? AF_INET : AF_INET6, p.dst, text, sizeof(text));
		used += (size_t)snprintf(out + used, cap - used, "%s\"%s\"", n > 1 ? ", " : "", text);
		if (used >= cap)
			return -1;
	}
	return (int)n;
}

/* Set up the dataplane under bench_config(policy, resolvers, dataplane), -m mem_mb. */
int
bench_start(struct bench *b, const char *policy, const char *resolvers, const char *dataplane,
    const char *mem_mb)
{
	size_t len;
	char *yaml = bench_config(b->traffic, policy, resolvers, dataplane, &len);
	int rc;

	if (yaml == NULL)
		return -1;
	rc = bench_open(b, yaml, len, mem_mb);
	free(yaml);
	return rc;
}

/* path = the traffic directory's file, which must be there. */
static int
bench_path(char *path, size_t cap, const struct bench *b, const char *file)
{
	if (snprintf(path, cap, "%s/%s", b->traffic, file) >= (int)cap)
		return -1;
	return bench_input_missing("bench_full", path) ? -1 : 0;
}

/*
 * Set up under bench_config(policy, resolvers, dataplane), run the rounds over t, and print
 * what the last pass did and the worker's counters. Then, unless under callgrind, the
 * RESULT lines names[0..2] = namegate, io and their ratio, the rates times scale; with
 * b->baselines the csum and l3fwd lines too, ratio_name_vs_csum and so on.
 */
static int
bench_measure(struct bench *b, const struct bench_trace *t, const char *mode,
    const char *const cfg[3], const char *const names[3], double scale,
    const char *ratio_name)
{
	struct bench_pass last = { 0 };
	struct bench_res res;

	if (bench_start(b, cfg[0], cfg[1], cfg[2], "1024") != 0 || bench_base_setup(b) != 0 ||
	    bench_rounds(b, t, mode, b->baselines ? BENCH_ROUNDS_BASE : BENCH_ROUNDS, &res,
	    &last) != 0)
		return -1;
	bench_pass_print(mode, t, &last);
	bench_counters(b, mode, stdout);
	if (b->instr)
		return 0;
	printf(scale < 1e-3 ? "RESULT %s=%.3f\n" : "RESULT %s=%.0f\n", names[0],
	    res.rate[BENCH_NG] * scale);
	printf(scale < 1e-3 ? "RESULT %s=%.3f\n" : "RESULT %s=%.0f\n", names[1],
	    res.rate[BENCH_IO] * scale);
	printf("RESULT %s=%.3f\n", names[2], res.ratio[BENCH_IO]);
	printf("INFO %s spread %.3f-%.3f over %u rounds: a sanity line (io reads no byte)\n",
	    names[2], res.lo[BENCH_IO], res.hi[BENCH_IO], res.rounds);
	if (b->baselines)
		bench_base_report(b, mode, ratio_name, &res);
	return 0;
}

/* A mode's end, however it went: the bench closed, its traces (raw may be NULL) freed. */
static int
bench_mode_end(struct bench *b, struct bench_trace *raw, struct bench_trace *t, int rc)
{
	bench_close(b);
	if (raw != NULL)
		bench_trace_free(raw);
	bench_trace_free(t);
	return rc;
}

/* mix.pcap as bench_full mix runs it, and its resolvers as YAML list entries. */
int
bench_mix_trace(struct bench *b, struct bench_trace *t, char *resolvers, size_t cap)
{
	char path[4096];
	int added, nres;

	if (bench_path(path, sizeof(path), b, "mix.pcap") != 0 ||
	    bench_trace_pcap(t, path, b->instr ? BENCH_INSTR_FRAMES : 0) < 0 ||
	    (added = bench_bind_missing(t)) < 0 ||
	    (nres = bench_resolvers(t, resolvers, cap)) <= 0)
		return -1;
	printf("INFO mix frames=%u lookups_added=%d (connections whose VM did not resolve "
	    "their host earlier in the capture) resolvers=%d [%s]\n", t->n, added, nres, resolvers);
	return 0;
}

int
bench_mode_mix(struct bench *b)
{
	static const char *const names[3] = { "mix_full_mpps", "mix_io_mpps", "mix_full_vs_io" };
	const char *cfg[3] = { NULL, NULL, "  max_flows: 1048576\n  max_flows_per_vm: 1048576\n"
	    "  max_bindings: 262144\n" };
	struct bench_trace t = { 0 };
	char resolvers[1024];
	int rc = -1;

	if (bench_mix_trace(b, &t, resolvers, sizeof(resolvers)) != 0)
		goto out;
	cfg[1] = resolvers;
	b->baselines = true;
	if (bench_measure(b, &t, "mix", cfg, names, 1e-6, "mix_full") != 0)
		goto out;
	rc = 0;
out:
	return bench_mode_end(b, NULL, &t, rc);
}

/*
 * small64's flows as established ones: a handshake per flow (run once, untimed), then its
 * data frames, each pass's sequence numbers after the last pass's.
 */
static int
bench_small64_trace(struct bench_trace *t, const struct bench_trace *raw)
{
	uint32_t *flows = calloc(raw->n, sizeof(*flows)), *bytes = calloc(raw->n, sizeof(*bytes));
	uint32_t nflows = 0, k;
	int rc = -1;

	if (flows == NULL || bytes == NULL)
		goto out;
	for (uint32_t i = 0; i < raw->n; i++) {
		const struct bench_frame *f = &raw->f[i];
		struct pkt p;

		if (pkt_decode(f->data, f->len, &p) != PKT_OK || p.proto != PKT_PROTO_TCP)
			goto out;
		for (k = 0; k < nflows && flows[k] != f->flow; k++)
			;
		if (k == nflows) {
			flows[nflows++] = f->flow;
			if (bench_synth_tcp(t, f, false, PKT_TCP_SYN, p.seq - 1, 0) != 0 ||
			    bench_synth_tcp(t, f, true, PKT_TCP_SYN | PKT_TCP_ACK, p.ack - 1,
			    p.seq) != 0 ||
			    bench_synth_tcp(t, f, false, PKT_TCP_ACK, p.seq, p.ack) != 0)
				goto out;
		}
		bytes[k] += (uint32_t)p.payload_len;
	}
	t->first_timed = t->n;
	for (uint32_t i = 0; i < raw->n; i++) {
		struct bench_frame *f = bench_trace_add(t, raw->f[i].data, raw->f[i].len);

		if (f == NULL)
			goto out;
		for (k = 0; flows[k] != f->flow; k++)
			;
		f->rotate = false;	/* the same flows every pass: they stay established */
		f->seq_step = bytes[k];
	}
	for (uint32_t i = 0; i < t->first_timed; i++)
		t->f[i].rotate = false;
	printf("INFO small64 flows=%u frames=%u\n", nflows, raw->n);
	rc = 0;
out:
	free(flows);
	free(bytes);
	return rc;
}

int
bench_mode_small64(struct bench *b)
{
	static const char *const names[3] = { "small64_mpps", "small64_io_mpps", "small64_vs_io" };
	/* admitted by address: established flows are the common case, not their opening */
	static const char *const cfg[3] = { "\"0.0.0.0/1\", \"128.0.0.0/1\"", "\"1.1.1.1\"",
	    "  max_flows: 65536\n  max_flows_per_vm: 65536\n  max_bindings: 65536\n" };
	struct bench_trace raw = { 0 }, t = { 0 };
	char path[4096];
	int rc = -1;

	if (bench_path(path, sizeof(path), b, "small64.pcap") != 0 ||
	    bench_trace_pcap(&raw, path, b->instr ? BENCH_INSTR_FRAMES : 0) < 0 ||
	    bench_small64_trace(&t, &raw) != 0)
		goto out;
	b->baselines = true;
	if (bench_measure(b, &t, "small64", cfg, names, 1e-6, "small64") != 0)
		goto out;
	rc = 0;
out:
	return bench_mode_end(b, &raw, &t, rc);
}

#define BENCH_LIFE_DATA	200	/* bytes of the server's one data segment */

/*
 * A connection's life after its hello was acknowledged (step 4 on; p: its hello's first
 * segment, hello_len its bytes): the server's data, the VM's ACK and FIN, the server's
 * FIN, the VM's last ACK. Sequence numbers as both ends would have them.
 */
static int
bench_life_step(struct bench_trace *t, const struct bench_frame *f, const struct pkt *p,
    uint32_t hello_len, int step)
{
	uint32_t vm = p->seq + hello_len, up = p->ack;

	switch (step) {
	case 4:
		return bench_synth_tcp_data(t, f, true, PKT_TCP_ACK | PKT_TCP_PSH, up, vm,
		    BENCH_LIFE_DATA);
	case 5:
		return bench_synth_tcp(t, f, false, PKT_TCP_ACK | PKT_TCP_FIN, vm,
		    up + BENCH_LIFE_DATA);
	case 6:
		return bench_synth_tcp(t, f, true, PKT_TCP_ACK | PKT_TCP_FIN, up + BENCH_LIFE_DATA,
		    vm + 1);
	default:
		return bench_synth_tcp(t, f, false, PKT_TCP_ACK, vm + 1, up + BENCH_LIFE_DATA + 1);
	}
}

/* A hello.pcap connection: its one or two segments. */
struct bench_conn {
	uint32_t seg[2];
	uint8_t nseg;
};

/*
 * hello.pcap as new connections: first (untimed) a DNS lookup per connection binding its
 * SNI to its server for its VM; then, in waves of BENCH_WAVE connections, their SYNs, the
 * servers' SYN-ACKs, the hellos and the servers' ACKs of them (without which the worker
 * keeps each judged hello's bytes, and a VM's share of those runs out). With life, the
 * rest of a short connection's life too: the server's data, the VM's ACK of it with its
 * FIN, the server's FIN, the VM's last ACK. A pass rotates the ports: every connection is
 * new.
 */
static int
bench_conn_trace(struct bench_trace *t, const struct bench_trace *raw, uint32_t max, bool life)
{
	struct bench_conn *c = calloc(BENCH_CONNS_MAX, sizeof(*c));
	char host[SNI_HOST_MAX + 1];
	uint32_t n = 0, k;
	int rc = -1;

	if (c == NULL)
		goto out;
	for (uint32_t i = 0; i < raw->n; i++) {
		for (k = n; k-- > 0 && raw->f[c[k].seg[0]].flow != raw->f[i].flow;)
			;
		if (k == UINT32_MAX && n < max && n < BENCH_CONNS_MAX)
			c[k = n++].nseg = 0;
		else if (k == UINT32_MAX || c[k].nseg == 2)
			continue;
		c[k].seg[c[k].nseg++] = i;
	}
	for (k = 0; k < n; k++) {
		const struct bench_frame *f = &raw->f[c[k].seg[0]];

		if (bench_host_of(raw, c[k].seg[0], f->flow, host, sizeof(host)) != 0 ||
		    bench_synth_dns(t, f, host, (uint16_t)k, (uint16_t)(20000 + k % 30000)) != 0)
			goto out;
	}
	bench_trace_link_answers(t);
	t->first_timed = t->n;
	for (uint32_t w = 0; w < n; w += BENCH_WAVE) {
		uint32_t end = w + BENCH_WAVE < n ? w + BENCH_WAVE : n;
		struct pkt p;

		for (int step = 0; step < (life ? 8 : 4); step++)
			for (k = w; k < end; k++) {
				const struct bench_frame *f = &raw->f[c[k].seg[0]];
				uint32_t hello_len = 0;

				if (pkt_decode(f->data, f->len, &p) != PKT_OK)
					goto out;
				for (uint8_t s = 0; s < c[k].nseg; s++)
					hello_len += (uint32_t)(raw->f[c[k].seg[s]].len - raw->f[c[k].seg[s]].l4_off) -
					    (uint32_t)(p.payload - f->data - f->l4_off);
				/* the server's ACK of the hello: the worker keeps its bytes until then */
				if (step == 3 && bench_synth_tcp(t, f, true, PKT_TCP_ACK, p.ack,
				    p.seq + hello_len) != 0)
					goto out;
				if (step == 0 && bench_synth_tcp(t, f, false, PKT_TCP_SYN, p.seq - 1,
				    0) != 0)
					goto out;
				if (step == 1 && bench_synth_tcp(t, f, true, PKT_TCP_SYN | PKT_TCP_ACK,
				    p.ack - 1, p.seq) != 0)
					goto out;
				if (step >= 4 && bench_life_step(t, f, &p, hello_len, step) != 0)
					goto out;
				for (uint8_t s = 0; step == 2 && s < c[k].nseg; s++)
					if (bench_trace_add(t, raw->f[c[k].seg[s]].data,
					    raw->f[c[k].seg[s]].len) == NULL)
						goto out;
			}
	}
	t->conns = n;
	rc = 0;
out:
	free(c);
	return rc;
}

/*
 * conn (life false) or lifecycle mode: hello.pcap's connections opened (and, in
 * lifecycle, lived and closed; between passes, untimed, the sweep ages them out, and
 * under callgrind that sweep is counted apart: bench_rounds).
 */
static int
bench_conn_mode(struct bench *b, bool life)
{
	static const char *const conn_names[3] = { "conn_per_s", "conn_io_per_s", "conn_vs_io" };
	static const char *const life_names[3] = { "lifecycle_per_s", "lifecycle_io_per_s",
	    "lifecycle_vs_io" };
	/* lifecycle: a table the sweep's cost per flow aged is not mostly empty entries of */
	const char *const cfg[3] = { NULL, "\"1.1.1.1\", \"2606:4700:4700::1111\"",
	    !life ? "  max_flows: 1048576\n  max_flows_per_vm: 1048576\n  max_bindings: 262144\n" :
	    b->instr ? "  max_flows: 4096\n  max_flows_per_vm: 4096\n  max_bindings: 262144\n" :
	    "  max_flows: 16384\n  max_flows_per_vm: 16384\n  max_bindings: 262144\n" };
	const char *mode = life ? "lifecycle" : "conn";
	struct bench_trace raw = { 0 }, t = { 0 };
	char path[4096];
	int rc = -1;

	b->age_passes = life;
	if (bench_path(path, sizeof(path), b, "hello.pcap") != 0 ||
	    bench_trace_pcap(&raw, path, 0) < 0 ||
	    bench_conn_trace(&t, &raw, b->instr ? BENCH_INSTR_CONNS : BENCH_CONNS_MAX, life) != 0)
		goto out;
	printf("INFO %s connections=%u frames_per_pass=%u\n", mode, t.conns, t.n - t.first_timed);
	/* frames per second times the connections a pass's frames make */
	if (bench_measure(b, &t, mode, cfg, life ? life_names : conn_names,
	    (double)t.conns / (double)(t.n - t.first_timed), NULL) != 0)
		goto out;
	rc = 0;
out:
	return bench_mode_end(b, &raw, &t, rc);
}

int
bench_mode_conn(struct bench *b)
{
	return bench_conn_mode(b, false);
}

int
bench_mode_lifecycle(struct bench *b)
{
	return bench_conn_mode(b, true);
}

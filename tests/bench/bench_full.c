/*
 * bench_full: namegate's real worker doing the product's work, in one process, against an
 * io baseline on the same ports in the same run (issue 14). Usage:
 *
 *   bench_full MODE [TRAFFIC_DIR]      (default $TRAFFIC_DIR, else build/tests/traffic)
 *
 * MODE is one of
 *   mix       mix.pcap, fully inspected: a name-based policy of hosts.txt, every resolver
 *             the capture uses, each VM resolving what it connects to, DNS answers given
 *             the IDs namegate chose, source ports rotated every pass so every pass opens
 *             new flows and judges every ClientHello. RESULT mix_full_mpps, mix_io_mpps,
 *             mix_full_vs_io (median of the per-round ratios, rounds interleaved), and
 *             against the honest baselines (bench_full_base.c) mix_csum_mpps,
 *             mix_full_vs_csum, mix_l3fwd_mpps, mix_full_vs_l3fwd.
 *   small64   small64.pcap's 1,024 established flows (a handshake first, admitted by an
 *             address policy): RESULT small64_mpps, small64_io_mpps, small64_vs_io,
 *             small64_csum_mpps, small64_vs_csum, small64_l3fwd_mpps, small64_vs_l3fwd.
 *   conn      new TLS connections from hello.pcap (SYN, SYN-ACK, the hello in one or two
 *             segments; names bound by DNS first): RESULT conn_per_s (connections per
 *             second of poll time), conn_io_per_s, conn_vs_io.
 *   lifecycle conn's connections lived whole: also the server's data, FIN both ways, the
 *             last ACK, and between passes (untimed) the sweep that ages them out:
 *             RESULT lifecycle_per_s, lifecycle_io_per_s, lifecycle_vs_io.
 *   capacity  1 M flows and 1 M bindings: memory, fill, drops, and the sustained rate of
 *             new connections while the flow table stays >= 95 % full:
 *             RESULT conn_rate_full_table (the real worker loop, aging included), the
 *             table's occupancy, and one sweep aging 1 M flows out (age_ns_per_flow).
 * The ring PMD offloads nothing, so the worker verifies every IPv4, TCP and UDP checksum in
 * software; BENCH_CSUM_OFFLOAD=1 marks the frames checksum-good instead, as a NIC (or
 * virtio with guest checksum offload) that verified them would.
 * With BENCH_INSTR=1 (bench_instr.py runs it under callgrind --collect-atstart=no) mix,
 * small64, conn and lifecycle run a short fixed workload and collect only inside
 * dp_worker_poll (and lifecycle's sweep, dumped apart), printing INSTR frames=N conns=N
 * (and INSTR_AGE aged=N) for the driver to divide callgrind's totals by. BENCH_INSTR=csum
 * (or l3fwd) collects inside that baseline's bursts instead, over the same frames.
 *
 * Timing: rte_rdtsc_precise() around each dp_worker_poll() (or each io move) only; building
 * frames, rewriting answers and draining the tx rings are outside it. Counters come from
 * the worker (dp_stats_value(), the same sums /metrics serves) and from what left the ports.
 * No hugepages (--no-huge): memory is plain pages, TLB misses included; with BENCH_HUGE_DIR
 * (tests/bench/hugepages.sh), 2 MiB pages there, as the daemon's where the host has them.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>
#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>

#include "bench_full.h"
#include "bench_input.h"
#include "dp_flowlog_out.h"
#include "dp_run.h"
#include "dp_stats.h"
#include "policy/load.h"

#define BENCH_RING	1024	/* the ports' rings: a poll never holds more than a burst */

static const char *const bench_port_names[2] = { "bench_vm", "bench_up" };

/* The ring PMD ports the config names, on rings of our own, before dp_ctx_setup opens them. */
static int
bench_ports(struct bench *b)
{
	char name[32];

	for (int s = 0; s < 2; s++) {
		snprintf(name, sizeof(name), "brx%d", s);
		b->rx[s] = rte_ring_create(name, BENCH_RING, (int)rte_socket_id(),
		    RING_F_SP_ENQ | RING_F_SC_DEQ);
		snprintf(name, sizeof(name), "btx%d", s);
		b->tx[s] = rte_ring_create(name, BENCH_RING, (int)rte_socket_id(),
		    RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (b->rx[s] == NULL || b->tx[s] == NULL ||
		    rte_eth_from_rings(bench_port_names[s], &b->rx[s], 1, &b->tx[s], 1,
		    rte_socket_id()) < 0) {
			fprintf(stderr, "bench_full: ring port %s: %s\n", bench_port_names[s],
			    rte_strerror(rte_errno));
			return -1;
		}
	}
	return 0;
}

int
bench_open(struct bench *b, const char *yaml, size_t len, const char *mem_mb)
{
	char prefix[64];
	char *argv[] = {
		(char *)"bench_full", (char *)"-m", (char *)mem_mb,
		(char *)"--no-pci", (char *)"--no-shconf", (char *)"--no-telemetry",	/* no files */
		(char *)"--file-prefix", prefix, (char *)"-l", (char *)"0-1",
		(char *)"--log-level", (char *)"*:error", (char *)"--no-huge", NULL, NULL,
	};
	int argc = (int)(sizeof(argv) / sizeof(argv[0])) - 2;	/* --no-huge the last */
	char *huge_dir = getenv("BENCH_HUGE_DIR");
	struct pol_errs errs = { 0 };

	snprintf(prefix, sizeof(prefix), "ngbench%d", (int)getpid());
	for (int p = 0; p < DP_PORTS; p++)
		b->ctx.port[p] = RTE_MAX_ETHPORTS;
	if (huge_dir != NULL) {	/* hugepages.sh: its mount, the pages free in it */
		argv[argc - 1] = (char *)"--huge-dir";
		argv[argc++] = huge_dir;
	}
	printf("INFO pages: %s\n", huge_dir != NULL ? "2 MiB (BENCH_HUGE_DIR, hugepages.sh)" :
	    "4 KiB (EAL --no-huge: no hugepages)");
	if (rte_eal_init(argc, argv) < 0) {
		fprintf(stderr, "bench_full: EAL: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	b->eal = true;
	if ((b->cfg = pol_load_buffer(yaml, len, "bench.yaml", &errs)) == NULL) {
		pol_errs_print(stderr, &errs);
		return -1;
	}
	if (bench_ports(b) != 0 || dp_ctx_setup(&b->ctx, b->cfg) != 0)
		return -1;
	if (b->cfg->flow_log != NULL && (b->flowlog = dp_flowlog_out_open(b->cfg->flow_log,
	    b->ctx.max_vms, prefix, sizeof(prefix))) == NULL) {
		fprintf(stderr, "bench_full: flow_log: %s\n", prefix);
		return -1;
	}
	/* frames come from the ports' own pool, as received ones do: the worker holds no other */
	b->pool = b->ctx.pool;
	b->w = b->ctx.workers[0];
	/* this thread plays worker 0, so the binding table's RCU reclaim can progress */
	rte_rcu_qsbr_thread_register(b->ctx.qsbr, 0);
	rte_rcu_qsbr_thread_online(b->ctx.qsbr, 0);
	return 0;
}

void
bench_close(struct bench *b)
{
	if (!b->eal)
		return;
	b->eal = false;
	dp_flowlog_out_close(b->flowlog);
	bench_base_close(b);
	dp_ctx_teardown(&b->ctx);
	pol_config_free(b->cfg);
	rte_eal_cleanup();
	rmdir(rte_eal_get_runtime_dir());	/* left empty: no shconf, no telemetry */
}

/*
 * $BENCH_VMS - n more VMs that send nothing, so that a run with many VMs configured sees
 * the same traffic as one with the manifest's: what configured VMs cost the frames of
 * others (instr_mix_1000vms_vs_16vms). Their addresses are in no capture.
 */
static void
bench_idle_vms(size_t n, FILE *out)
{
	const char *env = getenv("BENCH_VMS");
	size_t want = env != NULL ? strtoul(env, NULL, 10) : 0;

	for (size_t i = n; i < want; i++)
		fprintf(out, "  - {name: idle%zu, policy: bench, mac: \"02:fe:00:00:%02zx:%02zx\", "
		    "ipv4: 10.254.%zu.%zu, ipv6: \"fd00:fe::%zx\"}\n", i, i >> 8, i & 0xff, i >> 8,
		    i & 0xff, i);
}

/* dataplane.max_vms for $BENCH_VMS VMs: the default, 1024, unless more are configured. */
static unsigned long
bench_max_vms(void)
{
	const char *env = getenv("BENCH_VMS");
	unsigned long want = env != NULL ? strtoul(env, NULL, 10) : 0;

	return want > 1024 ? want : 1024;
}

/* The VMs of manifest.json as YAML flow mappings, all on policy "bench". */
static int
bench_vms(const char *traffic, FILE *out)
{
	char path[4096];
	struct json_object *root, *vms;

	snprintf(path, sizeof(path), "%s/manifest.json", traffic);
	if (bench_input_missing("bench_full", path))
		return -1;
	if ((root = json_object_from_file(path)) == NULL ||
	    !json_object_object_get_ex(root, "vms", &vms)) {
		fprintf(stderr, "bench_full: %s: no vms\n", path);
		json_object_put(root);
		return -1;
	}
	for (size_t i = 0; i < json_object_array_length(vms); i++) {
		struct json_object *vm = json_object_array_get_idx(vms, i), *v;

		fprintf(out, "  - {name: vm%zu, policy: bench", i);
		if (json_object_object_get_ex(vm, "mac", &v))
			fprintf(out, ", mac: \"%s\"", json_object_get_string(v));
		if (json_object_object_get_ex(vm, "ip4", &v))
			fprintf(out, ", ipv4: %s", json_object_get_string(v));
		if (json_object_object_get_ex(vm, "ip6", &v) && json_object_is_type(v, json_type_string))
			fprintf(out, ", ipv6: \"%s\"", json_object_get_string(v));
		if (json_object_object_get_ex(vm, "vlan", &v) && json_object_get_int(v) != 0)
			fprintf(out, ", vlan: %d", json_object_get_int(v));
		fputs("}\n", out);
	}
	bench_idle_vms(json_object_array_length(vms), out);
	json_object_put(root);
	return 0;
}

/*
 * The MAC and IPv4 address of manifest.json's first VM, which bench_full_capacity's frames
 * come from. 0, or -1 after a line on stderr.
 */
int
bench_vm0(const char *traffic, uint8_t mac[6], uint8_t ip4[4])
{
	char path[4096];
	struct json_object *root = NULL, *vms, *m, *a;
	int rc = -1;

	snprintf(path, sizeof(path), "%s/manifest.json", traffic);
	if (bench_input_missing("bench_full", path))
		return -1;
	if ((root = json_object_from_file(path)) != NULL &&
	    json_object_object_get_ex(root, "vms", &vms) && json_object_array_length(vms) > 0 &&
	    json_object_object_get_ex(json_object_array_get_idx(vms, 0), "mac", &m) &&
	    json_object_object_get_ex(json_object_array_get_idx(vms, 0), "ip4", &a) &&
	    sscanf(json_object_get_string(m), "%2hhx:%2hhx:%2hhx:%2hhx:%2hhx:%2hhx", &mac[0],
	    &mac[1], &mac[2], &mac[3], &mac[4], &mac[5]) == 6 &&
	    inet_pton(AF_INET, json_object_get_string(a), ip4) == 1)
		rc = 0;
	else
		fprintf(stderr, "bench_full: %s: no vms[0] with a mac and an ip4\n", path);
	json_object_put(root);
	return rc;
}

/* Every name of hosts.txt, quoted, comma-separated. */
int
bench_hosts(const char *traffic, FILE *out)
{
	char path[4096], line[512];
	FILE *f;
	int n = 0;

	snprintf(path, sizeof(path), "%s/hosts.txt", traffic);
	if (bench_input_missing("bench_full", path))
		return -1;
	if ((f = fopen(path, "r")) == NULL) {
		fprintf(stderr, "bench_full: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "\r\n \t")] = '\0';
		if (line[0] != '\0')
			fprintf(out, "%s\"%s\"", n++ ? ", " : "", line);
	}
	fclose(f);
	return n > 0 ? 0 : -1;
}

/*
 * The config: both ring ports, one busy-polling worker, no slow path (no TAPs here),
 * on_block drop. policy: the allow list's entries, or NULL for every name of hosts.txt;
 * resolvers: the resolver list's entries; dataplane: more dataplane keys, each line
 * "  key: value\n".
 */
char *
bench_config(const char *traffic, const char *policy, const char *resolvers,
    const char *dataplane, size_t *len)
{
	char *text = NULL;
	FILE *out = open_memstream(&text, len);
	int rc;

	if (out == NULL)
		return NULL;
	/* rte_eth_from_rings() names its vdev net_ring_NAME */
	fprintf(out, "dataplane:\n  vm_port: net_ring_%s\n  uplink_port: net_ring_%s\n"
	    "  workers: 1\n"
	    "  max_vms: %lu\n"
	    "  idle_sleep_us: 0\n%s"
	    "slow_path: {enabled: false}\n%s"
	    "resolvers: [%s]\n"
	    "dns: {max_ttl: 86400}\n"
	    "on_block: drop\n"
	    "policies:\n  bench:\n    allow: [", bench_port_names[0], bench_port_names[1],
	    bench_max_vms(), dataplane,
	    getenv("BENCH_FLOWLOG") != NULL ? "flow_log: /dev/null\n" : "", resolvers);
	rc = policy != NULL ? (fputs(policy, out) < 0 ? -1 : 0) : bench_hosts(traffic, out);
	fputs("]\nvms:\n", out);
	if (rc == 0)
		rc = bench_vms(traffic, out);
	if (fclose(out) != 0 || rc != 0) {
		free(text);
		return NULL;
	}
	return text;
}

/* Family f's samples i (dim 1) summed over every VM slot and the "unknown" one. */
uint64_t
bench_count(const struct bench *b, int family, unsigned int i)
{
	enum dp_cnt f = (enum dp_cnt)family;
	uint64_t n = 0;

	if (dp_cnt_def(f)->scope == DP_CNT_GLOBAL)
		return dp_stats_value(&b->ctx, f, 0, i, 0);
	for (unsigned int vm = 0; vm <= b->ctx.max_vms; vm++)
		n += dp_stats_value(&b->ctx, f, (uint16_t)vm, i, 0);
	return n;
}

/* Every non-zero verdict, reason and drop, so a reader sees what the worker did. */
void
bench_counters(const struct bench *b, const char *mode, FILE *out)
{
	static const enum dp_cnt families[] = { DP_CNT_EGRESS_PACKETS, DP_CNT_BLOCKED,
	    DP_CNT_DNS_QUERIES, DP_CNT_DROPS };

	for (size_t k = 0; k < sizeof(families) / sizeof(families[0]); k++) {
		const struct dp_cnt_def *d = dp_cnt_def(families[k]);
		unsigned int n;
		const char *const *labels = dp_stats_dim(d->dim[0], &n);

		for (unsigned int i = 0; i < n; i++) {
			uint64_t v = bench_count(b, families[k], i);

			if (v != 0)
				fprintf(out, "COUNT %s %s{%s} %" PRIu64 "\n", mode, d->metric,
				    labels[i], v);
		}
	}
	fprintf(out, "COUNT %s namegate_vm_bindings %" PRIu64 "\n", mode,
	    bench_count(b, DP_CNT_BINDINGS, 0));
	fprintf(out, "COUNT %s namegate_vm_flows %" PRIu64 "\n", mode,
	    bench_count(b, DP_CNT_FLOWS, 0));
}

/* n things in cycles TSC cycles, per second. */
double
bench_rate(uint64_t n, uint64_t cycles)
{
	return cycles == 0 ? 0 : (double)n * (double)rte_get_tsc_hz() / (double)cycles;
}

/* $BENCH_INSTR: "1" collects inside namegate's polls, "csum" or "l3fwd" inside a baseline's. */
static bool
bench_instr_mode(const char *env, enum bench_drv *drv)
{
	*drv = BENCH_NG;
	if (env == NULL)
		return false;
	if (strcmp(env, "csum") == 0)
		*drv = BENCH_CSUM;
	else if (strcmp(env, "l3fwd") == 0)
		*drv = BENCH_L3FWD;
	return *drv != BENCH_NG || strcmp(env, "1") == 0;
}

int
main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*run)(struct bench *);
	} modes[] = {
		{ "mix", bench_mode_mix }, { "small64", bench_mode_small64 },
		{ "conn", bench_mode_conn }, { "lifecycle", bench_mode_lifecycle },
		{ "capacity", bench_mode_capacity }, { "cores", bench_mode_cores },
	};
	static struct bench b;
	const char *env = getenv("TRAFFIC_DIR");

	/* the default build directory's generated captures, run from the source root */
	b.traffic = argc > 2 ? argv[2] : env != NULL && env[0] != '\0' ? env :
	    "build/tests/traffic";
	b.instr = bench_instr_mode(getenv("BENCH_INSTR"), &b.instr_drv);
	b.csum_offload = getenv("BENCH_CSUM_OFFLOAD") != NULL &&
	    strcmp(getenv("BENCH_CSUM_OFFLOAD"), "1") == 0;
	printf("INFO checksums verified by %s\n", b.csum_offload ? "the \"NIC\" (marked good)" :
	    "the worker, in software");
	for (size_t i = 0; argc > 1 && i < sizeof(modes) / sizeof(modes[0]); i++)
		if (strcmp(argv[1], modes[i].name) == 0) {
			int rc = modes[i].run(&b);

			fflush(stdout);
			return rc == 0 ? 0 : 1;
		}
	fprintf(stderr, "usage: bench_full mix|small64|conn|lifecycle|capacity|cores "
	    "[TRAFFIC_DIR]\n");
	return 2;
}

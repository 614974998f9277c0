/*
 * dataplane/dp_stats: the Prometheus text against api/dp_counters.h. Every family of the
 * schema appears with # HELP and # TYPE exactly once, before its samples, and its samples
 * are one group (the text format's rule for a metric name); values are the workers' sums
 * under SPEC s6's labels. dp_binds_count() and dp_flows_count() are fakes below.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dp_bind.h"
#include "dp_flow.h"
#include "dp_stats.h"

#define NWORKERS	2
#define T_MAX_VMS	1024

uint64_t
dp_binds_count(const struct dp_binds *b, uint16_t vm)
{
	(void)b;
	return 100u + vm;
}

uint32_t
dp_flows_count(const struct dp_flows *t, uint16_t vm)
{
	(void)t;
	return 10u + vm;	/* per worker */
}

struct fixture {
	struct dp_ctx ctx;
	struct dp_gen gen;
	struct dp_vm vms[T_MAX_VMS + 1];
	struct dp_worker workers[NWORKERS];
	struct dp_vm_stats stats[NWORKERS][T_MAX_VMS + 1];
	char *text;
	size_t len;
};

/* agent1 at slot 0, a removed VM at slot 1, agent2 at slot 2, and "unknown". */
static int
setup(void **state)
{
	size_t size = (sizeof(struct fixture) + 63) / 64 * 64;
	struct fixture *f = aligned_alloc(64, size);	/* dp_worker is cache aligned */

	assert_non_null(f);
	memset(f, 0, size);
	f->vms[0] = (struct dp_vm){ .name = "agent1", .present = true };
	f->vms[1] = (struct dp_vm){ .name = "gone", .present = false };
	f->vms[2] = (struct dp_vm){ .name = "agent2", .present = true, .audit = true };
	f->vms[T_MAX_VMS] = (struct dp_vm){ .name = "unknown", .present = true };
	f->gen = (struct dp_gen){ .id = 5, .vms = f->vms, .max_vms = T_MAX_VMS, .nvms = 3 };
	atomic_init(&f->ctx.gen, &f->gen);
	f->ctx.nworkers = NWORKERS;
	for (unsigned int w = 0; w < NWORKERS; w++) {
		struct dp_worker *wk = &f->workers[w];
		struct dp_vm_stats *a1 = &f->stats[w][0], *a2 = &f->stats[w][2];

		wk->vm_stats = f->stats[w];
		f->ctx.workers[w] = wk;
		a1->egress_pkts[DP_ALLOWED] = 3 + w;
		a1->egress_bytes[DP_ALLOWED] = 1000 * (w + 1);
		a2->egress_pkts[DP_WOULD_BLOCK] = 7;
		a1->ingress_pkts = 2;
		a1->ingress_bytes = 300;
		a2->blocked[DP_REASON_SNI_DENIED] = 1 + w;
		a2->blocked[DP_REASON_VM_LIMIT] = 4;
		a1->dns_allowed = 6;
		a1->dns_blocked = 1;
		a2->evt_suppressed = 9;
		f->stats[w][1].egress_pkts[DP_ALLOWED] = 99;	/* the removed VM's: not shown */
		wk->port_pkts[DP_PORT_VM][0] = 11;
		wk->port_pkts[DP_PORT_UPLINK][1] = 12;
		wk->port_pkts[DP_PORT_SLOW_VM][1] = 1;
		wk->port_pkts[DP_PORT_SLOW_UP][1] = 2;
		wk->drops[DP_DROP_BAD_CSUM] = 5;
	}
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	free(f->text);
	free(f);
	return 0;
}

static void
render(struct fixture *f)
{
	FILE *out = open_memstream(&f->text, &f->len);

	assert_non_null(out);
	dp_stats_print(&f->ctx, out);
	assert_int_equal(fclose(out), 0);
}

/* The family a line belongs to (its metric name), copied to name. */
static void
line_metric(const char *line, char *name, size_t size)
{
	size_t n;

	if (strncmp(line, "# HELP ", 7) == 0 || strncmp(line, "# TYPE ", 7) == 0)
		line += 7;
	n = strcspn(line, "{ ");
	assert_true(n > 0 && n < size);
	memcpy(name, line, n);
	name[n] = '\0';
}

static int
family_of(const char *name)
{
	for (int c = 0; c < DP_CNT_MAX; c++)
		if (strcmp(dp_cnt_def(c)->metric, name) == 0)
			return c;
	return -1;
}

static void
test_families_help_type_grouped(void **state)
{
	struct fixture *f = *state;
	unsigned int help[DP_CNT_MAX] = { 0 }, type[DP_CNT_MAX] = { 0 };
	unsigned int samples[DP_CNT_MAX] = { 0 };
	bool done[DP_CNT_MAX] = { false };
	int cur = -1;
	char *save = NULL;

	render(f);
	assert_true(f->len > 0 && f->text[f->len - 1] == '\n');
	for (char *line = strtok_r(f->text, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		char name[128], want[256];
		int c;

		line_metric(line, name, sizeof(name));
		if ((c = family_of(name)) < 0)
			fail_msg("a line of no family in the schema: %s", line);
		if (c != cur) {		/* a new group: never one seen before */
			assert_false(done[c]);
			if (cur >= 0)
				done[cur] = true;
			cur = c;
		}
		if (strncmp(line, "# HELP ", 7) == 0) {
			snprintf(want, sizeof(want), "# HELP %s %s", name, dp_cnt_def(c)->help);
			assert_string_equal(line, want);
			assert_int_equal(samples[c], 0);
			help[c]++;
		} else if (strncmp(line, "# TYPE ", 7) == 0) {
			snprintf(want, sizeof(want), "# TYPE %s %s", name,
			    dp_cnt_type_name(dp_cnt_def(c)->type));
			assert_string_equal(line, want);
			assert_int_equal(samples[c], 0);
			type[c]++;
		} else {
			assert_true(line[0] != '#');
			samples[c]++;
		}
	}
	for (int c = 0; c < DP_CNT_MAX; c++) {
		const struct dp_cnt_def *d = dp_cnt_def(c);
		unsigned int n1, n2, per;

		dp_stats_dim(d->dim[0], &n1);
		dp_stats_dim(d->dim[1], &n2);
		per = n1 * n2 * (d->scope == DP_CNT_VM ? 3 : 1);	/* agent1, agent2, unknown */
		if (help[c] != 1 || type[c] != 1 || samples[c] != per)
			fail_msg("%s: %u HELP, %u TYPE, %u samples (want 1, 1, %u)", d->metric,
			    help[c], type[c], samples[c], per);
	}
	/* the readers of the SIGUSR1 dump stop at its sample */
	assert_int_equal(cur, DP_CNT_POLICY_GENERATION);
}

static void
test_samples_and_labels(void **state)
{
	struct fixture *f = *state;
	static const char *const want[] = {
		"namegate_vm_egress_packets_total{vm=\"agent1\",verdict=\"allowed\"} 7\n",
		"namegate_vm_egress_packets_total{vm=\"agent2\",verdict=\"would_block\"} 14\n",
		"namegate_vm_egress_packets_total{vm=\"unknown\",verdict=\"blocked\"} 0\n",
		"namegate_vm_egress_bytes_total{vm=\"agent1\",verdict=\"allowed\"} 3000\n",
		"namegate_vm_ingress_packets_total{vm=\"agent1\"} 4\n",
		"namegate_vm_ingress_bytes_total{vm=\"agent1\"} 600\n",
		"namegate_vm_blocked_total{vm=\"agent2\",reason=\"sni_denied\"} 3\n",
		"namegate_vm_blocked_total{vm=\"agent2\",reason=\"vm_limit\"} 8\n",
		"namegate_vm_blocked_total{vm=\"agent1\",reason=\"spoofed\"} 0\n",
		"namegate_vm_dns_queries_total{vm=\"agent1\",verdict=\"allowed\"} 12\n",
		"namegate_vm_dns_queries_total{vm=\"agent1\",verdict=\"blocked\"} 2\n",
		"namegate_vm_bindings{vm=\"agent2\"} 102\n",
		"namegate_vm_flows{vm=\"agent2\"} 24\n",
		"namegate_vm_events_suppressed_total{vm=\"agent2\"} 18\n",
		"namegate_port_packets_total{port=\"vm\",dir=\"rx\"} 22\n",
		"namegate_port_packets_total{port=\"uplink\",dir=\"tx\"} 24\n",
		"namegate_port_packets_total{port=\"slow\",dir=\"tx\"} 6\n",
		"namegate_drops_total{reason=\"bad_checksum\"} 10\n",
		"namegate_drops_total{reason=\"malformed\"} 0\n",
		"\nnamegate_policy_generation 5\n",
	};
	const char *last = want[sizeof(want) / sizeof(want[0]) - 1];

	render(f);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (strstr(f->text, want[i]) == NULL)
			fail_msg("no line %s", want[i]);
	assert_null(strstr(f->text, "gone"));		/* a removed VM's slot */
	/* the last line */
	assert_string_equal(f->text + f->len - strlen(last), last);
}

/* The same values as dp_stats_value() gives the JSON and telemetry renderers. */
static void
test_values(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(dp_stats_value(&f->ctx, DP_CNT_EGRESS_PACKETS, 2, DP_WOULD_BLOCK, 0), 14);
	assert_int_equal(dp_stats_value(&f->ctx, DP_CNT_DNS_QUERIES, 0, 1, 0), 2);
	assert_int_equal(dp_stats_value(&f->ctx, DP_CNT_PORT_PACKETS, 0, DP_PORT_SLOW_VM, 1), 6);
	assert_int_equal(dp_stats_value(&f->ctx, DP_CNT_POLICY_GENERATION, 0, 0, 0), 5);
	assert_int_equal(dp_stats_value(&f->ctx, DP_CNT_BINDINGS, 0, 0, 0), 100);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_families_help_type_grouped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_samples_and_labels, setup, teardown),
		cmocka_unit_test_setup_teardown(test_values, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

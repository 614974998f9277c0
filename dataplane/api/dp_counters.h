/*
 * The counters operators see, listed once (SPEC s6: metric names and labels are a
 * contract). Three renderers walk this list: the Prometheus text of GET /metrics and
 * SIGUSR1 (dataplane/dp_stats.c), the control socket's stats reply (dataplane/dp_ctlsock.c,
 * shapes in control/sock/include/ctl_sock.h) and DPDK telemetry's /namegate/vm,NAME
 * (dataplane/dp_telemetry.c). Plain C, no DPDK, so control/ can read it too. Where each
 * value comes from is dp_stats_value() in dp_stats.c: a family added here without a case
 * in its switch does not compile (-Wswitch, -Werror).
 *
 * X(id, scope, metric, type, dim1, dim2, json, key, help)
 *   scope   VM: samples for every configured VM (and "unknown", frames from no VM), each
 *           labelled vm="NAME" first; GLOBAL: the process's samples
 *   metric  the Prometheus name
 *   type    COUNTER or GAUGE, for its # TYPE line
 *   dim1/2  the labels after vm, each with its values (enum dp_cnt_dim); NONE: no label
 *   json    where the stats reply holds the values: the path json / dim1 value / dim2
 *   key     value / key, components that are NULL left out, under the VM's object (scope
 *           VM) or the reply's top level (GLOBAL). Neither json nor key: not in the reply.
 *           Telemetry's key (scope VM only) is json_key_dim1value_dim2value, NULLs left out.
 *   help    its # HELP text: plain, no backslash or newline (the format would want them
 *           escaped)
 *
 * Families are rendered in this order; namegate_policy_generation stays last, because the
 * readers of the SIGUSR1 dump take its sample line as the end of one.
 */
#ifndef DP_COUNTERS_H
#define DP_COUNTERS_H

#include <stddef.h>

#define DP_COUNTERS(X)								\
	X(EGRESS_PACKETS, VM, "namegate_vm_egress_packets_total", COUNTER,		\
	    VERDICT, NONE, "egress", "packets",					\
	    "Packets the VM sent, by verdict (would_block: passed in audit mode)")	\
	X(EGRESS_BYTES, VM, "namegate_vm_egress_bytes_total", COUNTER,		\
	    VERDICT, NONE, "egress", "bytes",						\
	    "Bytes the VM sent, by verdict (would_block: passed in audit mode)")	\
	X(INGRESS_PACKETS, VM, "namegate_vm_ingress_packets_total", COUNTER,		\
	    NONE, NONE, "ingress", "packets",						\
	    "Packets delivered to the VM")						\
	X(INGRESS_BYTES, VM, "namegate_vm_ingress_bytes_total", COUNTER,		\
	    NONE, NONE, "ingress", "bytes",						\
	    "Bytes delivered to the VM")						\
	X(BLOCKED, VM, "namegate_vm_blocked_total", COUNTER,				\
	    REASON, NONE, "blocked", NULL,						\
	    "Packets of the VM refused, by reason (audit mode: would have been)")	\
	X(DNS_QUERIES, VM, "namegate_vm_dns_queries_total", COUNTER,			\
	    DNS, NONE, "dns", NULL,							\
	    "DNS queries of the VM, by verdict")					\
	X(BINDINGS, VM, "namegate_vm_bindings", GAUGE,				\
	    NONE, NONE, NULL, "bindings",						\
	    "Addresses the VM may reach now, learned from DNS answers")		\
	X(FLOWS, VM, "namegate_vm_flows", GAUGE,					\
	    NONE, NONE, NULL, "flows",							\
	    "Open flows of the VM")							\
	X(EVENTS_SUPPRESSED, VM, "namegate_vm_events_suppressed_total", COUNTER,	\
	    NONE, NONE, NULL, "events_suppressed",					\
	    "Block events of the VM not logged: past its event rate limit")		\
	X(PORT_PACKETS, GLOBAL, "namegate_port_packets_total", COUNTER,		\
	    PORT, DIR, "ports", NULL,							\
	    "Packets through each port (slow: the exception path's TAPs), by direction") \
	X(DROPS, GLOBAL, "namegate_drops_total", COUNTER,				\
	    DROP, NONE, NULL, NULL,							\
	    "Frames dropped before or outside any VM's decision, by reason")		\
	X(EVENTS_DROPPED, GLOBAL, "namegate_events_dropped_total", COUNTER,		\
	    NONE, NONE, NULL, "events_dropped",					\
	    "Events lost: to a full queue to the main lcore, or to a failed write to the event log") \
	X(POLICY_GENERATION, GLOBAL, "namegate_policy_generation", GAUGE,		\
	    NONE, NONE, NULL, "generation",						\
	    "The configuration generation in force")

/*
 * The labels after vm, X(id, label): their values are fixed lists (dp_stats_dim()):
 *   VERDICT  allowed blocked would_block	DNS   allowed blocked
 *   REASON   the labels of DP_REASONS in dataplane/worker/include/dp_reason.h, in its order
 *   PORT     vm uplink slow			DIR   rx tx
 *   DROP     the labels of DP_DROPS in dataplane/worker/include/dp_reason.h, in its order
 */
#define DP_COUNTER_DIMS(X)							\
	X(NONE,		NULL)							\
	X(VERDICT,	"verdict")						\
	X(DNS,		"verdict")						\
	X(REASON,	"reason")						\
	X(PORT,		"port")							\
	X(DIR,		"dir")							\
	X(DROP,		"reason")

enum dp_cnt {
#define X(id, scope, metric, type, dim1, dim2, json, key, help) DP_CNT_##id,
	DP_COUNTERS(X)
#undef X
	DP_CNT_MAX
};

enum dp_cnt_dim {
#define X(id, label) DP_CNT_DIM_##id,
	DP_COUNTER_DIMS(X)
#undef X
	DP_CNT_DIM_MAX
};

enum dp_cnt_scope { DP_CNT_VM, DP_CNT_GLOBAL };
enum dp_cnt_type { DP_CNT_COUNTER, DP_CNT_GAUGE };

struct dp_cnt_def {
	const char *metric;
	enum dp_cnt_scope scope;
	enum dp_cnt_type type;
	enum dp_cnt_dim dim[2];
	const char *json, *key;		/* NULL: not a component */
	const char *help;
};

/* Family c's row; c < DP_CNT_MAX. */
static inline const struct dp_cnt_def *
dp_cnt_def(enum dp_cnt c)
{
	static const struct dp_cnt_def defs[DP_CNT_MAX] = {
#define X(id, scope, metric, type, dim1, dim2, json, key, help)			\
		[DP_CNT_##id] = { metric, DP_CNT_##scope, DP_CNT_##type,		\
		    { DP_CNT_DIM_##dim1, DP_CNT_DIM_##dim2 }, json, key, help },
		DP_COUNTERS(X)
#undef X
	};

	return &defs[c];
}

/* "counter" or "gauge": the # TYPE line's word. */
static inline const char *
dp_cnt_type_name(enum dp_cnt_type t)
{
	return t == DP_CNT_GAUGE ? "gauge" : "counter";
}

/* The label name of d; NULL for DP_CNT_DIM_NONE. */
static inline const char *
dp_cnt_dim_label(enum dp_cnt_dim d)
{
	static const char *const labels[DP_CNT_DIM_MAX] = {
#define X(id, label) [DP_CNT_DIM_##id] = label,
		DP_COUNTER_DIMS(X)
#undef X
	};

	return labels[d];
}

#endif /* DP_COUNTERS_H */

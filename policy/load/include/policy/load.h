/*
 * Configuration loader (SPEC s3): reads the YAML file with libyaml, applies defaults,
 * validates every key, reads import: files, compiles the host patterns into a struct
 * pol_set, and explains decisions for the offline tools. No DPDK. Runs on the control
 * thread (load, reload) and in the offline tools, never on the fast path.
 */
#ifndef POLICY_LOAD_H
#define POLICY_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "policy/match.h"
#include "policy/vocab.h"

#define POL_ERRS_MAX	32	/* errors kept per load; the rest are only counted */
#define POL_VM_NAME_MAX	32	/* becomes part of nft set names "<vm>_v4addr" */
#define POL_WHY_MAX	160	/* room for one pattern or host error message */
#define POL_RESOLVERS_MAX	8	/* resolvers: what a generation holds (DP_RESOLVERS_MAX) */
#define POL_TLS_PORTS_MAX	16	/* tls_ports: likewise (DP_TLS_PORTS_MAX) */
#define POL_GROUP_NONE		UINT32_MAX	/* control_socket*_group not set */
#define POL_FLEET_WORD_MAX	63	/* fleet.name, fleet.shard: [A-Za-z0-9._-] */
#define POL_FLEET_KEYS_MAX	16	/* fleet.bundle_keys */
/*
 * fleet.cache's longest path: its siblings (FILE.minisig, FILE.revokes, and the temporary
 * FILE.minisig.tmp each is written through) must fit a 4,096-byte path, or cut short they
 * would name other files.
 */
#define POL_FLEET_CACHE_MAX	(4096 - 1 - sizeof(".minisig.tmp") + 1)
#define POL_FLEET_ENDPOINTS_MAX	16	/* fleet.endpoints */
#define POL_FLEET_PREFIX_MAX	128	/* fleet.prefix */

/* One message, "file:line:col: msg". line and col count from 1. */
struct pol_err {
	char *file;
	char *msg;
	uint32_t line, col;
};

/* Collected messages; start zeroed, release with pol_errs_free(). */
struct pol_errs {
	struct pol_err *v;
	size_t n, cap;
	size_t dropped;		/* errors past POL_ERRS_MAX */
};

void pol_errs_free(struct pol_errs *e);
/* Add one, for a check made after the load (namegate's of the tables' memory, say). */
void pol_err_add(struct pol_errs *e, const char *file, uint32_t line, uint32_t col,
    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Print each as "FILE:LINE:COL: msg" and a count of any dropped. */
void pol_errs_print(FILE *out, const struct pol_errs *e);

enum pol_mode { POL_MODE_ENFORCE, POL_MODE_AUDIT };
enum pol_rcode { POL_RCODE_REFUSED, POL_RCODE_NXDOMAIN };
enum pol_sni_binding { POL_SNI_STRICT, POL_SNI_LOOSE };
enum pol_quic { POL_QUIC_BLOCK, POL_QUIC_INSPECT };
enum pol_on_block { POL_ON_BLOCK_RESET, POL_ON_BLOCK_DROP };
enum pol_ech { POL_ECH_STRIP, POL_ECH_PASS };

#define POL_BUDGETS_MAX	8		/* budgets per policy */
#define POL_SIZE_MAX	(1ULL << 40)	/* the largest budget: 1TiB per window */

/*
 * policies.NAME.budgets[index]: what VMs of the policy may send per window to hosts the
 * pattern host matches (each VM its own window). The pattern is rule index of policy in
 * pol_config.budget_set, so a name or address is matched to its budget as the policy
 * matches it to its rule: exact names, wildcards, address prefixes, the most specific wins.
 */
struct pol_budget {
	uint32_t policy;		/* index in pol_config.set and budget_set */
	uint32_t index;			/* in its policy's list, from 0 */
	char *host;			/* the pattern as written */
	struct pol_pattern pattern;	/* as parsed: never with a port */
	uint64_t upload;		/* bytes per window, 1..POL_SIZE_MAX */
	uint32_t per;			/* the window, seconds */
	uint32_t line, col;		/* the entry in its file */
};

struct pol_vm {
	char *name;
	struct pol_vm_id id;
	uint32_t policy;		/* policy index in pol_config.set */
	/*
	 * Its configured policy's index in pol_config.ask: the same as policy in a loaded
	 * file, and still the configured one in a grants overlay, whose policy is the VM's own.
	 */
	uint32_t ask_policy;
	enum pol_mode mode;
	uint32_t line, col;		/* the entry in pol_config.path */
};

/* A place in the configuration file; line and col count from 1. */
struct pol_pos {
	uint32_t line, col;
};

/* A loaded configuration: every SPEC s3 key, defaults filled in. Immutable once loaded. */
struct pol_config {
	char *path;			/* as given */

	char **eal;			/* dataplane.eal, neal strings; none when not given */
	size_t neal;
	/* where dataplane.eal, each of its neal items, and max_flows were; line 0: not given */
	struct pol_pos eal_pos, *eal_item_pos, max_flows_pos;
	char *vm_port, *uplink_port;
	uint32_t workers;
	uint32_t max_vms;		/* VMs configured at once: the fast path's slots */
	uint32_t max_flows, max_flows_per_vm, max_bindings;
	/* each VM's share of the other tables it can fill (all workers together) */
	uint32_t max_bindings_per_vm, max_pending_per_vm, max_holds_per_vm;
	uint32_t max_fragments_per_vm;
	uint32_t mbufs;			/* packet buffers; 0: enough for the ports' rings */
	uint32_t idle_sleep_us;		/* longest nap of an idle worker; 0: poll without rest */

	bool slow_path_enabled;
	char *nft_table;

	struct pol_addr *resolvers;
	size_t nresolvers;
	uint32_t dns_min_ttl, dns_max_ttl;
	enum pol_rcode dns_blocked_rcode;
	enum pol_ech dns_ech;		/* HTTPS/SVCB answers: their ech param removed, or not */
	/*
	 * dns.max_names_per_suffix: new distinct names a VM may ask for under one wildcard's
	 * suffix per window of dns_names_per seconds (all workers together); 0: no budget.
	 */
	uint32_t dns_names_count, dns_names_per;

	uint16_t *tls_ports;
	size_t ntls_ports;
	enum pol_sni_binding sni_binding;
	enum pol_quic quic;
	enum pol_on_block on_block;

	char *metrics;			/* "addr:port" as written */
	struct pol_addr metrics_addr;
	uint16_t metrics_port;
	char *control_socket;
	/*
	 * control_socket_readonly: a second socket that serves only the read commands, or
	 * NULL for none. The groups (POL_GROUP_NONE: root's) own the sockets' files, so
	 * their members may connect; looked up when the file is loaded.
	 */
	char *control_socket_readonly;
	uint32_t control_socket_gid, control_socket_readonly_gid;
	char *events;
	/*
	 * flow_log: a record per connection (namegate(8), FLOW LOG), or NULL: none. Interim
	 * records of a flow open longer than flow_log_interval seconds (0: none); each
	 * worker's ring holds dataplane.flow_log_ring records on their way to the writer.
	 */
	char *flow_log;
	uint32_t flow_log_interval, flow_log_ring;
	char *grants_state;		/* grants.state; default: grants.json beside events */
	/*
	 * approval: a query for a name only an ask pattern matches waits up to
	 * approval_timeout seconds for namegatectl approve/deny; at most
	 * approval_max_per_vm such queries of one VM wait at once (all workers together).
	 * approval_webhook: a URL each new request is POSTed to, or NULL.
	 */
	uint32_t approval_timeout, approval_max_per_vm;
	char *approval_webhook;
	/*
	 * fleet: this gateway's fleet and shard (NULL: no fleet:), the keys a policy bundle
	 * must be signed with (each a minisign.pub path or its base64 key line, as written:
	 * control/fleet reads them), and the last verified bundle (fleet_cache and
	 * fleet_cache.minisig). With endpoints, the etcd store it shares grants, approvals,
	 * bundles and status in: keys under fleet_prefix ("/namegate/NAME/" unless given),
	 * this gateway's own under fleet_gateway (the host's name unless given), logging in
	 * as fleet_user with the password in fleet_password_file (both NULL: no auth).
	 */
	char *fleet_name, *fleet_shard, *fleet_gateway;
	char **fleet_bundle_keys;
	size_t nfleet_bundle_keys;
	char *fleet_cache;
	char **fleet_endpoints;
	size_t nfleet_endpoints;
	char *fleet_prefix, *fleet_user, *fleet_password_file;
	/*
	 * ha: keepalived's vrrp_notify_fifo (NULL: no pair, the box always forwards), the
	 * vrrp_instance whose lines count (NULL: any instance's), how long the workers may
	 * go without a heartbeat before namegatectl ha --check says no, and whether a new
	 * master announces the VMs' and the uplink's addresses. ha_track_file: keepalived's
	 * track_file namegate writes 0 (may lead) or 1 (stopping), or NULL. Read at start only.
	 */
	char *ha_fifo, *ha_instance, *ha_track_file;
	uint32_t ha_heartbeat_ms;
	bool ha_announce;
	/*
	 * The pair's sync stream: the peer's ADDR:PORT this box sends what it learns to, the
	 * ADDR:PORT it takes its peer's stream on, and the pre-shared key's file (NULL: none).
	 */
	char *ha_sync_peer, *ha_sync_listen, *ha_sync_key;
	/*
	 * The split-brain guard (namegate(8), HA PAIR): this box's priority in the pair
	 * (0: not set), whether a forwarding peer of higher priority shuts this box's gate
	 * (POL_HA_GUARD_REQUIRED, the default with ha:), the beacon's interval, and the
	 * longest a stalled box waits for its peer's resync before it forwards again.
	 */
	uint32_t ha_priority;
	enum pol_ha_guard { POL_HA_GUARD_REQUIRED, POL_HA_GUARD_OFF } ha_guard;
	uint32_t ha_beacon_ms, ha_resync_timeout_ms;

	struct pol_vm *vms;
	size_t nvms;
	struct pol_set *set;		/* the compiled policies */
	struct pol_budget *budgets;	/* every policy's, in file order: a policy's adjacent */
	size_t nbudgets;
	struct pol_set *budget_set;	/* the budgets' host patterns, as allow rules */
	/*
	 * Each policy's ask: patterns, as allow patterns of the policy at the same index: a
	 * name set's lookup says POL_NO_MATCH for and this one POL_ALLOW waits for approval.
	 */
	struct pol_set *ask;
	char **imports;			/* per policy: its import: path resolved, or NULL */
};

/*
 * Load, validate and compile the file at path. Relative import: paths are relative to the
 * file's directory. Returns the configuration (free with pol_config_free()), or NULL with
 * every error found (up to POL_ERRS_MAX) appended to *errs; NULL with errs->n == 0 means
 * out of memory. The daemon must refuse to start, or keep its running generation.
 */
struct pol_config *pol_load_file(const char *path, struct pol_errs *errs);

/*
 * The same from memory: buf (len bytes, need not be NUL-terminated) is reported as file
 * name, and imports are relative to name's directory.
 */
struct pol_config *pol_load_buffer(const char *buf, size_t len, const char *name,
    struct pol_errs *errs);

void pol_config_free(struct pol_config *cfg);

/* Budget index (from 0) of policy, or NULL. */
const struct pol_budget *pol_config_budget(const struct pol_config *cfg, uint32_t policy,
    uint32_t index);

/* The number of budgets policy has (0..POL_BUDGETS_MAX). */
uint32_t pol_config_budgets(const struct pol_config *cfg, uint32_t policy);

/*
 * Parse a byte size, "1500", "1500B", "500k", "100MB", "1GiB" (k/K/kB/KB = 1000, KiB =
 * 1024, and so on to T/TiB), into *out. Returns 0, -EINVAL (not a size: a fraction, a
 * sign, a space, an unknown unit), or -ERANGE (past UINT64_MAX).
 */
int pol_size_parse(const char *s, uint64_t *out);

/* The shortest spelling of n that pol_size_parse() reads back: "100MB", "1GiB", "7B". */
void pol_size_str(uint64_t n, char *buf, size_t len);

/*
 * Whether s (len bytes, no NUL needed) may be a fleet.name or fleet.shard: 1 to
 * POL_FLEET_WORD_MAX letters, digits, '.', '_' and '-'. A bundle's fleet= and shard= too.
 */
bool pol_fleet_word_ok(const char *s, size_t len);

/*
 * A signed bundle's policy in force on this box (issue 27): moves from's policy (its
 * VMs, policies, budgets, resolvers, dns:, tls_ports, sni_binding, quic, on_block and
 * approval's timeout and share) into into, whose box keys (dataplane, slow_path, sockets,
 * logs, grants, approval's webhook, fleet) stay; into's policy goes to from, for the
 * caller to free with it. Returns 0, or -E2BIG with why when from's VMs do not fit
 * into's dataplane.max_vms (nothing moved).
 */
int pol_config_take_policy(struct pol_config *into, struct pol_config *from, char *why,
    size_t whylen);

/* The VM called name, or NULL. */
const struct pol_vm *pol_config_vm(const struct pol_config *cfg, const char *name);

/*
 * Parse one host pattern (SPEC s3 table) into *out: "name", "*.suffix", "addr", "addr/len",
 * "[v6]", "[v6/len]", each with an optional ":port"; a bare IPv6 address or prefix takes no
 * port. Names are canonicalised with ldns (lower case, no trailing dot). Returns 0, or
 * -EINVAL with a message in why (whylen bytes, POL_WHY_MAX is enough).
 */
int pol_pattern_parse(const char *text, struct pol_pattern *out, char *why, size_t whylen);

/*
 * Parse a host a connection goes to, "name[:port]", "v4[:port]", "[v6]:port" or bare "v6":
 * like a pattern but without wildcards or prefixes. *has_port tells whether a port was
 * given. Returns 0 or -EINVAL with a message in why.
 */
int pol_host_parse(const char *text, struct pol_pattern *out, bool *has_port, char *why,
    size_t whylen);

/*
 * namegatectl check: decide host ("name[:port]" or an address) for the VM called vm as the
 * dataplane would: with a port, a TCP/UDP connection to it; without, whether the name
 * may be resolved at all. Prints one line to out, e.g.
 *   allow pypi.org:443 for vm1: policies.dev.allow[0] "pypi.org" (ng.yaml:7)
 * Returns 0 (allow), 1 (block) or 2 (unknown VM, bad host: message on err).
 */
int pol_explain(const struct pol_config *cfg, const char *vm, const char *host, FILE *out,
    FILE *err);

/* namegate --check: print the compiled summary (VMs, policies, pattern counts). */
void pol_config_summary(const struct pol_config *cfg, FILE *out);

/*
 * Called for each allow pattern that lets data out to anyone: rule allowed host, which is
 * risky for the reason given.
 */
typedef void pol_warn_fn(const struct pol_rule *rule, const char *host, const char *reason,
    void *arg);

/* Check every policy against the list of broad hosts; returns the number of warnings. */
size_t pol_warn_scan(const struct pol_config *cfg, pol_warn_fn *fn, void *arg);

/* The same, pol_warn_vlans() and pol_warn_budgets(), printed as "FILE:LINE:COL: warning: ..." lines; the count. */
size_t pol_warn_print(const struct pol_config *cfg, FILE *out);

/*
 * Warn about allow patterns for many hosts (wildcards, address ranges) that no budget of
 * their policy counts; returns how many.
 */
size_t pol_warn_budgets(const struct pol_config *cfg, FILE *out);

/* Warn about VMs that share a VLAN (told apart by what they write); returns how many. */
size_t pol_warn_vlans(const struct pol_config *cfg, FILE *out);

#endif /* POLICY_LOAD_H */

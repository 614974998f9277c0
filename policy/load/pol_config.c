/*
 * The SPEC s3 schema as tables: every key, its node type, its handler and its range.
 * Defaults are in pol_load.c; policies and vms have their own files.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pol_load_int.h"

/* pol_h_enum stores an index through an unsigned int. */
_Static_assert(sizeof(enum pol_rcode) == sizeof(unsigned int), "enum size");
_Static_assert(sizeof(enum pol_sni_binding) == sizeof(unsigned int), "enum size");
_Static_assert(sizeof(enum pol_quic) == sizeof(unsigned int), "enum size");
_Static_assert(sizeof(enum pol_on_block) == sizeof(unsigned int), "enum size");
_Static_assert(sizeof(enum pol_ech) == sizeof(unsigned int), "enum size");
_Static_assert(offsetof(struct pol_config, neal) ==
    offsetof(struct pol_config, eal) + sizeof(char **), "pol_h_str_list layout");

#define CFG(field)	offsetof(struct pol_config, field)
#define POL_FLOWS_MAX	(1u << 28)	/* 256 Mi entries: far beyond any one host's memory */
/* a VM's slot is a uint16_t, and the fast path keeps one more, max_vms, for frames of no VM */
#define POL_VMS_MAX	UINT16_MAX
#define POL_FLOW_LOG_RING_MAX	(1u << 20)	/* records waiting per worker: 368 MiB */
#define POL_FLOW_LOG_INTERVAL_MAX 86400		/* a day between a long flow's records */
#define POL_WORKERS_MAX	128		/* RTE_MAX_LCORE on Debian's DPDK */
#define POL_TTL_MAX	(7u * 86400)

static const char *const pol_rcode_words[] = { "refused", "nxdomain", NULL };
static const char *const pol_sni_words[] = { "strict", "loose", NULL };
static const char *const pol_quic_words[] = { "block", "inspect", NULL };
static const char *const pol_on_block_words[] = { "reset", "drop", NULL };
static const char *const pol_ech_words[] = { "strip", "pass", NULL };

/* An IPv4 or IPv6 address without prefix or port. Returns 0 or -1. */
int
pol_parse_addr(const char *s, struct pol_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (inet_pton(AF_INET, s, a->a) == 1) {
		a->family = 4;
		return 0;
	}
	if (inet_pton(AF_INET6, s, a->a) == 1) {
		a->family = 6;
		return 0;
	}
	return -1;
}

/* A port number 1..65535 in decimal; 0 and junk are -1. */
static int
pol_parse_port(const char *s)
{
	unsigned long v = 0;

	if (s[0] == '\0' || strlen(s) > 5 || strspn(s, "0123456789") != strlen(s))
		return -1;
	v = strtoul(s, NULL, 10);
	return v >= 1 && v <= 65535 ? (int)v : -1;
}

static int
pol_h_resolvers(struct pol_ctx *c, yaml_node_t *n, const struct pol_field *f, void *obj,
    const char *path)
{
	struct pol_config *cfg = obj;
	size_t len = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	struct pol_addr *v;
	int rc = 0;

	(void)f;
	if (len > POL_RESOLVERS_MAX)	/* else --check says OK to a file the daemon refuses */
		return pol_err_node(c, n, "%s: %zu resolvers, at most %d", path, len,
		    POL_RESOLVERS_MAX);
	if ((v = calloc(len + 1, sizeof(*v))) == NULL)
		return pol_err_node(c, n, "out of memory");
	free(cfg->resolvers);
	cfg->resolvers = v;
	cfg->nresolvers = 0;
	for (size_t i = 0; i < len; i++) {
		yaml_node_t *e = pol_node(c, n->data.sequence.items.start[i]);
		char sub[POL_PATH_MAX];
		const char *s;

		if (e == NULL)
			return -1;
		snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
		if ((s = pol_scalar(c, e, sub)) == NULL) {
			rc = -1;
		} else if (pol_parse_addr(s, &v[cfg->nresolvers]) != 0) {
			rc = pol_err_node(c, e, "%s: bad address \"%s\" (an IPv4 or IPv6 address)",
			    sub, s);
		} else {
			cfg->nresolvers++;
		}
	}
	return rc;
}

static int
pol_h_ports(struct pol_ctx *c, yaml_node_t *n, const struct pol_field *f, void *obj,
    const char *path)
{
	struct pol_config *cfg = obj;
	size_t len = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	uint16_t *v;
	int rc = 0;

	(void)f;
	if (len > POL_TLS_PORTS_MAX)
		return pol_err_node(c, n, "%s: %zu ports, at most %d", path, len, POL_TLS_PORTS_MAX);
	if ((v = calloc(len + 1, sizeof(*v))) == NULL)
		return pol_err_node(c, n, "out of memory");
	free(cfg->tls_ports);
	cfg->tls_ports = v;
	cfg->ntls_ports = 0;
	for (size_t i = 0; i < len; i++) {
		yaml_node_t *e = pol_node(c, n->data.sequence.items.start[i]);
		char sub[POL_PATH_MAX];
		const char *s;
		int port;

		if (e == NULL)
			return -1;
		snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
		if ((s = pol_scalar(c, e, sub)) == NULL) {
			rc = -1;
			continue;
		}
		if ((port = pol_parse_port(s)) < 0) {
			rc = pol_err_node(c, e, "%s: port \"%s\" out of range (1..65535)", sub, s);
			continue;
		}
		for (size_t k = 0; k < cfg->ntls_ports; k++)
			if (v[k] == port)
				port = -1;
		if (port < 0)
			rc = pol_err_node(c, e, "%s: duplicate port %s", sub, s);
		else
			v[cfg->ntls_ports++] = (uint16_t)port;
	}
	return rc;
}

/* "127.0.0.1:9477" or "[::1]:9477". */
static int
pol_h_metrics(struct pol_ctx *c, yaml_node_t *n, const struct pol_field *f, void *obj,
    const char *path)
{
	struct pol_config *cfg = obj;
	char host[64];
	const char *s, *colon, *h = NULL;
	size_t hlen;
	int port;

	if ((s = pol_scalar(c, n, path)) == NULL)
		return -1;
	if ((colon = strrchr(s, ':')) == NULL)
		return pol_err_node(c, n, "%s: expected ADDRESS:PORT, got \"%s\"", path, s);
	if (s[0] == '[') {
		if (colon == s || colon[-1] != ']')
			return pol_err_node(c, n, "%s: expected [IPv6]:PORT, got \"%s\"", path, s);
		h = s + 1;
		hlen = (size_t)(colon - 1 - h);
	} else {
		h = s;
		hlen = (size_t)(colon - s);
	}
	if (hlen >= sizeof(host))
		return pol_err_node(c, n, "%s: bad address in \"%s\"", path, s);
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	if (pol_parse_addr(host, &cfg->metrics_addr) != 0 ||
	    (s[0] == '[') != (cfg->metrics_addr.family == 6))
		return pol_err_node(c, n, "%s: bad address \"%s\"", path, host);
	if ((port = pol_parse_port(colon + 1)) < 0)
		return pol_err_node(c, n, "%s: port \"%s\" out of range (1..65535)", path,
		    colon + 1);
	cfg->metrics_port = (uint16_t)port;
	return pol_h_str(c, n, f, obj, path);
}

/* dataplane.max_vms: an integer, and past POL_VMS_MAX the reason there is a most. */
static int
pol_h_max_vms(struct pol_ctx *c, yaml_node_t *n, const struct pol_field *f, void *obj,
    const char *path)
{
	const char *v = n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : "";

	if (v[0] != '\0' && strspn(v, "0123456789") == strlen(v) &&
	    (strlen(v) > 10 || strtoull(v, NULL, 10) > f->max))
		return pol_err_node(c, n, "%s: %s is more than %u: a VM's slot is a 16-bit number, "
		    "and one is kept for frames from no VM", path, v, f->max);
	return pol_h_u32(c, n, f, obj, path);
}

static const struct pol_field pol_dataplane_fields[] = {
	{ "eal", YAML_SEQUENCE_NODE, pol_h_str_list, CFG(eal), 0, 0, NULL, NULL, false },
	{ "vm_port", YAML_SCALAR_NODE, pol_h_str, CFG(vm_port), 0, 0, NULL, NULL, false },
	{ "uplink_port", YAML_SCALAR_NODE, pol_h_str, CFG(uplink_port), 0, 0, NULL, NULL, false },
	{ "workers", YAML_SCALAR_NODE, pol_h_u32, CFG(workers), 1, POL_WORKERS_MAX, NULL, NULL,
	    false },
	{ "max_vms", YAML_SCALAR_NODE, pol_h_max_vms, CFG(max_vms), 1, POL_VMS_MAX, NULL, NULL,
	    false },
	{ "max_flows", YAML_SCALAR_NODE, pol_h_u32, CFG(max_flows), 1, POL_FLOWS_MAX, NULL, NULL,
	    false },
	{ "max_flows_per_vm", YAML_SCALAR_NODE, pol_h_u32, CFG(max_flows_per_vm), 1,
	    POL_FLOWS_MAX, NULL, NULL, false },
	{ "max_bindings", YAML_SCALAR_NODE, pol_h_u32, CFG(max_bindings), 1, POL_FLOWS_MAX, NULL,
	    NULL, false },
	{ "max_bindings_per_vm", YAML_SCALAR_NODE, pol_h_u32, CFG(max_bindings_per_vm), 1,
	    POL_FLOWS_MAX, NULL, NULL, false },
	{ "max_pending_per_vm", YAML_SCALAR_NODE, pol_h_u32, CFG(max_pending_per_vm), 1,
	    POL_FLOWS_MAX, NULL, NULL, false },
	{ "max_holds_per_vm", YAML_SCALAR_NODE, pol_h_u32, CFG(max_holds_per_vm), 1,
	    POL_FLOWS_MAX, NULL, NULL, false },
	{ "max_fragments_per_vm", YAML_SCALAR_NODE, pol_h_u32, CFG(max_fragments_per_vm), 1,
	    POL_FLOWS_MAX, NULL, NULL, false },
	{ "mbufs", YAML_SCALAR_NODE, pol_h_u32, CFG(mbufs), 0, POL_FLOWS_MAX, NULL, NULL, false },
	{ "idle_sleep_us", YAML_SCALAR_NODE, pol_h_u32, CFG(idle_sleep_us), 0, 10000, NULL, NULL,
	    false },
	{ "flow_log_ring", YAML_SCALAR_NODE, pol_h_u32, CFG(flow_log_ring), 64,
	    POL_FLOW_LOG_RING_MAX, NULL, NULL, false },
	{ NULL, 0, NULL, 0, 0, 0, NULL, NULL, false },
};

#define POL_DNS_NAMES_MAX	1000000		/* new names per suffix and window */
#define POL_DNS_WINDOW_MAX	604800		/* a week: longer is no budget anyone reasons about */

/* dns.max_names_per_suffix: { count: N, per: DURATION }; count 0 turns the budget off. */
static const struct pol_field pol_dns_names_fields[] = {
	{ "count", YAML_SCALAR_NODE, pol_h_u32, CFG(dns_names_count), 0, POL_DNS_NAMES_MAX,
	    NULL, NULL, false },
	{ "per", YAML_SCALAR_NODE, pol_h_duration, CFG(dns_names_per), 1, POL_DNS_WINDOW_MAX,
	    NULL, NULL, false },
	{ NULL, 0, NULL, 0, 0, 0, NULL, NULL, false },
};

static const struct pol_field pol_dns_fields[] = {
	{ "min_ttl", YAML_SCALAR_NODE, pol_h_u32, CFG(dns_min_ttl), 0, POL_TTL_MAX, NULL, NULL,
	    false },
	{ "max_ttl", YAML_SCALAR_NODE, pol_h_u32, CFG(dns_max_ttl), 1, POL_TTL_MAX, NULL, NULL,
	    false },
	{ "blocked_rcode", YAML_SCALAR_NODE, pol_h_enum, CFG(dns_blocked_rcode), 0, 0,
	    pol_rcode_words, NULL, false },
	{ "ech", YAML_SCALAR_NODE, pol_h_enum, CFG(dns_ech), 0, 0, pol_ech_words, NULL, false },
	{ "max_names_per_suffix", YAML_MAPPING_NODE, pol_h_map, 0, 0, 0, NULL,
	    pol_dns_names_fields, false },
	{ NULL, 0, NULL, 0, 0, 0, NULL, NULL, false },
};

static struct pol_pos
pol_node_pos(const yaml_node_t *n)
{
	if (n == NULL)
		return (struct pol_pos){ 0, 0 };
	return (struct pol_pos){ (uint32_t)n->start_mark.line + 1,
		(uint32_t)n->start_mark.column + 1 };
}

/*
 * Where dataplane.eal, each of its items and max_flows were written: namegate (which
 * reads EAL's arguments and knows what the tables cost; the loader does neither) points
 * there when the tables cannot fit.
 */
static int
pol_dataplane_positions(struct pol_ctx *c, yaml_node_t *n, struct pol_config *cfg)
{
	yaml_node_t *eal = pol_map_get(c, n, "eal");
	size_t k = 0;

	cfg->eal_pos = pol_node_pos(eal);
	cfg->max_flows_pos = pol_node_pos(pol_map_get(c, n, "max_flows"));
	if (eal == NULL || eal->type != YAML_SEQUENCE_NODE || cfg->neal == 0)
		return 0;
	free(cfg->eal_item_pos);
	if ((cfg->eal_item_pos = calloc(cfg->neal, sizeof(cfg->eal_item_pos[0]))) == NULL)
		return pol_err_node(c, eal, "out of memory");
	for (yaml_node_item_t *i = eal->data.sequence.items.start;
	    i < eal->data.sequence.items.top && k < cfg->neal; i++)
		cfg->eal_item_pos[k++] = pol_node_pos(yaml_document_get_node(c->doc, *i));
	return 0;
}

/* Checks between keys of one mapping come after its walk, at the later key's position. */
static int
pol_h_dataplane(struct pol_ctx *c, yaml_node_t *n, const struct pol_field *f, void *obj,
    const char *path)
{
	struct pol_config *cfg = obj;
	yaml_node_t *v;

	if (pol_walk_map(c, n, f->sub, obj, path) < 0)
		return -1;
	if (pol_dataplane_positions(c, n, cfg) < 0)
		return -1;
	if (cfg->max_flows_per_vm > cfg->max_flows) {
		v = pol_map_get(c, n, "max_flows_per_vm");
		return pol_err_node(c, v != NULL ? v : n,
		    "%s.max_flows_per_vm: %u is more than max_flows (%u)", path,
		    cfg->max_flows_per_vm, cfg->max_flows);
	}
	return 0;
}

static int
pol_h_dns(struct pol_ctx *c, yaml_node_t *n, const struct pol_field *f, void *obj,
    const char *path)
{
	struct pol_config *cfg = obj;
	yaml_node_t *v;

	if (pol_walk_map(c, n, f->sub, obj, path) < 0)
		return -1;
	if (cfg->dns_min_ttl > cfg->dns_max_ttl) {
		v = pol_map_get(c, n, "max_ttl");
		if (v == NULL)
			v = pol_map_get(c, n, "min_ttl");
		return pol_err_node(c, v != NULL ? v : n, "%s: min_ttl %u is more than max_ttl %u",
		    path, cfg->dns_min_ttl, cfg->dns_max_ttl);
	}
	return 0;
}

/* nft_table becomes a netlink name: keep to what nft(8) can print unquoted. */
static int
pol_h_nft_table(struct pol_ctx *c, yaml_node_t *n, const struct pol_field *f, void *obj,
    const char *path)
{
	const char *s;

	if ((s = pol_scalar(c, n, path)) == NULL)
		return -1;
	if (strlen(s) == 0 || strlen(s) > 32 ||
	    strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") !=
	    strlen(s) || (s[0] >= '0' && s[0] <= '9'))
		return pol_err_node(c, n, "%s: \"%s\" is not a table name (letters, digits, _, "
		    "at most 32, not starting with a digit)", path, s);
	return pol_h_str(c, n, f, obj, path);
}

#define POL_GROUP_BUF_MAX	(1u << 20)	/* getgrnam_r's room for a group's members */

/*
 * A control socket's group: a name, or a number, looked up now so a typo is an error at
 * --check and start, not a socket nobody can reach.
 */
static int
pol_h_group(struct pol_ctx *c, yaml_node_t *n, const struct pol_field *f, void *obj,
    const char *path)
{
	uint32_t *gid = (uint32_t *)((char *)obj + f->off);
	struct group gr, *res = NULL;
	size_t len = 1024;
	char *buf = NULL;
	const char *s;
	int rc;

	if ((s = pol_scalar(c, n, path)) == NULL)
		return -1;
	do {
		char *nb;

		len *= 4;
		if ((nb = realloc(buf, len)) == NULL) {
			free(buf);
			return pol_err_node(c, n, "out of memory");
		}
		buf = nb;
		rc = getgrnam_r(s, &gr, buf, len, &res);
	} while (rc == ERANGE && len < POL_GROUP_BUF_MAX);
	if (rc == 0 && res != NULL) {
		*gid = (uint32_t)gr.gr_gid;
		free(buf);
		return 0;
	}
	free(buf);
	if (s[0] != '\0' && strlen(s) <= 9 && strspn(s, "0123456789") == strlen(s)) {
		*gid = (uint32_t)strtoul(s, NULL, 10);
		return 0;
	}
	return pol_err_node(c, n, "%s: no group \"%s\" on this host%s%s", path, s,
	    rc != 0 ? ": " : "", rc != 0 ? strerror(rc) : "");
}

void
pol_sockets_check(struct pol_ctx *c, yaml_node_t *root)
{
	const struct pol_config *cfg = c->cfg;
	yaml_node_t *n;

	if (root == NULL || root->type != YAML_MAPPING_NODE)
		return;		/* reported by the walk */
	if (cfg->control_socket_readonly == NULL) {
		if ((n = pol_map_get(c, root, "control_socket_readonly_group")) != NULL)
			pol_err_node(c, n, "control_socket_readonly_group: there is no "
			    "control_socket_readonly to give it to");
		return;
	}
	if (strcmp(cfg->control_socket_readonly, cfg->control_socket) == 0 &&
	    (n = pol_map_get(c, root, "control_socket_readonly")) != NULL)
		pol_err_node(c, n, "control_socket_readonly: \"%s\" is control_socket too",
		    cfg->control_socket);
}

static const struct pol_field pol_slow_path_fields[] = {
	{ "enabled", YAML_SCALAR_NODE, pol_h_bool, CFG(slow_path_enabled), 0, 0, NULL, NULL,
	    false },
	{ "nft_table", YAML_SCALAR_NODE, pol_h_nft_table, CFG(nft_table), 0, 0, NULL, NULL,
	    false },
	{ NULL, 0, NULL, 0, 0, 0, NULL, NULL, false },
};

static const struct pol_field pol_grants_fields[] = {
	{ "state", YAML_SCALAR_NODE, pol_h_str, CFG(grants_state), 0, 0, NULL, NULL, false },
	{ NULL, 0, NULL, 0, 0, 0, NULL, NULL, false },
};

#define POL_APPROVAL_TIMEOUT_MAX	60	/* a stub gives up long before */
#define POL_APPROVAL_PER_VM_MAX		64

static const struct pol_field pol_approval_fields[] = {
	{ "timeout", YAML_SCALAR_NODE, pol_h_duration, CFG(approval_timeout), 1,
	    POL_APPROVAL_TIMEOUT_MAX, NULL, NULL, false },
	{ "max_pending_per_vm", YAML_SCALAR_NODE, pol_h_u32, CFG(approval_max_per_vm), 1,
	    POL_APPROVAL_PER_VM_MAX, NULL, NULL, false },
	{ "webhook", YAML_SCALAR_NODE, pol_h_str, CFG(approval_webhook), 0, 0, NULL, NULL,
	    false },
	{ NULL, 0, NULL, 0, 0, 0, NULL, NULL, false },
};

const struct pol_field pol_top_fields[] = {
	{ "dataplane", YAML_MAPPING_NODE, pol_h_dataplane, 0, 0, 0, NULL, pol_dataplane_fields,
	    false },
	{ "slow_path", YAML_MAPPING_NODE, pol_h_map, 0, 0, 0, NULL, pol_slow_path_fields,
	    false },
	{ "resolvers", YAML_SEQUENCE_NODE, pol_h_resolvers, 0, 0, 0, NULL, NULL, false },
	{ "dns", YAML_MAPPING_NODE, pol_h_dns, 0, 0, 0, NULL, pol_dns_fields, false },
	{ "tls_ports", YAML_SEQUENCE_NODE, pol_h_ports, 0, 0, 0, NULL, NULL, false },
	{ "sni_binding", YAML_SCALAR_NODE, pol_h_enum, CFG(sni_binding), 0, 0, pol_sni_words,
	    NULL, false },
	{ "quic", YAML_SCALAR_NODE, pol_h_enum, CFG(quic), 0, 0, pol_quic_words, NULL, false },
	{ "on_block", YAML_SCALAR_NODE, pol_h_enum, CFG(on_block), 0, 0, pol_on_block_words,
	    NULL, false },
	{ "metrics", YAML_SCALAR_NODE, pol_h_metrics, CFG(metrics), 0, 0, NULL, NULL, false },
	{ "control_socket", YAML_SCALAR_NODE, pol_h_str, CFG(control_socket), 0, 0, NULL, NULL,
	    false },
	{ "control_socket_group", YAML_SCALAR_NODE, pol_h_group, CFG(control_socket_gid), 0, 0,
	    NULL, NULL, false },
	{ "control_socket_readonly", YAML_SCALAR_NODE, pol_h_str, CFG(control_socket_readonly),
	    0, 0, NULL, NULL, false },
	{ "control_socket_readonly_group", YAML_SCALAR_NODE, pol_h_group,
	    CFG(control_socket_readonly_gid), 0, 0, NULL, NULL, false },
	{ "events", YAML_SCALAR_NODE, pol_h_str, CFG(events), 0, 0, NULL, NULL, false },
	{ "flow_log", YAML_SCALAR_NODE, pol_h_str, CFG(flow_log), 0, 0, NULL, NULL, false },
	{ "flow_log_interval", YAML_SCALAR_NODE, pol_h_duration, CFG(flow_log_interval), 0,
	    POL_FLOW_LOG_INTERVAL_MAX, NULL, NULL, false },
	{ "grants", YAML_MAPPING_NODE, pol_h_map, 0, 0, 0, NULL, pol_grants_fields, false },
	{ "approval", YAML_MAPPING_NODE, pol_h_map, 0, 0, 0, NULL, pol_approval_fields, false },
	{ "fleet", YAML_MAPPING_NODE, pol_h_fleet, 0, 0, 0, NULL, pol_fleet_fields, false },
	{ "ha", YAML_MAPPING_NODE, pol_h_map, 0, 0, 0, NULL, pol_ha_fields, false },
	{ "policies", YAML_MAPPING_NODE, pol_h_policies, 0, 0, 0, NULL, pol_policy_fields,
	    true },
	{ "vms", YAML_SEQUENCE_NODE, pol_h_vms, 0, 0, 0, NULL, pol_vm_fields, true },
	{ NULL, 0, NULL, 0, 0, 0, NULL, NULL, false },
};

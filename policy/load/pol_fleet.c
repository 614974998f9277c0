/*
 * fleet: in the configuration (issue 27): which fleet and shard a gateway is, whose
 * bundles it trusts, and the etcd store it meets the rest of the fleet in. Also the rule
 * by which a signed bundle's policy meets this box's own file (pol_config_take_policy()).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pol_load_int.h"

#define CFG(field)	offsetof(struct pol_config, field)
#define POL_FLEET_ENDPOINT_MAX	200	/* "http://host:port" */

_Static_assert(offsetof(struct pol_config, nfleet_bundle_keys) ==
    offsetof(struct pol_config, fleet_bundle_keys) + sizeof(char **), "pol_h_str_list layout");
_Static_assert(offsetof(struct pol_config, nfleet_endpoints) ==
    offsetof(struct pol_config, fleet_endpoints) + sizeof(char **), "pol_h_str_list layout");

bool
pol_fleet_word_ok(const char *s, size_t len)
{
	if (len == 0 || len > POL_FLEET_WORD_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		    (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '_' || s[i] == '-'))
			return false;
	return true;
}

/* fleet.name, .shard, .gateway: words that go into etcd keys and a bundle's comment */
static int
pol_h_fleet_word(struct pol_ctx *c, yaml_node_t *n, const struct pol_field *f, void *obj,
    const char *path)
{
	const char *s;

	if ((s = pol_scalar(c, n, path)) == NULL)
		return -1;
	if (!pol_fleet_word_ok(s, strlen(s)))
		return pol_err_node(c, n, "%s: \"%s\" is not a name (letters, digits, '.', '_', "
		    "'-', 1 to %d)", path, s, POL_FLEET_WORD_MAX);
	return pol_h_str(c, n, f, obj, path);
}

static int
pol_h_fleet_keys(struct pol_ctx *c, yaml_node_t *n, const struct pol_field *f, void *obj,
    const char *path)
{
	size_t len = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);

	if (len == 0 || len > POL_FLEET_KEYS_MAX)
		return pol_err_node(c, n, "%s: %zu keys, 1 to %d", path, len, POL_FLEET_KEYS_MAX);
	return pol_h_str_list(c, n, f, obj, path);
}

/* etcd's client URLs: http:// or https://, a host and a port, nothing a shell would read */
static int
pol_h_fleet_endpoints(struct pol_ctx *c, yaml_node_t *n, const struct pol_field *f, void *obj,
    const char *path)
{
	size_t len = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);

	if (len == 0 || len > POL_FLEET_ENDPOINTS_MAX)
		return pol_err_node(c, n, "%s: %zu endpoints, 1 to %d", path, len,
		    POL_FLEET_ENDPOINTS_MAX);
	for (yaml_node_item_t *it = n->data.sequence.items.start;
	    it < n->data.sequence.items.top; it++) {
		yaml_node_t *item = pol_node(c, *it);
		const char *s = item != NULL && item->type == YAML_SCALAR_NODE ?
		    (const char *)item->data.scalar.value : NULL;
		const char *rest;

		if (s == NULL)
			continue;	/* pol_h_str_list says what it is */
		rest = strncmp(s, "http://", 7) == 0 ? s + 7 : strncmp(s, "https://", 8) == 0 ?
		    s + 8 : NULL;
		if (rest == NULL || *rest == '\0' || strlen(s) > POL_FLEET_ENDPOINT_MAX ||
		    strpbrk(rest, " \t/?#@\"'\\") != NULL)
			return pol_err_node(c, item, "%s: \"%.64s\" is not an etcd client URL "
			    "(http://HOST:PORT or https://HOST:PORT)", path, s);
	}
	return pol_h_str_list(c, n, f, obj, path);
}

/* fleet.prefix: "/namegate/NAME/" by default; a key path, so no "..", ends in '/' */
static int
pol_h_fleet_prefix(struct pol_ctx *c, yaml_node_t *n, const struct pol_field *f, void *obj,
    const char *path)
{
	const char *s;
	size_t len;

	if ((s = pol_scalar(c, n, path)) == NULL)
		return -1;
	len = strlen(s);
	if (len < 2 || len > POL_FLEET_PREFIX_MAX || s[0] != '/' || s[len - 1] != '/' ||
	    strstr(s, "..") != NULL || strstr(s, "//") != NULL)
		return pol_err_node(c, n, "%s: \"%.64s\" is not a key prefix (from '/' to '/', "
		    "at most %d bytes, no \"..\" or \"//\")", path, s, POL_FLEET_PREFIX_MAX);
	for (size_t i = 1; i < len - 1; i++)
		if (s[i] != '/' && !pol_fleet_word_ok(&s[i], 1))
			return pol_err_node(c, n, "%s: \"%.64s\": letters, digits, '.', '_', '-' "
			    "and '/' only", path, s);
	return pol_h_str(c, n, f, obj, path);
}

/* fleet.cache: a path whose siblings fit (POL_FLEET_CACHE_MAX). */
static int
pol_h_fleet_cache(struct pol_ctx *c, yaml_node_t *n, const struct pol_field *f, void *obj,
    const char *path)
{
	size_t len;

	if (pol_h_str(c, n, f, obj, path) < 0)
		return -1;
	if ((len = strlen(*(char **)((char *)obj + f->off))) > POL_FLEET_CACHE_MAX)
		return pol_err_node(c, n, "%s: a path of %zu bytes, at most %zu (FILE.minisig.tmp "
		    "beside it must fit 4,095)", path, len, (size_t)POL_FLEET_CACHE_MAX);
	return 0;
}

const struct pol_field pol_fleet_fields[] = {
	{ "name", YAML_SCALAR_NODE, pol_h_fleet_word, CFG(fleet_name), 0, 0, NULL, NULL,
	    false },
	{ "shard", YAML_SCALAR_NODE, pol_h_fleet_word, CFG(fleet_shard), 0, 0, NULL, NULL,
	    false },
	{ "gateway", YAML_SCALAR_NODE, pol_h_fleet_word, CFG(fleet_gateway), 0, 0, NULL, NULL,
	    false },
	{ "bundle_keys", YAML_SEQUENCE_NODE, pol_h_fleet_keys, CFG(fleet_bundle_keys), 0, 0,
	    NULL, NULL, false },
	{ "cache", YAML_SCALAR_NODE, pol_h_fleet_cache, CFG(fleet_cache), 0, 0, NULL, NULL,
	    false },
	{ "endpoints", YAML_SEQUENCE_NODE, pol_h_fleet_endpoints, CFG(fleet_endpoints), 0, 0,
	    NULL, NULL, false },
	{ "prefix", YAML_SCALAR_NODE, pol_h_fleet_prefix, CFG(fleet_prefix), 0, 0, NULL, NULL,
	    false },
	{ "user", YAML_SCALAR_NODE, pol_h_fleet_word, CFG(fleet_user), 0, 0, NULL, NULL,
	    false },
	{ "password_file", YAML_SCALAR_NODE, pol_h_str, CFG(fleet_password_file), 0, 0, NULL,
	    NULL, false },
	{ NULL, 0, NULL, 0, 0, 0, NULL, NULL, false },
};

/* What the walk leaves unsaid: the gateway's name (the host's) and the key prefix. */
static int
pol_fleet_defaults(struct pol_ctx *c, yaml_node_t *n, const char *path)
{
	struct pol_config *cfg = c->cfg;
	char host[256] = "";

	if (cfg->fleet_gateway == NULL) {
		char *dot;

		if (gethostname(host, sizeof(host) - 1) != 0)
			host[0] = '\0';
		if ((dot = strchr(host, '.')) != NULL)
			*dot = '\0';
		if (!pol_fleet_word_ok(host, strlen(host)))
			return pol_err_node(c, n, "%s: gateway: the host name \"%.64s\" is not a "
			    "name; say gateway:", path, host);
		if ((cfg->fleet_gateway = strdup(host)) == NULL)
			return pol_err_fatal(c, n, "out of memory");
	}
	if (cfg->fleet_prefix == NULL) {
		size_t len = strlen(cfg->fleet_name) + sizeof("/namegate//");

		if ((cfg->fleet_prefix = malloc(len)) == NULL)
			return pol_err_fatal(c, n, "out of memory");
		snprintf(cfg->fleet_prefix, len, "/namegate/%s/", cfg->fleet_name);
	}
	return 0;
}

/* A gateway in a fleet knows which fleet and shard it is, and whose bundles it trusts. */
int
pol_h_fleet(struct pol_ctx *c, yaml_node_t *n, const struct pol_field *f, void *obj,
    const char *path)
{
	static const char *const need[] = { "name", "shard", "bundle_keys" };
	bool user, pass;

	if (pol_walk_map(c, n, f->sub, obj, path) < 0)
		return -1;
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		if (pol_map_get(c, n, need[i]) == NULL)
			return pol_err_node(c, n, "%s: %s is required", path, need[i]);
	user = pol_map_get(c, n, "user") != NULL;
	pass = pol_map_get(c, n, "password_file") != NULL;
	if (user != pass)
		return pol_err_node(c, n, "%s: user and password_file go together", path);
	if (user && pol_map_get(c, n, "endpoints") == NULL)
		return pol_err_node(c, n, "%s: user without endpoints: no store to log in to",
		    path);
	return pol_fleet_defaults(c, n, path);
}

#define POL_SWAP(a, b)	do { __typeof__(a) t_ = (a); (a) = (b); (b) = t_; } while (0)

int
pol_config_take_policy(struct pol_config *into, struct pol_config *from, char *why,
    size_t whylen)
{
	if (from->nvms > into->max_vms) {
		snprintf(why, whylen, "%zu VMs, more than this gateway's dataplane.max_vms (%u)",
		    from->nvms, into->max_vms);
		return -E2BIG;
	}
	POL_SWAP(into->resolvers, from->resolvers);
	POL_SWAP(into->nresolvers, from->nresolvers);
	POL_SWAP(into->dns_min_ttl, from->dns_min_ttl);
	POL_SWAP(into->dns_max_ttl, from->dns_max_ttl);
	POL_SWAP(into->dns_blocked_rcode, from->dns_blocked_rcode);
	POL_SWAP(into->dns_ech, from->dns_ech);
	POL_SWAP(into->dns_names_count, from->dns_names_count);
	POL_SWAP(into->dns_names_per, from->dns_names_per);
	POL_SWAP(into->tls_ports, from->tls_ports);
	POL_SWAP(into->ntls_ports, from->ntls_ports);
	POL_SWAP(into->sni_binding, from->sni_binding);
	POL_SWAP(into->quic, from->quic);
	POL_SWAP(into->on_block, from->on_block);
	POL_SWAP(into->approval_timeout, from->approval_timeout);
	POL_SWAP(into->approval_max_per_vm, from->approval_max_per_vm);
	POL_SWAP(into->vms, from->vms);
	POL_SWAP(into->nvms, from->nvms);
	POL_SWAP(into->set, from->set);
	POL_SWAP(into->budgets, from->budgets);
	POL_SWAP(into->nbudgets, from->nbudgets);
	POL_SWAP(into->budget_set, from->budget_set);
	POL_SWAP(into->ask, from->ask);
	POL_SWAP(into->imports, from->imports);
	return 0;
}

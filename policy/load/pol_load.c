/*
 * Entry points: defaults, walk, compile, cross-checks. A load either returns a complete,
 * valid configuration or nothing (fail closed): callers never see a half-read file.
 */
#include <errno.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>

#include "pol_load_int.h"

static char *
pol_dup(const char *s, bool *ok)
{
	char *d = strdup(s);

	if (d == NULL)
		*ok = false;
	return d;
}

/* SPEC s3: every key but vms and policies has a default. */
static int
pol_defaults(struct pol_config *cfg, const char *path)
{
	bool ok = true;

	cfg->path = pol_dup(path, &ok);
	/* no dataplane.eal: the daemon derives EAL's arguments from the ports and the tables */
	if ((cfg->eal = calloc(1, sizeof(char *))) == NULL)
		return -ENOMEM;
	cfg->vm_port = pol_dup("net_af_packet0,iface=ng-vm", &ok);
	cfg->uplink_port = pol_dup("net_af_packet1,iface=ng-up", &ok);
	cfg->workers = 1;
	cfg->max_vms = 1024;
	cfg->max_flows = 1048576;
	cfg->max_flows_per_vm = 65536;
	cfg->max_bindings = 1048576;
	cfg->max_bindings_per_vm = 65536;
	cfg->max_pending_per_vm = 1024;
	cfg->max_holds_per_vm = 32;
	cfg->max_fragments_per_vm = 8;
	cfg->idle_sleep_us = 1000;
	cfg->flow_log_interval = 300;
	cfg->flow_log_ring = 8192;
	cfg->slow_path_enabled = true;
	cfg->nft_table = pol_dup("namegate", &ok);
	if ((cfg->resolvers = calloc(1, sizeof(*cfg->resolvers))) == NULL)
		return -ENOMEM;
	pol_parse_addr("10.77.0.1", &cfg->resolvers[0]);
	cfg->nresolvers = 1;
	cfg->dns_min_ttl = 300;
	cfg->dns_max_ttl = 86400;
	cfg->dns_blocked_rcode = POL_RCODE_REFUSED;
	cfg->dns_ech = POL_ECH_STRIP;
	/*
	 * On by default and generous: the names a workload really uses under one wildcard
	 * (CDN shards, buckets, user-content hosts) are tens an hour, while 1000 new names
	 * of up to 253 bytes an hour is at most ~250 kB of labels, not megabytes a minute.
	 */
	cfg->dns_names_count = 1000;
	cfg->dns_names_per = 3600;
	/* within common stubs' retry windows (glibc: 5 s x 2 tries; systemd-resolved more) */
	cfg->approval_timeout = 8;
	cfg->approval_max_per_vm = 8;
	if ((cfg->tls_ports = calloc(2, sizeof(*cfg->tls_ports))) == NULL)
		return -ENOMEM;
	cfg->tls_ports[0] = 443;
	cfg->tls_ports[1] = 8443;
	cfg->ntls_ports = 2;
	cfg->sni_binding = POL_SNI_STRICT;
	cfg->quic = POL_QUIC_BLOCK;
	cfg->on_block = POL_ON_BLOCK_RESET;
	cfg->metrics = pol_dup("127.0.0.1:9477", &ok);
	pol_parse_addr("127.0.0.1", &cfg->metrics_addr);
	cfg->metrics_port = 9477;
	cfg->control_socket = pol_dup("/run/namegate/namegate.sock", &ok);
	cfg->control_socket_gid = cfg->control_socket_readonly_gid = POL_GROUP_NONE;
	cfg->events = pol_dup("/var/log/namegate/events.jsonl", &ok);
	/* state, not a log: systemd's StateDirectory, which logrotate never touches */
	cfg->grants_state = pol_dup("/var/lib/namegate/grants.json", &ok);
	cfg->fleet_cache = pol_dup("/var/lib/namegate/bundle.yaml", &ok);
	cfg->ha_heartbeat_ms = 1000;
	cfg->ha_announce = true;
	cfg->ha_guard = POL_HA_GUARD_REQUIRED;
	cfg->ha_beacon_ms = 100;
	cfg->ha_resync_timeout_ms = 30000;
	return ok ? 0 : -ENOMEM;
}

void
pol_config_free(struct pol_config *cfg)
{
	uint32_t npol;

	if (cfg == NULL)
		return;
	npol = pol_set_policies(cfg->set);
	for (size_t i = 0; cfg->eal != NULL && i < cfg->neal; i++)
		free(cfg->eal[i]);
	for (size_t i = 0; cfg->vms != NULL && i < cfg->nvms; i++)
		free(cfg->vms[i].name);
	for (size_t i = 0; cfg->imports != NULL && i < npol; i++)
		free(cfg->imports[i]);
	free(cfg->imports);
	free(cfg->eal);
	free(cfg->eal_item_pos);
	free(cfg->path);
	free(cfg->vm_port);
	free(cfg->uplink_port);
	free(cfg->nft_table);
	free(cfg->resolvers);
	free(cfg->tls_ports);
	free(cfg->metrics);
	free(cfg->control_socket);
	free(cfg->control_socket_readonly);
	free(cfg->events);
	free(cfg->flow_log);
	free(cfg->grants_state);
	free(cfg->approval_webhook);
	free(cfg->fleet_name);
	free(cfg->fleet_shard);
	for (size_t i = 0; cfg->fleet_bundle_keys != NULL && i < cfg->nfleet_bundle_keys; i++)
		free(cfg->fleet_bundle_keys[i]);
	free(cfg->fleet_bundle_keys);
	free(cfg->fleet_cache);
	free(cfg->fleet_gateway);
	for (size_t i = 0; cfg->fleet_endpoints != NULL && i < cfg->nfleet_endpoints; i++)
		free(cfg->fleet_endpoints[i]);
	free(cfg->fleet_endpoints);
	free(cfg->fleet_prefix);
	free(cfg->fleet_user);
	free(cfg->fleet_password_file);
	free(cfg->ha_fifo);
	free(cfg->ha_instance);
	free(cfg->ha_track_file);
	free(cfg->ha_sync_peer);
	free(cfg->ha_sync_listen);
	free(cfg->ha_sync_key);
	free(cfg->vms);
	for (size_t i = 0; cfg->budgets != NULL && i < cfg->nbudgets; i++)
		free(cfg->budgets[i].host);
	free(cfg->budgets);
	pol_set_free(cfg->budget_set);
	pol_set_free(cfg->set);
	pol_set_free(cfg->ask);
	free(cfg);
}

const struct pol_budget *
pol_config_budget(const struct pol_config *cfg, uint32_t policy, uint32_t index)
{
	for (size_t i = 0; i < cfg->nbudgets; i++)
		if (cfg->budgets[i].policy == policy && cfg->budgets[i].index == index)
			return &cfg->budgets[i];
	return NULL;
}

uint32_t
pol_config_budgets(const struct pol_config *cfg, uint32_t policy)
{
	uint32_t n = 0;

	for (size_t i = 0; i < cfg->nbudgets; i++)
		n += cfg->budgets[i].policy == policy;
	return n;
}

const struct pol_vm *
pol_config_vm(const struct pol_config *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->nvms; i++)
		if (cfg->vms[i].name != NULL && strcmp(cfg->vms[i].name, name) == 0)
			return &cfg->vms[i];
	return NULL;
}

struct pol_config *
pol_load_buffer(const char *buf, size_t len, const char *name, struct pol_errs *errs)
{
	struct pol_ctx c = { .file = name, .errs = errs, .budget = POL_NODE_BUDGET };
	struct pol_config *cfg = NULL;
	yaml_document_t doc;
	size_t nerr = errs->n + errs->dropped;
	char *tmp = NULL;
	bool have_doc = false;

	if ((cfg = calloc(1, sizeof(*cfg))) == NULL || pol_defaults(cfg, name) < 0 ||
	    (c.b = pol_builder_new()) == NULL || (c.bb = pol_builder_new()) == NULL ||
	    (c.ask_b = pol_builder_new()) == NULL ||
	    (tmp = strdup(name)) == NULL || (c.dir = strdup(dirname(tmp))) == NULL)
		goto nomem;
	c.cfg = cfg;
	if (pol_yaml_parse(&c, buf, len, &doc) < 0)
		goto out;
	have_doc = true;
	c.doc = &doc;
	pol_walk_map(&c, yaml_document_get_root_node(&doc), pol_top_fields, cfg, "");
	pol_sockets_check(&c, yaml_document_get_root_node(&doc));
	pol_ha_check(&c, yaml_document_get_root_node(&doc));
	/* The set is built even after errors, so unknown-policy errors are found too. */
	if ((cfg->set = pol_builder_build(c.b)) == NULL ||
	    (cfg->budget_set = pol_builder_build(c.bb)) == NULL ||
	    (cfg->ask = pol_builder_build(c.ask_b)) == NULL)
		goto nomem;
	if (c.nimports < pol_set_policies(cfg->set)) {
		char **v = realloc(cfg->imports, pol_set_policies(cfg->set) * sizeof(*v));

		if (v == NULL)
			goto nomem;
		for (size_t i = c.nimports; i < pol_set_policies(cfg->set); i++)
			v[i] = NULL;
		cfg->imports = v;
		c.nimports = pol_set_policies(cfg->set);
	}
	pol_vms_resolve(&c);
	goto out;
nomem:
	pol_err_add(errs, name, 1, 1, "out of memory");
out:
	if (have_doc)
		yaml_document_delete(&doc);
	for (size_t i = 0; c.vref != NULL && i < cfg->nvms; i++)
		free(c.vref[i].policy);
	free(c.vref);
	pol_builder_free(c.b);
	pol_builder_free(c.bb);
	pol_builder_free(c.ask_b);
	free(c.dir);
	free(tmp);
	if (errs->n + errs->dropped != nerr) {
		if (cfg != NULL && cfg->set == NULL && cfg->imports != NULL) {
			/* imports[] is freed by policy count; without a set, by what was grown. */
			for (size_t i = 0; i < c.nimports; i++)
				free(cfg->imports[i]);
			free(cfg->imports);
			cfg->imports = NULL;
		}
		pol_config_free(cfg);
		return NULL;
	}
	return cfg;
}

struct pol_config *
pol_load_file(const char *path, struct pol_errs *errs)
{
	struct pol_config *cfg;
	size_t len;
	char *buf;
	int err;

	/* The config file itself gets the same guard as imports: regular, bounded. */
	if ((buf = pol_read_file(path, POL_IMPORT_BYTES_MAX, &len, &err)) == NULL) {
		pol_err_add(errs, path, 1, 1, "cannot read: %s", err == EFBIG ?
		    "larger than 16 MiB" : err == EINVAL ? "not a regular file" : strerror(err));
		return NULL;
	}
	cfg = pol_load_buffer(buf, len, path, errs);
	free(buf);
	return cfg;
}

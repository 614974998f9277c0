/*
 * ha: the pair's keys (namegate.yaml(5), HA PAIR). keepalived elects; these say where its
 * notify FIFO is, which VRRP instance's lines count, what the health check tolerates, and
 * how the split-brain guard ranks this box (its priority) and keys its beacons.
 */
#include <stddef.h>
#include <string.h>

#include "pol_load_int.h"

#define CFG(field)	offsetof(struct pol_config, field)
#define POL_HA_HEARTBEAT_MIN_MS	10	/* below a worker's longest nap (idle_sleep_us) */
#define POL_HA_HEARTBEAT_MAX_MS	60000
#define POL_HA_INSTANCE_MAX	64	/* keepalived's iname: IFNAMSIZ-ish words, generously */
#define POL_HA_PRIORITY_MAX	254	/* VRRP's range for a backup-capable router */
#define POL_HA_BEACON_MIN_MS	10
#define POL_HA_BEACON_MAX_MS	1000	/* the guard waits 3 of them: a second's hold at most */
#define POL_HA_RESYNC_MIN_MS	1000
#define POL_HA_RESYNC_MAX_MS	600000

_Static_assert(sizeof(enum pol_ha_guard) == sizeof(unsigned int), "pol_h_enum's size");

static const char *const pol_ha_guard_words[] = { "required", "off", NULL };

/* keepalived writes the name in double quotes, one word: no quote, space or control byte. */
static int
pol_h_ha_instance(struct pol_ctx *c, yaml_node_t *n, const struct pol_field *f, void *obj,
    const char *path)
{
	const char *s;

	if ((s = pol_scalar(c, n, path)) == NULL)
		return -1;
	if (s[0] == '\0' || strlen(s) > POL_HA_INSTANCE_MAX)
		return pol_err_node(c, n, "%s: 1 to %d bytes, got %zu", path, POL_HA_INSTANCE_MAX,
		    strlen(s));
	for (const char *p = s; *p != '\0'; p++)
		if ((unsigned char)*p <= ' ' || *p == '"' || (unsigned char)*p == 0x7f)
			return pol_err_node(c, n, "%s: \"%s\" is not a vrrp_instance name (no "
			    "space, quote or control character)", path, s);
	return pol_h_str(c, n, f, obj, path);
}

const struct pol_field pol_ha_fields[] = {
	{ "notify_fifo", YAML_SCALAR_NODE, pol_h_str, CFG(ha_fifo), 0, 0, NULL, NULL, true },
	{ "instance", YAML_SCALAR_NODE, pol_h_ha_instance, CFG(ha_instance), 0, 0, NULL, NULL,
	    false },
	{ "heartbeat_timeout_ms", YAML_SCALAR_NODE, pol_h_u32, CFG(ha_heartbeat_ms),
	    POL_HA_HEARTBEAT_MIN_MS, POL_HA_HEARTBEAT_MAX_MS, NULL, NULL, false },
	{ "track_file", YAML_SCALAR_NODE, pol_h_str, CFG(ha_track_file), 0, 0, NULL, NULL,
	    false },
	{ "announce", YAML_SCALAR_NODE, pol_h_bool, CFG(ha_announce), 0, 0, NULL, NULL, false },
	{ "sync_peer", YAML_SCALAR_NODE, pol_h_str, CFG(ha_sync_peer), 0, 0, NULL, NULL, false },
	{ "sync_listen", YAML_SCALAR_NODE, pol_h_str, CFG(ha_sync_listen), 0, 0, NULL, NULL,
	    false },
	{ "sync_key_file", YAML_SCALAR_NODE, pol_h_str, CFG(ha_sync_key), 0, 0, NULL, NULL,
	    false },
	{ "priority", YAML_SCALAR_NODE, pol_h_u32, CFG(ha_priority), 1, POL_HA_PRIORITY_MAX,
	    NULL, NULL, false },
	{ "guard", YAML_SCALAR_NODE, pol_h_enum, CFG(ha_guard), 0, 0, pol_ha_guard_words, NULL,
	    false },
	{ "beacon_interval_ms", YAML_SCALAR_NODE, pol_h_u32, CFG(ha_beacon_ms),
	    POL_HA_BEACON_MIN_MS, POL_HA_BEACON_MAX_MS, NULL, NULL, false },
	{ "resync_timeout_ms", YAML_SCALAR_NODE, pol_h_u32, CFG(ha_resync_timeout_ms),
	    POL_HA_RESYNC_MIN_MS, POL_HA_RESYNC_MAX_MS, NULL, NULL, false },
	{ NULL, 0, NULL, 0, 0, 0, NULL, NULL, false },
};

/*
 * The guard is what keeps a pair whose VRRP link broke from forwarding twice (each box
 * MASTER), so it is on unless the operator says otherwise, and it needs what ranks the
 * two boxes and what keys their beacons: a configuration without them is refused rather
 * than run unguarded. The sync stream's own need of the key is checked at start.
 */
void
pol_ha_check(struct pol_ctx *c, yaml_node_t *root)
{
	const struct pol_config *cfg = c->cfg;
	yaml_node_t *n;

	if (cfg->ha_fifo == NULL || cfg->ha_guard != POL_HA_GUARD_REQUIRED || root == NULL ||
	    root->type != YAML_MAPPING_NODE || (n = pol_map_get(c, root, "ha")) == NULL)
		return;
	if (cfg->ha_priority == 0)
		pol_err_node(c, n, "ha: guard: required (the default) needs ha.priority, 1 to %d, "
		    "a different one on each box of the pair (or guard: off)", POL_HA_PRIORITY_MAX);
	if (cfg->ha_sync_key == NULL)
		pol_err_node(c, n, "ha: guard: required (the default) needs ha.sync_key_file: the "
		    "beacons' key derives from it (or guard: off)");
}

/*
 * ha: the pair's keys (namegate.yaml(5), HA PAIR). keepalived elects; these say where its
 * notify FIFO is, which VRRP instance's lines count, and what the health check tolerates.
 */
#include <stddef.h>
#include <string.h>

#include "pol_load_int.h"

#define CFG(field)	offsetof(struct pol_config, field)
#define POL_HA_HEARTBEAT_MIN_MS	10	/* below a worker's longest nap (idle_sleep_us) */
#define POL_HA_HEARTBEAT_MAX_MS	60000
#define POL_HA_INSTANCE_MAX	64	/* keepalived's iname: IFNAMSIZ-ish words, generously */

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
	{ NULL, 0, NULL, 0, 0, 0, NULL, NULL, false },
};

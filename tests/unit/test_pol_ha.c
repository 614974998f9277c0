/*
 * policy/load: the ha: keys. Defaults, every key read, and each refusal with its place.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "pol_load_check.h"

#define BASE	"policies: {p: {allow: [example.com]}}\n" \
		"vms: [{name: a, mac: '02:00:00:00:00:01', ipv4: 10.77.0.11, policy: p}]\n"

static void
test_defaults(void **state)
{
	struct pol_config *cfg = pol_check_load(BASE);

	(void)state;
	assert_non_null(cfg);
	assert_null(cfg->ha_fifo);		/* no pair: always forwards */
	assert_null(cfg->ha_instance);
	assert_null(cfg->ha_track_file);
	assert_int_equal(cfg->ha_heartbeat_ms, 1000);
	assert_true(cfg->ha_announce);
	assert_int_equal(cfg->ha_guard, POL_HA_GUARD_REQUIRED);
	assert_int_equal(cfg->ha_priority, 0);
	assert_int_equal(cfg->ha_beacon_ms, 100);
	assert_int_equal(cfg->ha_resync_timeout_ms, 30000);
	pol_config_free(cfg);
}

static void
test_keys(void **state)
{
	struct pol_config *cfg = pol_check_load(BASE "ha: {notify_fifo: /run/ng.fifo, "
	    "instance: VI_1, heartbeat_timeout_ms: 250, announce: false, "
	    "track_file: /run/ng.state, guard: off}\n");

	(void)state;
	assert_non_null(cfg);
	assert_string_equal(cfg->ha_fifo, "/run/ng.fifo");
	assert_string_equal(cfg->ha_instance, "VI_1");
	assert_int_equal(cfg->ha_heartbeat_ms, 250);
	assert_false(cfg->ha_announce);
	assert_string_equal(cfg->ha_track_file, "/run/ng.state");
	assert_null(cfg->ha_sync_peer);
	assert_int_equal(cfg->ha_guard, POL_HA_GUARD_OFF);
	pol_config_free(cfg);
	cfg = pol_check_load(BASE "ha: {notify_fifo: /f, sync_peer: '10.0.9.2:7400', "
	    "sync_listen: '[fd00::1]:7400', sync_key_file: /etc/namegate/ha.key, priority: 200, "
	    "guard: required, beacon_interval_ms: 50, resync_timeout_ms: 5000}\n");
	assert_non_null(cfg);
	assert_int_equal(cfg->ha_priority, 200);
	assert_int_equal(cfg->ha_guard, POL_HA_GUARD_REQUIRED);
	assert_int_equal(cfg->ha_beacon_ms, 50);
	assert_int_equal(cfg->ha_resync_timeout_ms, 5000);
	assert_string_equal(cfg->ha_sync_peer, "10.0.9.2:7400");
	assert_string_equal(cfg->ha_sync_listen, "[fd00::1]:7400");
	assert_string_equal(cfg->ha_sync_key, "/etc/namegate/ha.key");
	pol_config_free(cfg);
}

static void
test_refused(void **state)
{
	(void)state;
	pol_refused(BASE "ha: {instance: VI_1}\n",
	    "ng.yaml:3:5: ha: missing key 'notify_fifo'");
	pol_refused(BASE "ha: {notify_fifo: ''}\n",
	    "ng.yaml:3:19: ha.notify_fifo: must not be empty");
	pol_refused(BASE "ha: {notify_fifo: /f, instance: 'VI 1'}\n",
	    "ng.yaml:3:33: ha.instance: \"VI 1\" is not a vrrp_instance name (no space, quote "
	    "or control character)");
	pol_refused(BASE "ha: {notify_fifo: /f, heartbeat_timeout_ms: 5}\n",
	    "ng.yaml:3:45: ha.heartbeat_timeout_ms: 5 is out of range (10..60000)");
	pol_refused(BASE "ha: {notify_fifo: /f, peer: x}\n",
	    "ng.yaml:3:23: unknown key 'peer' in ha (expected notify_fifo, instance, "
	    "heartbeat_timeout_ms, track_file, announce, sync_peer, sync_listen, "
	    "sync_key_file, priority, guard, beacon_interval_ms, resync_timeout_ms)");
}

/* The guard's keys: ranges, its words, and what guard: required needs. */
static void
test_guard_refused(void **state)
{
	(void)state;
	pol_refused(BASE "ha: {notify_fifo: /f, sync_key_file: /k}\n",
	    "ng.yaml:3:5: ha: guard: required (the default) needs ha.priority, 1 to 254, a "
	    "different one on each box of the pair (or guard: off)");
	pol_refused(BASE "ha: {notify_fifo: /f, priority: 10}\n",
	    "ng.yaml:3:5: ha: guard: required (the default) needs ha.sync_key_file: the "
	    "beacons' key derives from it (or guard: off)");
	pol_refused(BASE "ha: {notify_fifo: /f, guard: off, priority: 255}\n",
	    "ng.yaml:3:45: ha.priority: 255 is out of range (1..254)");
	pol_refused(BASE "ha: {notify_fifo: /f, guard: maybe}\n",
	    "ng.yaml:3:30: ha.guard: expected required or off, got \"maybe\"");
	pol_refused(BASE "ha: {notify_fifo: /f, guard: off, beacon_interval_ms: 5}\n",
	    "ng.yaml:3:55: ha.beacon_interval_ms: 5 is out of range (10..1000)");
	pol_refused(BASE "ha: {notify_fifo: /f, guard: off, resync_timeout_ms: 10}\n",
	    "ng.yaml:3:54: ha.resync_timeout_ms: 10 is out of range (1000..600000)");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_guard_refused),
	};

	return cmocka_run_group_tests(tests, NULL, pol_check_teardown);
}

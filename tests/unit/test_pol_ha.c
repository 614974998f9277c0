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
	pol_config_free(cfg);
}

static void
test_keys(void **state)
{
	struct pol_config *cfg = pol_check_load(BASE "ha: {notify_fifo: /run/ng.fifo, "
	    "instance: VI_1, heartbeat_timeout_ms: 250, announce: false, "
	    "track_file: /run/ng.state}\n");

	(void)state;
	assert_non_null(cfg);
	assert_string_equal(cfg->ha_fifo, "/run/ng.fifo");
	assert_string_equal(cfg->ha_instance, "VI_1");
	assert_int_equal(cfg->ha_heartbeat_ms, 250);
	assert_false(cfg->ha_announce);
	assert_string_equal(cfg->ha_track_file, "/run/ng.state");
	assert_null(cfg->ha_sync_peer);
	pol_config_free(cfg);
	cfg = pol_check_load(BASE "ha: {notify_fifo: /f, sync_peer: '10.0.9.2:7400', "
	    "sync_listen: '[fd00::1]:7400', sync_key_file: /etc/namegate/ha.key}\n");
	assert_non_null(cfg);
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
	    "sync_key_file)");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, NULL, pol_check_teardown);
}

/*
 * control/hasync, connected over loopback: a sender's resync and records reach the
 * listener in order, their acknowledgement comes back (the lag observed), a sender
 * with another key delivers nothing and is counted refused, and the listener's box is
 * behind on sync until the resync is installed, for a bounded time if the peer goes quiet.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "ctl_ha_sync.h"

#define PORT	"127.0.0.1:47391"

static void
nap(void)
{
	struct timespec ts = { .tv_nsec = 10 * 1000 * 1000 };

	nanosleep(&ts, NULL);
}

static uint64_t
field(struct ctl_ha_sync *s, const char *key)
{
	struct json_object *o = ctl_ha_sync_json(s), *v;
	uint64_t n = json_object_object_get_ex(o, key, &v) ? json_object_get_uint64(v) : 0;

	json_object_put(o);
	return n;
}

static const char *
text(struct ctl_ha_sync *s, const char *key)
{
	static char buf[64];
	struct json_object *o = ctl_ha_sync_json(s), *v;

	snprintf(buf, sizeof(buf), "%s", json_object_object_get_ex(o, key, &v) ?
	    json_object_get_string(v) : "");
	json_object_put(o);
	return buf;
}

static void
test_stream(void **state)
{
	struct ctl_ha_sync_conf lc = { .listen = PORT, .psk = { 7 } };
	struct ctl_ha_sync_conf sc = { .peer = PORT, .psk = { 7 } };
	struct ctl_ha_rec mark = { .type = CTL_HA_REC_RESYNC_BEGIN };
	struct ctl_ha_rec b = { .type = CTL_HA_REC_BIND, .vm = "vm1", .vm_len = 3,
		.family = 4, .addr = { 192, 0, 2, 9 }, .ttl = 120, .name = "example.com",
		.name_len = 11 };
	struct ctl_ha_sync_item got[8];
	struct ctl_ha_sync *l, *s, *bad;
	uint64_t conn, conn2;
	char err[256];
	size_t n = 0;
	int tries;

	(void)state;
	assert_non_null(l = ctl_ha_sync_start(&lc, err, sizeof(err)));
	assert_non_null(s = ctl_ha_sync_start(&sc, err, sizeof(err)));
	for (tries = 0; tries < 500 && !ctl_ha_sync_resync_wanted(s); tries++)
		nap();
	assert_true(tries < 500);
	assert_true(ctl_ha_sync_send(s, &mark));
	assert_true(ctl_ha_sync_send(s, &b));
	mark.type = CTL_HA_REC_RESYNC_END;
	mark.seq = 1;
	assert_true(ctl_ha_sync_send(s, &mark));
	ctl_ha_sync_flush(s);
	for (tries = 0; tries < 500 && n < 3; tries++) {
		n += ctl_ha_sync_take(l, got + n, 8 - n, &conn);
		nap();
	}
	assert_int_equal(n, 3);
	assert_int_equal(got[0].r.type, CTL_HA_REC_RESYNC_BEGIN);
	assert_int_equal(got[1].r.type, CTL_HA_REC_BIND);
	assert_memory_equal(got[1].r.name, "example.com", 11);
	assert_memory_equal(got[1].r.vm, "vm1", 3);
	assert_memory_equal(got[1].r.addr, b.addr, 4);
	assert_int_equal(got[1].r.ttl, 120);
	assert_int_equal(got[2].r.type, CTL_HA_REC_RESYNC_END);
	assert_int_equal(field(s, "acked"), 0);	/* nothing is acked before it is applied */
	/* received, not installed: behind on sync, so the box may not lead */
	assert_true(ctl_ha_sync_behind(l, err, sizeof(err)));
	assert_non_null(strstr(err, "resync"));
	assert_string_equal(text(l, "resync_in"), "receiving");
	ctl_ha_sync_applied(l, conn, 2);
	assert_true(ctl_ha_sync_behind(l, err, sizeof(err)));	/* its end not yet */
	ctl_ha_sync_applied(l, conn, 1);
	assert_false(ctl_ha_sync_behind(l, err, sizeof(err)));
	assert_string_equal(err, "");
	assert_string_equal(text(l, "resync_in"), "done");
	assert_false(ctl_ha_sync_behind(s, err, sizeof(err)));	/* a sender only: never */
	n = 3;
	for (tries = 0; tries < 500 && field(s, "acked") < 3; tries++)
		nap();
	assert_int_equal(field(s, "acked"), 3);
	assert_int_equal(field(l, "applied"), 3);

	/*
	 * Another key, while the stream is open: the listener's proof fails at that sender,
	 * nothing is received, and the stream goes on as it was (same connection, its count).
	 */
	sc.psk[0] = 8;
	assert_non_null(bad = ctl_ha_sync_start(&sc, err, sizeof(err)));
	for (tries = 0; tries < 500 && field(bad, "refused") == 0; tries++)
		nap();
	assert_true(field(bad, "refused") > 0);
	assert_false(ctl_ha_sync_resync_wanted(bad));
	ctl_ha_sync_stop(bad);
	assert_int_equal(ctl_ha_sync_take(l, got, 8, &conn2), 0);
	assert_int_equal(conn2, conn);
	assert_int_equal(field(l, "applied"), 3);
	assert_true(ctl_ha_sync_send(s, &b));
	ctl_ha_sync_flush(s);
	for (tries = 0, n = 0; tries < 500 && n == 0; tries++) {
		n = ctl_ha_sync_take(l, got, 8, &conn2);
		nap();
	}
	assert_int_equal(n, 1);
	assert_int_equal(conn2, conn);
	ctl_ha_sync_applied(l, conn2, n);
	for (tries = 0; tries < 500 && field(s, "acked") < 4; tries++)
		nap();
	assert_int_equal(field(s, "acked"), 4);
	ctl_ha_sync_stop(s);
	ctl_ha_sync_stop(l);
}

/*
 * A peer that starts its resync and then says nothing (hung, or gone without a FIN) keeps
 * this box behind for CTL_HA_BEHIND_QUIET_MS at most: a box alone can lead again.
 */
static void
test_behind_bounded(void **state)
{
	struct ctl_ha_sync_conf lc = { .listen = PORT, .psk = { 7 } };
	struct ctl_ha_sync_conf sc = { .peer = PORT, .psk = { 7 } };
	struct ctl_ha_rec mark = { .type = CTL_HA_REC_RESYNC_BEGIN };
	struct ctl_ha_sync_item got[2];
	struct ctl_ha_sync *l, *s;
	uint64_t conn;
	char err[256];
	size_t n = 0;
	int tries;

	(void)state;
	assert_non_null(l = ctl_ha_sync_start(&lc, err, sizeof(err)));
	assert_false(ctl_ha_sync_behind(l, err, sizeof(err)));	/* no peer yet */
	assert_non_null(s = ctl_ha_sync_start(&sc, err, sizeof(err)));
	for (tries = 0; tries < 500 && !ctl_ha_sync_resync_wanted(s); tries++)
		nap();
	assert_true(ctl_ha_sync_send(s, &mark));
	ctl_ha_sync_flush(s);
	for (tries = 0; tries < 500 && n == 0; tries++) {
		n = ctl_ha_sync_take(l, got, 2, &conn);
		nap();
	}
	assert_int_equal(n, 1);
	ctl_ha_sync_applied(l, conn, n);
	assert_true(ctl_ha_sync_behind(l, err, sizeof(err)));
	for (tries = 0; tries < 400 && ctl_ha_sync_behind(l, err, sizeof(err)); tries++)
		nap();
	assert_false(ctl_ha_sync_behind(l, err, sizeof(err)));
	assert_string_equal(text(l, "resync_in"), "receiving");
	ctl_ha_sync_stop(s);
	ctl_ha_sync_stop(l);
}

static void
test_addresses(void **state)
{
	struct ctl_ha_sync_conf c = { .peer = "10.0.0.1" };
	char err[256];

	(void)state;
	assert_null(ctl_ha_sync_start(&c, err, sizeof(err)));
	assert_string_equal(err, "\"10.0.0.1\" is not ADDR:PORT (an IPv4 address, or [IPv6])");
	c.peer = "[::1]:0";
	assert_null(ctl_ha_sync_start(&c, err, sizeof(err)));
	c.peer = "host.example:7400";
	assert_null(ctl_ha_sync_start(&c, err, sizeof(err)));
	c.peer = NULL;
	c.listen = "[::1:7400";
	assert_null(ctl_ha_sync_start(&c, err, sizeof(err)));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stream),
		cmocka_unit_test(test_behind_bounded),
		cmocka_unit_test(test_addresses),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * control/ha: namegatectl ha's reply through a real control socket, and the health it
 * reports for keepalived's check: no before the workers run, no while no role was read
 * (within the start's grace), yes once one was, no while behind on sync unless master,
 * no again when the heartbeat is older than the timeout or the daemon vetoes (the guard's
 * hold), with the reason each time; and the extra objects the reply carries, each under
 * its key.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "ctl_base.h"
#include "ctl_client.h"
#include "ctl_ha.h"
#include "ctl_sock.h"

static _Atomic(int64_t) beat_age;	/* what the fake workers' heartbeat says */
static atomic_bool stop;
static _Atomic(const char *) veto_why;	/* what the fake guard says, NULL: nothing */

static void
on_role(enum ctl_ha_role role, void *arg)
{
	(void)role;
	(void)arg;
}

static int64_t
beat(void *arg)
{
	(void)arg;
	return atomic_load(&beat_age);
}

static const char *
veto(void *arg)
{
	(void)arg;
	return atomic_load(&veto_why);
}

static struct json_object *
extra(void *arg)
{
	return json_object_new_string(arg);
}

static atomic_bool behind;		/* what the fake sync stream says */

static bool
sync_behind(void *arg, char *why, size_t len)
{
	(void)arg;
	snprintf(why, len, "%s", atomic_load(&behind) ? "behind on sync: test" : "");
	return atomic_load(&behind);
}

/* Writes line (a role keepalived gives) to fifo and waits until h has it. */
static void
give_role(struct ctl_ha *h, const char *fifo, const char *line, enum ctl_ha_role want)
{
	int fd;

	assert_true((fd = open(fifo, O_WRONLY | O_NONBLOCK)) >= 0);
	assert_int_equal(write(fd, line, strlen(line)), (ssize_t)strlen(line));
	close(fd);
	for (int64_t end = ctl_now_ms() + 5000; ctl_ha_role(h) != want && ctl_now_ms() < end; )
		usleep(1000);
	assert_int_equal(ctl_ha_role(h), want);
}

static void *
serve(void *arg)
{
	struct ctl_sock *s = arg;

	while (!atomic_load(&stop))
		(void)ctl_sock_poll(s, 20);
	return NULL;
}

/* The reply's healthy and reason, the reason copied into why. */
static bool
ask(const char *sock, char *why, size_t len, char *role, size_t rlen)
{
	struct json_object *v;
	struct ctl_reply r;
	char err[256];
	bool ok;

	assert_int_equal(ctl_client_call(sock, "ha", NULL, NULL, 5000, &r, err, sizeof(err)), 0);
	assert_null(r.error);
	assert_true(json_object_object_get_ex(r.json, "healthy", &v));
	ok = json_object_get_boolean(v);
	assert_true(json_object_object_get_ex(r.json, "reason", &v));
	snprintf(why, len, "%s", json_object_get_string(v));
	assert_true(json_object_object_get_ex(r.json, "role", &v));
	snprintf(role, rlen, "%s", json_object_get_string(v));
	ctl_reply_free(&r);
	return ok;
}

static void
test_health(void **state)
{
	char dir[] = "/tmp/test_ctl_ha_cmd.XXXXXX", fifo[96], sock[96], err[256], why[160];
	char role[16];
	struct ctl_ha_conf conf = { .instance = NULL, .heartbeat_ms = 200, .on_role = on_role,
		.beat = beat, .veto = veto };
	struct json_object *v;
	struct ctl_reply r;
	struct ctl_sock *s;
	struct ctl_ha *h;
	pthread_t th;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	snprintf(sock, sizeof(sock), "%s/ng.sock", dir);
	conf.fifo = fifo;
	assert_non_null(h = ctl_ha_start(&conf, NULL, err, sizeof(err)));
	assert_non_null(s = ctl_sock_open(sock, 0, err, sizeof(err)));
	assert_int_equal(ctl_ha_serve(h, s), 0);
	assert_int_equal(pthread_create(&th, NULL, serve, s), 0);

	atomic_store(&beat_age, -1);
	assert_false(ask(sock, why, sizeof(why), role, sizeof(role)));
	assert_string_equal(why, "starting: the workers do not run yet");
	atomic_store(&beat_age, 5);
	assert_false(ask(sock, why, sizeof(why), role, sizeof(role)));
	assert_non_null(strstr(why, "starting: no role from keepalived yet"));
	assert_string_equal(role, "starting");
	give_role(h, fifo, "INSTANCE \"x\" BACKUP 90\n", CTL_HA_BACKUP);
	assert_true(ask(sock, why, sizeof(why), role, sizeof(role)));
	assert_string_equal(why, "");
	assert_string_equal(role, "backup");
	/* behind on sync: a backup may not take the lead; a master keeps it */
	ctl_ha_behind(h, sync_behind, NULL);
	atomic_store(&behind, true);
	assert_false(ask(sock, why, sizeof(why), role, sizeof(role)));
	assert_string_equal(why, "behind on sync: test");
	give_role(h, fifo, "INSTANCE \"x\" MASTER 90\n", CTL_HA_MASTER);
	assert_true(ask(sock, why, sizeof(why), role, sizeof(role)));
	give_role(h, fifo, "INSTANCE \"x\" BACKUP 90\n", CTL_HA_BACKUP);
	atomic_store(&behind, false);
	assert_true(ask(sock, why, sizeof(why), role, sizeof(role)));
	atomic_store(&beat_age, 201);			/* past heartbeat_timeout_ms */
	assert_false(ask(sock, why, sizeof(why), role, sizeof(role)));
	assert_string_equal(why, "stalled: the workers' last heartbeat was 201 ms ago "
	    "(limit 200)");
	atomic_store(&beat_age, 5);
	atomic_store(&veto_why, "stalled: waiting for the peer's resync");
	assert_false(ask(sock, why, sizeof(why), role, sizeof(role)));
	assert_string_equal(why, "stalled: waiting for the peer's resync");
	atomic_store(&veto_why, NULL);
	assert_true(ask(sock, why, sizeof(why), role, sizeof(role)));

	/* two extras, each under its key; one removed, and set again in its place */
	ctl_ha_extra(h, "sync", extra, "s1");
	ctl_ha_extra(h, "guard", extra, "g1");
	ctl_ha_extra(h, "sync", NULL, NULL);
	ctl_ha_extra(h, "sync", extra, "s2");
	assert_int_equal(ctl_client_call(sock, "ha", NULL, NULL, 5000, &r, err, sizeof(err)), 0);
	assert_true(json_object_object_get_ex(r.json, "sync", &v));
	assert_string_equal(json_object_get_string(v), "s2");
	assert_true(json_object_object_get_ex(r.json, "guard", &v));
	assert_string_equal(json_object_get_string(v), "g1");
	ctl_reply_free(&r);

	atomic_store(&stop, true);
	pthread_join(th, NULL);
	ctl_sock_close(s);
	ctl_ha_stop(h);
	unlink(fifo);
	rmdir(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_health),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * control/sock/ctl_sock: the grant, grants and revoke commands, and approval's pending,
 * approve and deny. Their round trips through
 * namegatectl's client, every malformed request refused before any callback runs, and a
 * property test: random requests over every key and command, raw, each answered with
 * exactly one JSON line, and a callback only ever called with what its contract promises.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "ctl_client.h"
#include "ctl_sock_fixture.h"

static atomic_int calls, broken;	/* callbacks run; contract breaches seen by them */

static bool
nonempty(const char *s)
{
	return s != NULL && *s != '\0';
}

static int
op_grant(FILE *out, const struct ctl_req *req, void *arg)
{
	const struct ctl_req *r = req;
	(void)arg;
	atomic_fetch_add(&calls, 1);
	if (!nonempty(r->vm) || !nonempty(r->host) || !nonempty(r->dur) ||
	    (r->reason != NULL && *r->reason == '\0'))
		atomic_fetch_add(&broken, 1);
	if (strcmp(r->dur, "31d") == 0) {
		fputs("duration \"31d\" is longer than 30d", out);
		return -ERANGE;
	}
	fprintf(out, "{\"id\":3,\"vm\":\"%s\",\"host\":\"%s\",\"left\":60,\"reason\":\"%s\"}",
	    r->vm, r->host, r->reason != NULL ? r->reason : "");
	return 0;
}

static int
op_grants(FILE *out, const struct ctl_req *req, void *arg)
{
	const char *vm = req->vm;
	(void)arg;
	atomic_fetch_add(&calls, 1);
	if (vm != NULL && *vm == '\0')
		atomic_fetch_add(&broken, 1);
	fputs(vm == NULL ? "{\"grants\":[{\"id\":3},{\"id\":4}]}" : "{\"grants\":[{\"id\":3}]}",
	    out);
	return 0;
}

static int
op_revoke(FILE *out, const struct ctl_req *req, void *arg)
{
	const char *id = req->id;
	(void)arg;
	atomic_fetch_add(&calls, 1);
	if (!nonempty(id))
		atomic_fetch_add(&broken, 1);
	if (strcmp(id, "3") != 0) {
		fprintf(out, "no live grant %s", id);
		return -ENOENT;
	}
	fputs("{\"revoked\":{\"id\":3}}", out);
	return 0;
}

static int
op_pending(FILE *out, const struct ctl_req *req, void *arg)
{
	const char *vm = req->vm;
	(void)arg;
	atomic_fetch_add(&calls, 1);
	if (vm != NULL && !nonempty(vm))
		atomic_fetch_add(&broken, 1);
	fputs(vm == NULL ? "{\"pending\":[{\"id\":7},{\"id\":8}]}" : "{\"pending\":[]}", out);
	return 0;
}

/* approve: id always, dur only when the request had "for" (never empty). */
static int
op_approve(FILE *out, const struct ctl_req *req, void *arg)
{
	const char *id = req->id, *dur = req->dur;
	(void)arg;
	atomic_fetch_add(&calls, 1);
	if (!nonempty(id) || (dur != NULL && !nonempty(dur)))
		atomic_fetch_add(&broken, 1);
	if (strcmp(id, "7") != 0) {
		fprintf(out, "no request %s waits for approval", id);
		return -ENOENT;
	}
	fprintf(out, "{\"approved\":{\"id\":7},\"for\":\"%s\"}", dur != NULL ? dur : "default");
	return 0;
}

static int
op_deny(FILE *out, const struct ctl_req *req, void *arg)
{
	const char *id = req->id;
	(void)arg;
	atomic_fetch_add(&calls, 1);
	if (!nonempty(id))
		atomic_fetch_add(&broken, 1);
	fprintf(out, "{\"denied\":{\"id\":%s}}", strcmp(id, "7") == 0 ? "7" : "0");
	return 0;
}

/* status and check, for the member checks of commands that take none of grant's */
static int
op_status(FILE *out, const struct ctl_req *req __attribute__((unused)), void *arg)
{
	(void)arg;
	fputs("{}", out);
	return 0;
}

static const struct ctl_cmd grant_ops[] = {
	{ "status", 0, op_status },
	{ "check", CTL_ARG_VM | CTL_ARG_VM_REQ | CTL_ARG_HOST, op_status },
	{ "grant", CTL_ARG_VM | CTL_ARG_VM_REQ | CTL_ARG_HOST | CTL_ARG_FOR, op_grant },
	{ "grants", CTL_ARG_VM, op_grants },
	{ "revoke", CTL_ARG_ID, op_revoke },
	{ "pending", CTL_ARG_VM, op_pending },
	{ "approve", CTL_ARG_ID | CTL_ARG_FOR_OPT, op_approve },
	{ "deny", CTL_ARG_ID, op_deny },
};

static void
expect_kv(const char *path, const char *const *kv, const char *want)
{
	struct ctl_reply r;
	char err[256], got[1024];

	assert_int_equal(ctl_client_request(path, kv, IO_MS, &r, err, sizeof(err)), 0);
	snprintf(got, sizeof(got), r.error != NULL ? "E:%s" : "%s", r.error != NULL ? r.error :
	    r.text);
	if (strcmp(got, want) != 0)
		fail_msg("%s: got '%s', want '%s'", kv[1], got, want);
	ctl_reply_free(&r);
}

static void
test_grant_round_trips(void **state)
{
	const char *grant[] = { "cmd", "grant", "vm", "agent1", "host", "pypi.org:443", "for",
		"30m", "reason", "pip needs it", NULL };
	const char *noreason[] = { "cmd", "grant", "vm", "a", "host", "b", "for", "1h",
		"reason", NULL, NULL };
	const char *toolong[] = { "cmd", "grant", "vm", "a", "host", "b", "for", "31d", NULL };
	const char *all[] = { "cmd", "grants", NULL };
	const char *one[] = { "cmd", "grants", "vm", "agent1", NULL };
	const char *revoke[] = { "cmd", "revoke", "id", "3", NULL };
	const char *gone[] = { "cmd", "revoke", "id", "9", NULL };
	struct srv v;

	(void)state;
	srv_start_table(&v, grant_ops);
	expect_kv(v.path, grant, "{\"id\":3,\"vm\":\"agent1\",\"host\":\"pypi.org:443\","
	    "\"left\":60,\"reason\":\"pip needs it\"}");
	expect_kv(v.path, noreason, "{\"id\":3,\"vm\":\"a\",\"host\":\"b\",\"left\":60,"
	    "\"reason\":\"\"}");
	expect_kv(v.path, toolong, "E:duration \"31d\" is longer than 30d");
	expect_kv(v.path, all, "{\"grants\":[{\"id\":3},{\"id\":4}]}");
	expect_kv(v.path, one, "{\"grants\":[{\"id\":3}]}");
	expect_kv(v.path, revoke, "{\"revoked\":{\"id\":3}}");
	expect_kv(v.path, gone, "E:no live grant 9");
	srv_stop(&v);
	assert_int_equal(v.cnt.replied, 5);
	assert_int_equal(v.cnt.errors, 2);
	assert_int_equal(atomic_load(&broken), 0);
}

static void
test_approval_round_trips(void **state)
{
	const char *all[] = { "cmd", "pending", NULL };
	const char *one[] = { "cmd", "pending", "vm", "agent1", NULL };
	const char *approve[] = { "cmd", "approve", "id", "7", NULL };
	const char *approve_for[] = { "cmd", "approve", "id", "7", "for", "30m", NULL };
	const char *gone[] = { "cmd", "approve", "id", "9", NULL };
	const char *deny[] = { "cmd", "deny", "id", "7", NULL };
	struct srv v;

	(void)state;
	atomic_store(&broken, 0);
	srv_start_table(&v, grant_ops);
	expect_kv(v.path, all, "{\"pending\":[{\"id\":7},{\"id\":8}]}");
	expect_kv(v.path, one, "{\"pending\":[]}");
	expect_kv(v.path, approve, "{\"approved\":{\"id\":7},\"for\":\"default\"}");
	expect_kv(v.path, approve_for, "{\"approved\":{\"id\":7},\"for\":\"30m\"}");
	expect_kv(v.path, gone, "E:no request 9 waits for approval");
	expect_kv(v.path, deny, "{\"denied\":{\"id\":7}}");
	srv_stop(&v);
	assert_int_equal(v.cnt.replied, 5);
	assert_int_equal(v.cnt.errors, 1);
	assert_int_equal(atomic_load(&broken), 0);
}

static void
test_grant_bad_requests(void **state)
{
	static const struct {
		const char *req;
		const char *want;
	} cases[] = {
		{ "{\"cmd\":\"grant\",\"vm\":\"a\",\"host\":\"b\"}\n",
		    "bad request: grant needs \\\"for\\\"" },
		{ "{\"cmd\":\"grant\",\"vm\":\"a\",\"for\":\"1h\"}\n",
		    "bad request: grant needs \\\"host\\\"" },
		{ "{\"cmd\":\"grant\",\"host\":\"b\",\"for\":\"1h\"}\n",
		    "bad request: grant needs \\\"vm\\\"" },
		{ "{\"cmd\":\"grant\",\"vm\":\"a\",\"host\":\"b\",\"for\":\"\"}\n",
		    "bad request: \\\"for\\\" must be a non-empty string without NUL" },
		{ "{\"cmd\":\"grant\",\"vm\":\"a\",\"host\":\"b\",\"for\":3600}\n",
		    "bad request: \\\"for\\\" must be a string" },
		{ "{\"cmd\":\"grant\",\"vm\":\"a\",\"host\":\"b\",\"for\":\"1h\",\"reason\":\"\"}\n",
		    "bad request: \\\"reason\\\" must be a non-empty string without NUL" },
		{ "{\"cmd\":\"grant\",\"vm\":\"a\",\"host\":\"b\",\"for\":\"1h\",\"reason\":"
		    "\"a\\u0000b\"}\n",
		    "bad request: \\\"reason\\\" must be a non-empty string without NUL" },
		{ "{\"cmd\":\"grant\",\"vm\":\"a\",\"host\":\"b\",\"for\":\"1h\",\"id\":\"3\"}\n",
		    "bad request: grant takes no \\\"id\\\"" },
		{ "{\"cmd\":\"grants\",\"host\":\"b\"}\n", "bad request: grants takes no \\\"host\\\"" },
		{ "{\"cmd\":\"grants\",\"for\":\"1h\"}\n", "bad request: grants takes no \\\"for\\\"" },
		{ "{\"cmd\":\"grants\",\"reason\":\"x\"}\n",
		    "bad request: grants takes no \\\"reason\\\"" },
		{ "{\"cmd\":\"revoke\"}\n", "bad request: revoke needs \\\"id\\\"" },
		{ "{\"cmd\":\"revoke\",\"id\":3}\n", "bad request: \\\"id\\\" must be a string" },
		{ "{\"cmd\":\"revoke\",\"id\":\"3\",\"vm\":\"a\"}\n",
		    "bad request: revoke takes no \\\"vm\\\"" },
		{ "{\"cmd\":\"status\",\"id\":\"3\"}\n", "bad request: status takes no \\\"id\\\"" },
		{ "{\"cmd\":\"check\",\"vm\":\"a\",\"host\":\"b\",\"for\":\"1h\"}\n",
		    "bad request: check takes no \\\"for\\\"" },
		{ "{\"cmd\":\"approve\"}\n", "bad request: approve needs \\\"id\\\"" },
		{ "{\"cmd\":\"approve\",\"for\":\"1h\"}\n",
		    "bad request: approve needs \\\"id\\\"" },
		{ "{\"cmd\":\"approve\",\"id\":\"7\",\"vm\":\"a\"}\n",
		    "bad request: approve takes no \\\"vm\\\"" },
		{ "{\"cmd\":\"approve\",\"id\":\"7\",\"reason\":\"x\"}\n",
		    "bad request: approve takes no \\\"reason\\\"" },
		{ "{\"cmd\":\"approve\",\"id\":\"7\",\"for\":\"\"}\n",
		    "bad request: \\\"for\\\" must be a non-empty string without NUL" },
		{ "{\"cmd\":\"deny\",\"id\":\"7\",\"for\":\"1h\"}\n",
		    "bad request: deny takes no \\\"for\\\"" },
		{ "{\"cmd\":\"deny\",\"id\":7}\n", "bad request: \\\"id\\\" must be a string" },
		{ "{\"cmd\":\"pending\",\"id\":\"7\"}\n",
		    "bad request: pending takes no \\\"id\\\"" },
		{ "{\"cmd\":\"pending\",\"host\":\"b\"}\n",
		    "bad request: pending takes no \\\"host\\\"" },
	};
	char want[512];
	struct srv v;

	(void)state;
	atomic_store(&calls, 0);
	srv_start_table(&v, grant_ops);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(want, sizeof(want), "{\"error\":\"%s\"}\n", cases[i].want);
		expect_raw(v.path, cases[i].req, want);
	}
	srv_stop(&v);
	assert_int_equal(atomic_load(&calls), 0);	/* none reached a callback */
	assert_int_equal(v.cnt.errors, sizeof(cases) / sizeof(cases[0]));
}


/* A random JSON value for a member: mostly strings, sometimes anything else. */
static void
rand_value(char *buf, size_t len)
{
	static const char *const odd[] = { "3", "true", "null", "[]", "{}", "\"\"", "-1",
		"\"a\\u0000b\"", "\"\\ud800\"", "1e999" };
	static const char chars[] = "abcAZ09.:*-_/[] \\\"\xc3\xa9\x01";
	size_t n, o = 0;

	if (rand() % 8 == 0) {
		snprintf(buf, len, "%s", odd[rand() % (int)(sizeof(odd) / sizeof(odd[0]))]);
		return;
	}
	buf[o++] = '"';
	n = (size_t)rand() % 24;
	for (size_t i = 0; i < n && o + 3 < len; i++) {
		char c = chars[rand() % (int)(sizeof(chars) - 1)];

		if (c == '"' || c == '\\')
			buf[o++] = '\\';
		buf[o++] = c;
	}
	buf[o++] = '"';
	buf[o] = '\0';
}

static void
test_grant_random_requests(void **state)
{
	static const char *const cmds[] = { "grant", "grants", "revoke", "check", "status",
		"pending", "approve", "deny" };
	static const char *const keys[] = { "cmd", "vm", "host", "for", "reason", "id", "x" };
	char req[2048], val[128];
	struct srv v;

	(void)state;
	atomic_store(&broken, 0);
	srand(5);
	srv_start_table(&v, grant_ops);
	for (int k = 0; k < 1500; k++) {
		size_t o = (size_t)snprintf(req, sizeof(req), "{\"cmd\":\"%s\"",
		    cmds[rand() % (int)(sizeof(cmds) / sizeof(cmds[0]))]);
		struct json_object *reply;
		char *text;
		size_t len;

		for (size_t i = 1; i < sizeof(keys) / sizeof(keys[0]); i++) {
			if (rand() % 2)
				continue;
			rand_value(val, sizeof(val));
			o += (size_t)snprintf(req + o, sizeof(req) - o, ",\"%s\":%s", keys[i], val);
		}
		if (rand() % 16 == 0)
			o -= (size_t)rand() % o;		/* torn */
		snprintf(req + o, sizeof(req) - o, "}\n");
		text = raw_call(v.path, req, strlen(req), false);
		len = strlen(text);
		/* one line, one JSON object, always */
		assert_true(len > 1 && text[len - 1] == '\n' && memchr(text, '\n', len - 1) == NULL);
		reply = json_tokener_parse(text);
		if (reply == NULL || !json_object_is_type(reply, json_type_object))
			fail_msg("request %s: reply '%s'", req, text);
		json_object_put(reply);
		free(text);
	}
	srv_stop(&v);
	assert_int_equal(atomic_load(&broken), 0);
	assert_int_equal(v.cnt.replied + v.cnt.errors, 1500);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grant_round_trips),
		cmocka_unit_test(test_approval_round_trips),
		cmocka_unit_test(test_grant_bad_requests),
		cmocka_unit_test(test_grant_random_requests),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

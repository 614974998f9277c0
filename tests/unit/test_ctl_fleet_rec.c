/*
 * The fleet store's records (control/fleet/ctl_fleet_rec): which key is what, and each
 * decoder's refusals, one per way a record can be wrong. Whoever may write part of the
 * store writes these bytes; a gateway takes only a record that is exactly one.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctl_fleet_rec.h"

#define P	"/namegate/f/"

static enum ctl_fleet_kind
kind(const char *key, const char **tail, size_t *tlen)
{
	return ctl_fleet_key_kind(P, key, strlen(key), tail, tlen);
}

static void
test_key_kinds(void **state)
{
	const char *tail;
	size_t tlen;

	(void)state;
	assert_int_equal(kind(P "grants/00aa", &tail, &tlen), CTL_FLEET_K_GRANT);
	assert_int_equal(tlen, 4);
	assert_memory_equal(tail, "00aa", 4);
	assert_int_equal(kind(P "revoked/12", &tail, &tlen), CTL_FLEET_K_REVOKED);
	assert_int_equal(kind(P "bundles/rack1", &tail, &tlen), CTL_FLEET_K_BUNDLE);
	assert_int_equal(kind(P "status/gwa", &tail, &tlen), CTL_FLEET_K_STATUS);
	assert_int_equal(kind(P "pending/gwa/3", &tail, &tlen), CTL_FLEET_K_PENDING);
	assert_int_equal(kind(P "decisions/gwa/3", &tail, &tlen), CTL_FLEET_K_DECISION);
	/* a level too deep, too shallow, empty, or another fleet's: nobody's record */
	assert_int_equal(kind(P "grants/a/b", &tail, &tlen), CTL_FLEET_K_OTHER);
	assert_int_equal(kind(P "pending/gwa", &tail, &tlen), CTL_FLEET_K_OTHER);
	assert_int_equal(kind(P "pending/gwa/", &tail, &tlen), CTL_FLEET_K_OTHER);
	assert_int_equal(kind(P "pending//3", &tail, &tlen), CTL_FLEET_K_OTHER);
	assert_int_equal(kind(P "pending/a/b/c", &tail, &tlen), CTL_FLEET_K_OTHER);
	assert_int_equal(kind(P "grants/", &tail, &tlen), CTL_FLEET_K_OTHER);
	assert_int_equal(kind("/namegate/g/grants/00aa", &tail, &tlen), CTL_FLEET_K_OTHER);
	assert_int_equal(kind(P "grantsx/1", &tail, &tlen), CTL_FLEET_K_OTHER);
}

static const char *
grant_json(const char *vm, const char *host, long long created, long long expires,
    long long uid, const char *user, const char *extra)
{
	static char buf[1024];

	snprintf(buf, sizeof(buf), "{\"vm\":\"%s\",\"host\":\"%s\",\"created\":%lld,"
	    "\"expires\":%lld,\"reason\":\"r\",\"uid\":%lld,\"user\":\"%s\",\"origin\":\"gwa\","
	    "\"put_ms\":1%s}", vm, host, created, expires, uid, user, extra);
	return buf;
}

static int
decode(const char *json, struct ctl_fleet_grant *fg, char *why)
{
	return ctl_fleet_grant_decode(json, strlen(json), 42, fg, why, CTL_FLEET_WHY_MAX);
}

static void
test_grant_round_trip(void **state)
{
	struct ctl_fleet_grant fg = { .g = { .created = 100, .expires = 700, .uid = 1000 },
		.put_ms = 100123 }, out;
	char why[CTL_FLEET_WHY_MAX], *text;

	(void)state;
	strcpy(fg.g.vm, "vm1");
	strcpy(fg.g.host, "pypi.org:443");
	strcpy(fg.g.reason, "pip \"needs\" it");
	strcpy(fg.g.user, "alice");
	strcpy(fg.origin, "ops1");
	text = ctl_fleet_grant_encode(&fg);
	assert_non_null(text);
	assert_int_equal(decode(text, &out, why), 0);
	assert_int_equal(out.g.id, 42);
	assert_string_equal(out.g.host, "pypi.org:443");
	assert_int_equal(out.g.pattern.port, 443);
	assert_string_equal(out.g.reason, "pip \"needs\" it");
	assert_int_equal(out.g.uid, 1000);
	assert_int_equal(out.put_ms, 100123);
	free(text);
}

static void
test_grant_refusals(void **state)
{
	struct ctl_fleet_grant fg;
	char why[CTL_FLEET_WHY_MAX], buf[1200];

	(void)state;
	assert_int_equal(decode(grant_json("vm1", "x.test", 1, 2, 0, "root", ""), &fg, why), 0);
	/* over 30 days, or ending before it starts */
	assert_int_equal(decode(grant_json("vm1", "x.test", 1, 1 + 30 * 86400 + 1, 0, "root", ""),
	    &fg, why), -EINVAL);
	assert_non_null(strstr(why, "30 days"));
	assert_int_equal(decode(grant_json("vm1", "x.test", 5, 5, 0, "root", ""), &fg, why),
	    -EINVAL);
	/* a maker half known */
	assert_int_equal(decode(grant_json("vm1", "x.test", 1, 2, -1, "root", ""), &fg, why),
	    -EINVAL);
	assert_int_equal(decode(grant_json("vm1", "x.test", 1, 2, 5, "", ""), &fg, why), -EINVAL);
	/* not a pattern */
	assert_int_equal(decode(grant_json("vm1", "a b", 1, 2, 0, "root", ""), &fg, why),
	    -EINVAL);
	assert_non_null(strstr(why, "host"));
	/* too long a VM name */
	assert_int_equal(decode(grant_json("vm1234567890123456789012345678901234", "x.test", 1, 2,
	    0, "root", ""), &fg, why), -EINVAL);
	/* a field of the wrong type, missing, or bytes after the object */
	assert_int_equal(decode("{\"vm\":1}", &fg, why), -EINVAL);
	assert_int_equal(decode("[]", &fg, why), -EINVAL);
	snprintf(buf, sizeof(buf), "%s ", grant_json("vm1", "x.test", 1, 2, 0, "root", ""));
	assert_int_equal(decode(buf, &fg, why), 0);	/* whitespace ends JSON text */
	snprintf(buf, sizeof(buf), "%sx", grant_json("vm1", "x.test", 1, 2, 0, "root", ""));
	assert_int_equal(decode(buf, &fg, why), -EINVAL);
	/* not NUL-terminated: the length is all there is */
	strcpy(buf, grant_json("vm1", "x.test", 1, 2, 0, "root", ""));
	assert_int_equal(ctl_fleet_grant_decode(buf, strlen(buf) - 1, 1, &fg, why, sizeof(why)),
	    -EINVAL);
}

static void
test_pending_and_decision(void **state)
{
	struct ctl_fleet_pending p = { .id = 7, .qtype = 28, .first_seen = 10, .expires = 18 },
		out;
	char why[CTL_FLEET_WHY_MAX], name[POL_NAME_MAX + 1], user[CTL_GRANT_USER_MAX + 1];
	char gw[POL_FLEET_WORD_MAX + 1], *text;
	int64_t uid;
	uint64_t id;

	(void)state;
	strcpy(p.gateway, "gwb");
	strcpy(p.vm, "vm1");
	strcpy(p.name, "x.ask.test");
	text = ctl_fleet_pending_encode(&p);
	assert_int_equal(ctl_fleet_pending_decode(text, strlen(text), &out, why, sizeof(why)), 0);
	assert_int_equal(out.id, 7);
	assert_int_equal(out.qtype, 28);
	assert_string_equal(out.gateway, "gwb");
	free(text);
	text = "{\"gateway\":\"g/b\",\"id\":7,\"vm\":\"v\",\"name\":\"n\",\"type\":1,"
	    "\"first_seen\":1,\"expires\":2}";
	assert_int_equal(ctl_fleet_pending_decode(text, strlen(text), &out, why, sizeof(why)),
	    -EINVAL);

	text = ctl_fleet_decision_encode("deny", "x.ask.test", "alice", 1000, 5);
	assert_int_equal(ctl_fleet_decision_decode(text, strlen(text), name, sizeof(name), user,
	    sizeof(user), &uid, why, sizeof(why)), 0);
	assert_string_equal(name, "x.ask.test");
	assert_int_equal(uid, 1000);
	free(text);
	text = ctl_fleet_decision_encode("approve", "x.ask.test", "alice", 1000, 5);
	assert_int_equal(ctl_fleet_decision_decode(text, strlen(text), name, sizeof(name), user,
	    sizeof(user), &uid, why, sizeof(why)), -EINVAL);	/* an approval is a grant */
	free(text);

	assert_int_equal(ctl_fleet_gw_id_parse("gwb/12", 6, gw, sizeof(gw), &id), 0);
	assert_string_equal(gw, "gwb");
	assert_int_equal(id, 12);
	assert_int_equal(ctl_fleet_gw_id_parse("gwb/012", 7, gw, sizeof(gw), &id), -EINVAL);
	assert_int_equal(ctl_fleet_gw_id_parse("gwb/0", 5, gw, sizeof(gw), &id), -EINVAL);
	assert_int_equal(ctl_fleet_gw_id_parse("g w/1", 5, gw, sizeof(gw), &id), -EINVAL);
	assert_int_equal(ctl_fleet_gw_id_parse("gwb", 3, gw, sizeof(gw), &id), -EINVAL);
	assert_int_equal(ctl_fleet_id_parse("18446744073709551615", 20, &id), -EINVAL);
}

static void
test_bundle_and_status(void **state)
{
	struct ctl_fleet_status s = { .serial = 9, .source = "bundle", .have_refused = true,
		.refused_serial = 10, .connected = true, .grants = 3, .seen = 77 };
	struct ctl_fleet_bundle b;
	char why[CTL_FLEET_WHY_MAX], *text;

	(void)state;
	text = ctl_fleet_bundle_encode("a\0b", 3, "sig", 3, 12);
	assert_int_equal(ctl_fleet_bundle_decode(text, strlen(text), &b, why, sizeof(why)), 0);
	assert_int_equal(b.policy_len, 3);
	assert_memory_equal(b.policy, "a\0b", 3);	/* bytes as written, NULs too */
	assert_int_equal(b.put_ms, 12);
	ctl_fleet_bundle_clear(&b);
	free(text);
	assert_int_equal(ctl_fleet_bundle_decode("{\"policy\":\"x\"}", 14, &b, why, sizeof(why)),
	    -EINVAL);

	strcpy(s.gateway, "gwa");
	strcpy(s.refused_reason, "expired at 2001-01-01T00:00:00Z");
	ctl_fleet_digest("abc", 3, s.digest);
	assert_string_equal(s.digest,
	    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	text = ctl_fleet_status_encode(&s);
	assert_non_null(strstr(text, "\"refused\":{\"serial\":10,\"reason\":\"expired at "));
	assert_non_null(strstr(text, "\"serial\":9,"));
	free(text);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key_kinds),
		cmocka_unit_test(test_grant_round_trip),
		cmocka_unit_test(test_grant_refusals),
		cmocka_unit_test(test_pending_and_decision),
		cmocka_unit_test(test_bundle_and_status),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

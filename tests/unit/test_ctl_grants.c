/*
 * control/grants/ctl_grants: durations, what a grant request may hold, the state file (round
 * trip, every kind of damage granting nothing, the atomic write), and the overlay the
 * daemon builds its generation from (a grant allows for its VM only, deny still wins).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ctl_grants.h"

#define NOW	1796126400	/* 2026-12-01T12:00:00Z */

static const char cfg_yaml[] =
    "policies:\n"
    "  python:\n"
    "    allow: [pypi.org]\n"
    "    deny: [upload.pypi.org, \"*.evil.test\"]\n"
    "vms:\n"
    "  - {name: vm1, mac: \"02:00:00:00:00:01\", ipv4: 10.77.0.11, policy: python}\n"
    "  - {name: vm2, mac: \"02:00:00:00:00:02\", ipv4: 10.77.0.12, policy: python}\n";

static struct pol_config *
cfg_load(void)
{
	struct pol_errs errs = { 0 };
	struct pol_config *cfg = pol_load_buffer(cfg_yaml, sizeof(cfg_yaml) - 1, "ng.yaml", &errs);

	if (cfg == NULL)
		fail_msg("config: %s", errs.n > 0 ? errs.v[0].msg : "out of memory");
	return cfg;
}

/* A scratch directory and its state file path; removed by tmp_done(). */
struct tmp {
	char dir[64];
	char path[128];
};

static void
tmp_make(struct tmp *t)
{
	strcpy(t->dir, "/tmp/test_ctl_grants.XXXXXX");
	assert_non_null(mkdtemp(t->dir));
	snprintf(t->path, sizeof(t->path), "%s/grants.json", t->dir);
}

static void
tmp_done(struct tmp *t)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->dir);
	assert_int_equal(system(cmd), 0);
}

static void
file_put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static char *
file_get(const char *path)
{
	static char buf[65536];
	FILE *f = fopen(path, "r");
	size_t n;

	if (f == NULL)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void
test_durations(void **state)
{
	static const struct {
		const char *text;
		int rc;
		uint32_t secs;
	} cases[] = {
		{ "90s", 0, 90 }, { "30m", 0, 1800 }, { "2h", 0, 7200 }, { "1d", 0, 86400 },
		{ "1h30m", 0, 5400 }, { "1d2h3m4s", 0, 93784 }, { "600", 0, 600 },
		{ "30d", 0, 30 * 86400 }, { "1s", 0, 1 }, { "0001m", 0, 60 },
		{ "", -EINVAL, 0 }, { "m", -EINVAL, 0 }, { "5x", -EINVAL, 0 },
		{ "5 m", -EINVAL, 0 }, { " 5m", -EINVAL, 0 }, { "5m ", -EINVAL, 0 },
		{ "-5m", -EINVAL, 0 }, { "+5m", -EINVAL, 0 }, { "5M", -EINVAL, 0 },
		{ "30m1h", -EINVAL, 0 }, { "1h1h", -EINVAL, 0 }, { "5m10", -EINVAL, 0 },
		{ "1.5h", -EINVAL, 0 }, { "0", -ERANGE, 0 }, { "0s", -ERANGE, 0 },
		{ "0h0m", -ERANGE, 0 }, { "31d", -ERANGE, 0 }, { "30d1s", -ERANGE, 0 },
		{ "2592001", -ERANGE, 0 }, { "99999999999999999999999s", -ERANGE, 0 },
		{ "18446744073709551617", -ERANGE, 0 }, { "720h1s", -ERANGE, 0 },
	};
	char why[160];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint32_t secs = 0;
		int rc = ctl_duration_parse(cases[i].text, &secs, why, sizeof(why));

		if (rc != cases[i].rc || (rc == 0 && secs != cases[i].secs))
			fail_msg("\"%s\": rc %d secs %u, want %d %u (%s)", cases[i].text, rc, secs,
			    cases[i].rc, cases[i].secs, rc < 0 ? why : "");
		if (rc < 0)
			assert_true(strlen(why) > 0);
	}
}

/* Any string: parsed to a value in range, or refused with a reason; never more. */
static void
test_durations_random(void **state)
{
	static const char alphabet[] = "0123456789dhms x-";
	char text[12], why[160];

	(void)state;
	srand(7);
	for (int k = 0; k < 200000; k++) {
		size_t n = (size_t)rand() % (sizeof(text) - 1);
		uint32_t secs = 0;

		for (size_t i = 0; i < n; i++)
			text[i] = alphabet[rand() % (sizeof(alphabet) - 1)];
		text[n] = '\0';
		why[0] = '\0';
		if (ctl_duration_parse(text, &secs, why, sizeof(why)) == 0)
			assert_true(secs >= 1 && secs <= CTL_GRANT_SECONDS_MAX);
		else
			assert_true(why[0] != '\0');
	}
}

static void
test_add_checks(void **state)
{
	struct pol_config *cfg = cfg_load();
	struct ctl_grants *g = ctl_grants_new("/nonexistent/grants.json");
	char longreason[CTL_GRANT_REASON_MAX + 2], longhost[400], why[512];
	struct ctl_grant gr;
	static const struct {
		const char *vm, *host, *dur, *reason, *why;
	} bad[] = {
		{ "vm9", "pypi.org", "1h", NULL, "unknown VM 'vm9'" },
		{ "vm1", "*", "1h", NULL, "bad host pattern \"*\"" },
		{ "vm1", "*.com", "1h", NULL, "bad host pattern \"*.com\"" },
		{ "vm1", "exa mple.com", "1h", NULL, "bad host pattern" },
		{ "vm1", "example.com:0", "1h", NULL, "bad host pattern" },
		{ "vm1", "example.com:70000", "1h", NULL, "bad host pattern" },
		{ "vm1", "pypi.org", "31d", NULL, "longer than 30d" },
		{ "vm1", "pypi.org", "soon", NULL, "bad duration" },
		{ "vm1", "pypi.org", "1h", "two\nlines", "one line" },
		{ "vm1", "pypi.org", "1h", "bell\a", "one line" },
		{ "vm1", "pypi.org", "1h", "\xff\xfe", "UTF-8" },
		{ "vm1", "pypi.org", "1h", "\xc0\xaf", "UTF-8" },		/* overlong '/' */
		{ "vm1", "pypi.org", "1h", "\xed\xa0\x80", "UTF-8" },	/* a surrogate */
		{ "vm1", "pypi.org", "1h", "\xc2\x9b", "UTF-8" },		/* C1 CSI */
	};

	(void)state;
	assert_non_null(g);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = ctl_grants_add(g, cfg, bad[i].vm, bad[i].host, bad[i].dur, bad[i].reason,
		    NOW, &gr, why, sizeof(why));

		if (rc >= 0 || strstr(why, bad[i].why) == NULL)
			fail_msg("case %zu: rc %d why '%s', want '%s'", i, rc, why, bad[i].why);
	}
	memset(longreason, 'a', sizeof(longreason) - 1);
	longreason[sizeof(longreason) - 1] = '\0';
	assert_true(ctl_grants_add(g, cfg, "vm1", "pypi.org", "1h", longreason, NOW, &gr, why,
	    sizeof(why)) < 0);
	assert_non_null(strstr(why, "longer than"));
	memset(longhost, 'a', sizeof(longhost) - 1);
	longhost[sizeof(longhost) - 1] = '\0';
	assert_true(ctl_grants_add(g, cfg, "vm1", longhost, "1h", NULL, NOW, &gr, why,
	    sizeof(why)) < 0);
	assert_int_equal(ctl_grants_count(g), 0);
	/* the good ones: ids from 1, UTF-8 reasons kept as they are */
	assert_int_equal(ctl_grants_add(g, cfg, "vm1", "files.pythonhosted.org:443", "30m",
	    "pip needs it \xe2\x80\x94 caf\xc3\xa9", NOW, &gr, why, sizeof(why)), 0);
	assert_int_equal(gr.id, 1);
	assert_int_equal(gr.expires, NOW + 1800);
	assert_int_equal(gr.pattern.port, 443);
	assert_int_equal(ctl_grants_add(g, cfg, "vm2", "203.0.113.0/24", "1d", NULL, NOW, &gr,
	    why, sizeof(why)), 0);
	assert_int_equal(gr.id, 2);
	assert_int_equal(ctl_grants_count_vm(g, "vm1"), 1);
	assert_int_equal(ctl_grants_next_expiry(g), NOW + 1800);
	assert_int_equal(ctl_grants_revoke(g, 1, &gr), 0);
	assert_string_equal(gr.host, "files.pythonhosted.org:443");
	assert_int_equal(ctl_grants_revoke(g, 1, NULL), -ENOENT);
	assert_int_equal(ctl_grants_expire(g, NOW + 86399, NULL, NULL), 0);
	assert_int_equal(ctl_grants_expire(g, NOW + 86400, NULL, NULL), 1);
	assert_int_equal(ctl_grants_count(g), 0);
	/* an id is never handed out twice, even after its grant ended */
	assert_int_equal(ctl_grants_add(g, cfg, "vm1", "pypi.org", "1m", NULL, NOW, &gr, why,
	    sizeof(why)), 0);
	assert_int_equal(gr.id, 3);
	ctl_grants_free(g);
	pol_config_free(cfg);
}

static void
test_table_full(void **state)
{
	struct pol_config *cfg = cfg_load();
	struct ctl_grants *g = ctl_grants_new("x");
	struct ctl_grant gr;
	char why[256];

	(void)state;
	for (int i = 0; i < CTL_GRANTS_MAX; i++)
		assert_int_equal(ctl_grants_add(g, cfg, "vm1", "pypi.org", "1h", NULL, NOW, &gr,
		    why, sizeof(why)), 0);
	assert_int_equal(ctl_grants_add(g, cfg, "vm1", "pypi.org", "1h", NULL, NOW, &gr, why,
	    sizeof(why)), -ENOSPC);
	assert_non_null(strstr(why, "revoke one"));
	ctl_grants_free(g);
	pol_config_free(cfg);
}

static void
test_file_round_trip(void **state)
{
	struct pol_config *cfg = cfg_load();
	struct ctl_grants *g, *back;
	struct ctl_grant gr;
	char why[256], tmp[160];
	struct tmp t;
	struct stat st;

	(void)state;
	tmp_make(&t);
	g = ctl_grants_new(t.path);
	back = ctl_grants_new(t.path);
	assert_int_equal(ctl_grants_load(back, why, sizeof(why)), 0);	/* no file: none */
	assert_int_equal(ctl_grants_count(back), 0);
	assert_int_equal(ctl_grants_add(g, cfg, "vm1", "files.pythonhosted.org", "30m",
	    "pip \"quoted\" \\ caf\xc3\xa9", NOW, &gr, why, sizeof(why)), 0);
	assert_int_equal(ctl_grants_add(g, cfg, "vm2", "[2001:db8::/32]:443", "2h", NULL, NOW,
	    &gr, why, sizeof(why)), 0);
	assert_int_equal(ctl_grants_add(g, cfg, "vm1", "*.example.com", "1d", NULL, NOW, &gr,
	    why, sizeof(why)), 0);
	assert_int_equal(gr.uid, -1);			/* nobody until someone is recorded */
	assert_int_equal(ctl_grants_set_maker(g, 3, 1000, "alice", &gr), 0);
	assert_true(gr.uid == 1000 && strcmp(gr.user, "alice") == 0);
	assert_int_equal(ctl_grants_set_maker(g, 9, 1000, "alice", NULL), -ENOENT);
	assert_int_equal(ctl_grants_revoke(g, 2, NULL), 0);
	assert_int_equal(ctl_grants_save(g, why, sizeof(why)), 0);
	snprintf(tmp, sizeof(tmp), "%s.tmp", t.path);
	assert_int_equal(access(tmp, F_OK), -1);		/* renamed, not left */
	assert_int_equal(stat(t.path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0640 & ~(mode_t)umask(022));
	assert_int_equal(ctl_grants_load(back, why, sizeof(why)), 0);
	assert_int_equal(ctl_grants_count(back), 2);
	for (size_t i = 0; i < 2; i++) {
		const struct ctl_grant *a = ctl_grants_at(g, i), *b = ctl_grants_at(back, i);

		assert_int_equal(a->id, b->id);
		assert_string_equal(a->vm, b->vm);
		assert_string_equal(a->host, b->host);
		assert_string_equal(a->reason, b->reason);
		assert_int_equal(a->created, b->created);
		assert_int_equal(a->expires, b->expires);
		assert_memory_equal(&a->pattern, &b->pattern, sizeof(a->pattern));
		assert_int_equal(a->uid, b->uid);	/* the maker survives a restart */
		assert_string_equal(a->user, b->user);
	}
	assert_int_equal(ctl_grants_at(back, 0)->uid, -1);
	assert_int_equal(ctl_grants_at(back, 1)->uid, 1000);
	/* next_id survives: the revoked 2 and the 3 are not handed out again */
	assert_int_equal(ctl_grants_add(back, cfg, "vm2", "pypi.org", "1m", NULL, NOW, &gr, why,
	    sizeof(why)), 0);
	assert_int_equal(gr.id, 4);
	ctl_grants_free(g);
	ctl_grants_free(back);
	pol_config_free(cfg);
	tmp_done(&t);
}

static void
test_file_damaged(void **state)
{
	static const char *const damaged[] = {
		"",
		"{",
		"not json",
		"[]",
		"{\"version\":1,\"next_id\":2,\"grants\":[]} {}",
		"{\"version\":2,\"next_id\":2,\"grants\":[]}",
		"{\"version\":1,\"grants\":[]}",
		"{\"version\":1,\"next_id\":0,\"grants\":[]}",
		"{\"version\":1,\"next_id\":2,\"grants\":{}}",
		"{\"version\":1,\"next_id\":2,\"grants\":[],\"more\":1}",
		"{\"version\":1,\"next_id\":2,\"grants\":[7]}",
		"{\"version\":1,\"next_id\":5,\"grants\":[{\"id\":1,\"vm\":\"vm1\",\"host\":"
		    "\"pypi.org\",\"created\":100,\"expires\":200,\"reason\":\"\",\"x\":1}]}",
		"{\"version\":1,\"next_id\":5,\"grants\":[{\"id\":1,\"vm\":\"vm1\",\"host\":"
		    "\"*\",\"created\":100,\"expires\":200,\"reason\":\"\"}]}",
		"{\"version\":1,\"next_id\":5,\"grants\":[{\"id\":1,\"vm\":\"vm1\",\"host\":"
		    "\"pypi.org\",\"created\":100,\"expires\":99999999,\"reason\":\"\"}]}",
		"{\"version\":1,\"next_id\":5,\"grants\":[{\"id\":1,\"vm\":\"vm1\",\"host\":"
		    "\"pypi.org\",\"created\":200,\"expires\":100,\"reason\":\"\"}]}",
		"{\"version\":1,\"next_id\":5,\"grants\":[{\"id\":0,\"vm\":\"vm1\",\"host\":"
		    "\"pypi.org\",\"created\":100,\"expires\":200,\"reason\":\"\"}]}",
		"{\"version\":1,\"next_id\":5,\"grants\":[{\"id\":\"1\",\"vm\":\"vm1\",\"host\":"
		    "\"pypi.org\",\"created\":100,\"expires\":200,\"reason\":\"\"}]}",
		"{\"version\":1,\"next_id\":1,\"grants\":[{\"id\":1,\"vm\":\"vm1\",\"host\":"
		    "\"pypi.org\",\"created\":100,\"expires\":200,\"reason\":\"\"}]}",
		"{\"version\":1,\"next_id\":5,\"grants\":[{\"id\":1,\"vm\":\"\",\"host\":"
		    "\"pypi.org\",\"created\":100,\"expires\":200,\"reason\":\"\"}]}",
		"{\"version\":1,\"next_id\":5,\"grants\":[{\"id\":1,\"vm\":\"vm1\",\"host\":"
		    "\"pypi.org\",\"created\":100,\"expires\":200,\"reason\":\"a\\nb\"}]}",
		"{\"version\":1,\"next_id\":5,\"grants\":[{\"id\":1,\"vm\":\"vm1\",\"host\":"
		    "\"pypi.org\",\"created\":-5,\"expires\":200,\"reason\":\"\"}]}",
		/* a maker is a uid and a name, both or neither */
		"{\"version\":1,\"next_id\":5,\"grants\":[{\"id\":1,\"vm\":\"vm1\",\"host\":"
		    "\"pypi.org\",\"created\":100,\"expires\":200,\"reason\":\"\",\"uid\":0}]}",
		"{\"version\":1,\"next_id\":5,\"grants\":[{\"id\":1,\"vm\":\"vm1\",\"host\":"
		    "\"pypi.org\",\"created\":100,\"expires\":200,\"reason\":\"\","
		    "\"user\":\"x\"}]}",
		"{\"version\":1,\"next_id\":5,\"grants\":[{\"id\":1,\"vm\":\"vm1\",\"host\":"
		    "\"pypi.org\",\"created\":100,\"expires\":200,\"reason\":\"\",\"uid\":-1,"
		    "\"user\":\"x\"}]}",
		"{\"version\":1,\"next_id\":5,\"grants\":[{\"id\":1,\"vm\":\"vm1\",\"host\":"
		    "\"pypi.org\",\"created\":100,\"expires\":200,\"reason\":\"\",\"uid\":0,"
		    "\"user\":\"\"}]}",
		/* a good grant, then one with its id: the good one must not count either */
		"{\"version\":1,\"next_id\":5,\"grants\":[{\"id\":1,\"vm\":\"vm1\",\"host\":"
		    "\"pypi.org\",\"created\":100,\"expires\":200,\"reason\":\"\"},{\"id\":1,"
		    "\"vm\":\"vm2\",\"host\":\"pypi.org\",\"created\":100,\"expires\":200,"
		    "\"reason\":\"\"}]}",
		"{\"version\":1,\"next_id\":5,\"grants\":[{\"id\":1,\"vm\":\"vm1\",\"host\":"
		    "\"pypi.org\",\"created\":100,\"expires\":200,\"reason\":\"\"},{\"id\":2}]}",
	};
	char why[512], aside[160];
	struct tmp t;

	(void)state;
	tmp_make(&t);
	snprintf(aside, sizeof(aside), "%s.damaged", t.path);
	for (size_t i = 0; i < sizeof(damaged) / sizeof(damaged[0]); i++) {
		struct ctl_grants *g = ctl_grants_new(t.path);
		const char *kept;

		file_put(t.path, damaged[i]);
		why[0] = '\0';
		if (ctl_grants_load(g, why, sizeof(why)) >= 0)
			fail_msg("case %zu loaded: %s", i, damaged[i]);
		assert_int_equal(ctl_grants_count(g), 0);	/* fail closed */
		assert_non_null(strstr(why, t.path));
		assert_non_null(strstr(why, "moved to"));
		assert_int_equal(access(t.path, F_OK), -1);
		assert_non_null(kept = file_get(aside));	/* kept for the operator */
		assert_string_equal(kept, damaged[i]);
		ctl_grants_free(g);
	}
	/* a file that is not a regular one, and one too large */
	{
		struct ctl_grants *g = ctl_grants_new(t.path);
		FILE *f;

		unlink(aside);
		assert_int_equal(mkdir(t.path, 0700), 0);
		assert_true(ctl_grants_load(g, why, sizeof(why)) < 0);
		assert_int_equal(ctl_grants_count(g), 0);
		assert_int_equal(rmdir(aside), 0);	/* renamed aside too */
		assert_non_null(f = fopen(t.path, "w"));
		for (unsigned int i = 0; i <= CTL_GRANTS_FILE_MAX / 16; i++)
			fputs("                ", f);
		fclose(f);
		assert_true(ctl_grants_load(g, why, sizeof(why)) < 0);
		assert_non_null(strstr(why, "larger than"));
		assert_int_equal(ctl_grants_count(g), 0);
		ctl_grants_free(g);
	}
	tmp_done(&t);
}

/*
 * Atomic: the file is the old table or the new one, whole. A save that cannot finish
 * (here: its temporary name is taken by a directory) leaves the old file as it was; a
 * temporary file a crash left behind is written over, not appended to.
 */
static void
test_file_atomic(void **state)
{
	struct pol_config *cfg = cfg_load();
	struct ctl_grants *g, *back;
	struct ctl_grant gr;
	char why[512], tmp[160], before[65536];
	struct tmp t;

	(void)state;
	tmp_make(&t);
	snprintf(tmp, sizeof(tmp), "%s.tmp", t.path);
	g = ctl_grants_new(t.path);
	file_put(tmp, "left by a crash, much longer than what comes next: xxxxxxxxxxxxxxxxxxx"
	    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
	assert_int_equal(ctl_grants_add(g, cfg, "vm1", "pypi.org", "1h", NULL, NOW, &gr, why,
	    sizeof(why)), 0);
	assert_int_equal(ctl_grants_save(g, why, sizeof(why)), 0);
	snprintf(before, sizeof(before), "%s", file_get(t.path));
	assert_null(strstr(before, "crash"));
	assert_int_equal(mkdir(tmp, 0700), 0);
	assert_int_equal(ctl_grants_add(g, cfg, "vm2", "github.com", "1h", NULL, NOW, &gr, why,
	    sizeof(why)), 0);
	assert_true(ctl_grants_save(g, why, sizeof(why)) < 0);
	assert_non_null(strstr(why, t.path));
	assert_string_equal(file_get(t.path), before);
	back = ctl_grants_new(t.path);
	assert_int_equal(ctl_grants_load(back, why, sizeof(why)), 0);
	assert_int_equal(ctl_grants_count(back), 1);
	assert_int_equal(rmdir(tmp), 0);
	assert_int_equal(ctl_grants_save(g, why, sizeof(why)), 0);
	ctl_grants_free(back);
	back = ctl_grants_new(t.path);
	assert_int_equal(ctl_grants_load(back, why, sizeof(why)), 0);
	assert_int_equal(ctl_grants_count(back), 2);
	ctl_grants_free(back);
	ctl_grants_free(g);
	pol_config_free(cfg);
	tmp_done(&t);
}

/* Random bytes where the state file goes: loaded only if it really is a good file. */
static void
test_file_random(void **state)
{
	static const char good[] = "{\"version\":1,\"next_id\":3,\"grants\":[{\"id\":2,\"vm\":"
	    "\"vm1\",\"host\":\"pypi.org:443\",\"created\":100,\"expires\":200,\"reason\":\"r\"}]}";
	char buf[sizeof(good)], why[512];
	struct tmp t;
	int loaded = 0;

	(void)state;
	tmp_make(&t);
	srand(11);
	for (int k = 0; k < 3000; k++) {
		struct ctl_grants *g = ctl_grants_new(t.path);
		int flips = 1 + rand() % 3;

		memcpy(buf, good, sizeof(good));
		for (int i = 0; i < flips; i++)
			buf[rand() % (sizeof(good) - 1)] = (char)(rand() % 256 ? rand() % 256 : 1);
		file_put(t.path, buf);
		if (ctl_grants_load(g, why, sizeof(why)) == 0) {
			loaded++;
			assert_true(ctl_grants_count(g) <= 1);
		} else {
			assert_int_equal(ctl_grants_count(g), 0);
		}
		unlink(t.path);
		ctl_grants_free(g);
	}
	/* most single flips break it; the few that load are still well-formed */
	assert_true(loaded < 3000);
	tmp_done(&t);
}

static enum pol_verdict
match(const struct pol_config *c, const char *vm, const char *name, uint16_t port,
    const struct pol_rule **rule)
{
	const struct pol_vm *v = pol_config_vm(c, vm);

	return pol_match_name(c->set, v->policy, name, strlen(name), POL_PROTO_TCP, port, rule);
}

static void
test_overlay(void **state)
{
	struct pol_config *cfg = cfg_load();
	struct ctl_grants *g = ctl_grants_new("/var/lib/namegate/grants.json");
	const struct pol_rule *rule;
	struct ctl_overlay ov;
	struct ctl_grant gr;
	char why[256];

	(void)state;
	assert_int_equal(ctl_overlay_build(g, cfg, NOW, &ov), 0);
	assert_null(ov.set);					/* no grants: cfg as it is */
	assert_ptr_equal(ov.view.set, cfg->set);
	ctl_overlay_free(&ov);
	assert_int_equal(ctl_grants_add(g, cfg, "vm1", "files.pythonhosted.org:443", "30m",
	    "pip needs it", NOW, &gr, why, sizeof(why)), 0);
	assert_int_equal(ctl_grants_add(g, cfg, "vm1", "*.pypi.org", "2d", NULL, NOW, &gr, why,
	    sizeof(why)), 0);
	assert_int_equal(ctl_grants_add(g, cfg, "vm1", "x.evil.test", "1h", NULL, NOW, &gr, why,
	    sizeof(why)), 0);
	assert_int_equal(ctl_overlay_build(g, cfg, NOW, &ov), 0);
	assert_non_null(ov.set);
	/* the grant decides, for vm1 and its port only */
	assert_int_equal(match(&ov.view, "vm1", "files.pythonhosted.org", 443, &rule), POL_ALLOW);
	assert_true(rule->grant);
	assert_string_equal(rule->key, "grant 1 until 12:30Z, \"pip needs it\"");
	assert_int_equal(match(&ov.view, "vm1", "files.pythonhosted.org", 80, NULL),
	    POL_NO_MATCH);
	assert_int_equal(match(&ov.view, "vm2", "files.pythonhosted.org", 443, NULL),
	    POL_NO_MATCH);
	/* the policy's own patterns are all there, for both VMs */
	assert_int_equal(match(&ov.view, "vm1", "pypi.org", 443, &rule), POL_ALLOW);
	assert_false(rule->grant);
	assert_string_equal(rule->key, "policies.python.allow");
	assert_int_equal(match(&ov.view, "vm2", "pypi.org", 443, NULL), POL_ALLOW);
	/* deny beats a grant: upload.pypi.org under *.pypi.org, x.evil.test under *.evil.test */
	assert_int_equal(match(&ov.view, "vm1", "upload.pypi.org", 443, &rule), POL_DENY);
	assert_false(rule->grant);
	assert_int_equal(match(&ov.view, "vm1", "x.evil.test", 443, NULL), POL_DENY);
	assert_int_equal(match(&ov.view, "vm1", "docs.pypi.org", 443, &rule), POL_ALLOW);
	assert_true(rule->grant);
	if (strcmp(rule->key, "grant 2 until 2026-12-03T12:00Z") != 0)	/* days away */
		fail_msg("key '%s'", rule->key);
	ctl_overlay_free(&ov);
	/* ended grants are left out, even before they are expired from the table */
	assert_int_equal(ctl_overlay_build(g, cfg, NOW + 1800, &ov), 0);
	assert_int_equal(match(&ov.view, "vm1", "files.pythonhosted.org", 443, NULL),
	    POL_NO_MATCH);
	assert_int_equal(match(&ov.view, "vm1", "docs.pypi.org", 443, NULL), POL_ALLOW);
	ctl_overlay_free(&ov);
	/* check names the grant */
	assert_int_equal(ctl_overlay_build(g, cfg, NOW, &ov), 0);
	{
		char *line = NULL;
		size_t len = 0;
		FILE *out = open_memstream(&line, &len);

		assert_int_equal(pol_explain(&ov.view, "vm1", "files.pythonhosted.org:443", out,
		    stderr), 0);
		fclose(out);
		assert_string_equal(line, "allow files.pythonhosted.org:443 for vm1 by grant 1 "
		    "until 12:30Z, \"pip needs it\"\n");
		free(line);
	}
	ctl_overlay_free(&ov);
	ctl_grants_free(g);
	pol_config_free(cfg);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_durations),
		cmocka_unit_test(test_durations_random),
		cmocka_unit_test(test_add_checks),
		cmocka_unit_test(test_table_full),
		cmocka_unit_test(test_file_round_trip),
		cmocka_unit_test(test_file_damaged),
		cmocka_unit_test(test_file_atomic),
		cmocka_unit_test(test_file_random),
		cmocka_unit_test(test_overlay),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

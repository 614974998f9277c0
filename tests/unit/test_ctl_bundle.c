/*
 * Signed policy bundles: real keys and signatures made by Debian's minisign at test time
 * (no password, -W), judged as a table. Each refusal names its reason.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "ctl_bundle.h"

#define NOW		1800000000	/* 2027-01-15T08:00:00Z */
#define FUTURE		"2030-01-01T00:00:00Z"

static const char good_policy[] =
    "policies:\n"
    "  p: {allow: [pypi.org]}\n"
    "vms:\n"
    "  - {name: a1, mac: \"02:00:00:00:00:01\", ipv4: 10.77.0.11, policy: p}\n";
static const char bad_policy[] =
    "policies:\n"
    "  p: {allow: [pypi.org]}\n"
    "vms:\n"
    "  - {name: a1, mac: \"02:00:00:00:00:01\", ipv4: 10.77.0.11, policy: nope}\n";

static char dir[64];

static void
run(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (system(cmd) != 0)
		fail_msg("failed: %s", cmd);
}

static char *
slurp(const char *path, size_t *len)
{
	char *buf;

	if (ctl_bundle_read(path, CTL_BUNDLE_FILE_MAX, &buf, len) != 0)
		fail_msg("cannot read %s", path);
	return buf;
}

static void
put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static struct ctl_bundle_key
key_of(const char *name)
{
	struct ctl_bundle_key k;
	char path[128], why[160];
	size_t len;
	char *buf;

	snprintf(path, sizeof(path), "%s/%s.pub", dir, name);
	buf = slurp(path, &len);
	if (ctl_bundle_key_parse(buf, len, &k, why, sizeof(why)) != 0)
		fail_msg("%s: %s", path, why);
	free(buf);
	return k;
}

static int
setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/test_ctl_bundle.XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	run("cd %s && minisign -G -W -p k1.pub -s k1.sec >/dev/null && "
	    "minisign -G -W -p k2.pub -s k2.sec >/dev/null", dir);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	run("rm -rf '%s'", dir);
	return 0;
}

enum mutation { M_NONE, M_FILE, M_COMMENT, M_SIG, M_GLOBAL, M_CUT };

struct row {
	const char *what;
	const char *policy;
	const char *key;		/* which key signs */
	bool legacy;			/* minisign -l: the file itself is signed */
	const char *comment;
	enum mutation mutate;
	bool have_running;
	uint64_t running;
	enum ctl_bundle_verdict want;
	const char *reason;		/* the start of the reason */
};

#define TC(serial, until)	"namegate-bundle fleet=prod shard=rack1 serial=" serial \
				" not_after=" until

static const struct row rows[] = {
	{ "good", good_policy, "k1", false, TC("10", FUTURE), M_NONE, true, 9,
	    CTL_BUNDLE_ACCEPTED, "" },
	{ "good, nothing running", good_policy, "k1", false, TC("1", FUTURE), M_NONE, false, 0,
	    CTL_BUNDLE_ACCEPTED, "" },
	{ "good, legacy", good_policy, "k1", true, TC("10", FUTURE), M_NONE, true, 9,
	    CTL_BUNDLE_ACCEPTED, "" },
	{ "fields in another order", good_policy, "k1", false,
	    "namegate-bundle not_after=" FUTURE " serial=10 shard=rack1 fleet=prod", M_NONE,
	    false, 0, CTL_BUNDLE_ACCEPTED, "" },
	{ "flipped file byte", good_policy, "k1", false, TC("10", FUTURE), M_FILE, true, 9,
	    CTL_BUNDLE_BAD_SIGNATURE, "signature does not verify" },
	{ "flipped file byte, legacy", good_policy, "k1", true, TC("10", FUTURE), M_FILE, true,
	    9, CTL_BUNDLE_BAD_SIGNATURE, "signature does not verify" },
	{ "flipped comment byte", good_policy, "k1", false, TC("10", FUTURE), M_COMMENT, true,
	    9, CTL_BUNDLE_BAD_COMMENT, "trusted comment's signature does not verify" },
	{ "flipped signature byte", good_policy, "k1", false, TC("10", FUTURE), M_SIG, true, 9,
	    CTL_BUNDLE_BAD_SIGNATURE, "signature does not verify" },
	{ "flipped global signature byte", good_policy, "k1", false, TC("10", FUTURE),
	    M_GLOBAL, true, 9, CTL_BUNDLE_BAD_COMMENT,
	    "trusted comment's signature does not verify" },
	{ "signature cut after its trusted comment", good_policy, "k1", false, TC("10", FUTURE),
	    M_CUT, true, 9, CTL_BUNDLE_MALFORMED, "signature file: line 4 is not the base64" },
	{ "another key", good_policy, "k2", false, TC("10", FUTURE), M_NONE, true, 9,
	    CTL_BUNDLE_UNKNOWN_KEY, "signed by key ID " },
	{ "wrong fleet", good_policy, "k1", false,
	    "namegate-bundle fleet=staging shard=rack1 serial=10 not_after=" FUTURE, M_NONE,
	    true, 9, CTL_BUNDLE_WRONG_TARGET,
	    "for fleet staging shard rack1, not fleet prod shard rack1" },
	{ "wrong shard", good_policy, "k1", false,
	    "namegate-bundle fleet=prod shard=rack2 serial=10 not_after=" FUTURE, M_NONE,
	    true, 9, CTL_BUNDLE_WRONG_TARGET,
	    "for fleet prod shard rack2, not fleet prod shard rack1" },
	{ "serial below", good_policy, "k1", false, TC("7", FUTURE), M_NONE, true, 9,
	    CTL_BUNDLE_OLD_SERIAL, "serial 7 is not above the running 9" },
	{ "serial equal", good_policy, "k1", false, TC("9", FUTURE), M_NONE, true, 9,
	    CTL_BUNDLE_OLD_SERIAL, "serial 9 is not above the running 9" },
	{ "expired", good_policy, "k1", false, TC("10", "2027-01-15T07:59:59Z"), M_NONE, true,
	    9, CTL_BUNDLE_EXPIRED, "expired at 2027-01-15T07:59:59Z" },
	{ "expires now", good_policy, "k1", false, TC("10", "2027-01-15T08:00:00Z"), M_NONE,
	    true, 9, CTL_BUNDLE_EXPIRED, "expired at 2027-01-15T08:00:00Z" },
	{ "expires in a second", good_policy, "k1", false, TC("10", "2027-01-15T08:00:01Z"),
	    M_NONE, true, 9, CTL_BUNDLE_ACCEPTED, "" },
	{ "policy does not compile", bad_policy, "k1", false, TC("10", FUTURE), M_NONE, true, 9,
	    CTL_BUNDLE_BAD_POLICY, "policy: bundle.yaml:4:" },
	{ "not a bundle comment", good_policy, "k1", false, "timestamp:1 file:bundle.yaml",
	    M_NONE, true, 9, CTL_BUNDLE_BAD_META, "trusted comment: not a namegate-bundle" },
	{ "serial twice", good_policy, "k1", false, TC("10", FUTURE) " serial=11", M_NONE, true,
	    9, CTL_BUNDLE_BAD_META, "trusted comment: serial given twice" },
	{ "no shard", good_policy, "k1", false,
	    "namegate-bundle fleet=prod serial=10 not_after=" FUTURE, M_NONE, true, 9,
	    CTL_BUNDLE_BAD_META, "trusted comment: no shard" },
	{ "serial past 2^64", good_policy, "k1", false, TC("18446744073709551616", FUTURE),
	    M_NONE, true, 9, CTL_BUNDLE_BAD_META, "trusted comment: serial is not" },
	{ "offset time", good_policy, "k1", false, TC("10", "2030-01-01T00:00:00+01:00"),
	    M_NONE, true, 9, CTL_BUNDLE_BAD_META, "trusted comment: not_after is not" },
};

/* Change the byte at off in path, to another base64 letter when it is a letter. */
static void
flip(const char *path, size_t off)
{
	size_t len;
	char *buf = slurp(path, &len);
	FILE *f;

	assert_true(off < len);
	/* another character of the same alphabet: a base64 byte stays one ('+' ^ 1 would not) */
	if ((buf[off] >= 'A' && buf[off] <= 'Z') || (buf[off] >= 'a' && buf[off] <= 'z'))
		buf[off] = buf[off] == 'A' ? 'B' : 'A';
	else if (buf[off] == '+' || buf[off] == '/')
		buf[off] = buf[off] == '+' ? '/' : '+';
	else
		buf[off] ^= 0x01;
	assert_non_null(f = fopen(path, "w"));
	assert_int_equal(fwrite(buf, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	free(buf);
}

/* The offset of the nth byte of line (from 0) in path. */
static size_t
line_at(const char *path, int line, size_t nth)
{
	size_t len, off = 0;
	char *buf = slurp(path, &len);

	for (int l = 0; l < line; l++) {
		while (off < len && buf[off] != '\n')
			off++;
		assert_true(off < len);
		off++;
	}
	free(buf);
	return off + nth;
}

static void
judge_row(const struct row *r, const struct ctl_bundle_key *k1)
{
	char file[128], sig[160];
	struct ctl_bundle_want want = { .keys = k1, .nkeys = 1, .fleet = "prod",
		.shard = "rack1", .have_running = r->have_running, .running = r->running,
		.now = NOW };
	struct ctl_bundle_result res;
	char *fb, *sb;
	size_t flen, slen;

	snprintf(file, sizeof(file), "%s/bundle.yaml", dir);
	snprintf(sig, sizeof(sig), "%s.minisig", file);
	put(file, r->policy);
	run("minisign -S -W %s -s %s/%s.sec -m %s -t '%s' >/dev/null", r->legacy ? "-l" : "",
	    dir, r->key, file, r->comment);
	if (r->mutate == M_FILE)
		flip(file, 20);
	else if (r->mutate == M_COMMENT)
		flip(sig, line_at(sig, 2, strlen("trusted comment: namegate-bundle fleet=p")));
	else if (r->mutate == M_SIG)
		flip(sig, line_at(sig, 1, 40));		/* base64 of the signature proper */
	else if (r->mutate == M_GLOBAL)
		flip(sig, line_at(sig, 3, 10));
	else if (r->mutate == M_CUT)
		assert_int_equal(truncate(sig, (off_t)line_at(sig, 3, 0)), 0);
	fb = slurp(file, &flen);
	sb = slurp(sig, &slen);
	ctl_bundle_judge(&want, fb, flen, "bundle.yaml", sb, slen, true, &res);
	if (res.verdict != r->want || strncmp(res.reason, r->reason, strlen(r->reason)) != 0)
		fail_msg("%s: verdict %d \"%s\", want %d \"%s...\"", r->what, res.verdict,
		    res.reason, r->want, r->reason);
	if (r->want == CTL_BUNDLE_ACCEPTED) {
		assert_non_null(res.cfg);
		assert_non_null(pol_config_vm(res.cfg, "a1"));
		assert_string_equal(res.reason, "");
		assert_string_equal(res.meta.fleet, "prod");
	} else {
		assert_null(res.cfg);
	}
	pol_config_free(res.cfg);
	free(fb);
	free(sb);
}

static void
test_table(void **state)
{
	struct ctl_bundle_key k1 = key_of("k1");

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		judge_row(&rows[i], &k1);
}

/* The configured list may hold other keys: the one whose id matches verifies. */
static void
test_second_key(void **state)
{
	struct ctl_bundle_key keys[2] = { key_of("k1"), key_of("k2") };
	struct ctl_bundle_want want = { .keys = keys, .nkeys = 2, .fleet = "prod",
		.shard = "rack1", .now = NOW };
	struct ctl_bundle_result res;
	char file[128], sig[160];
	char *fb, *sb;
	size_t flen, slen;

	(void)state;
	snprintf(file, sizeof(file), "%s/two.yaml", dir);
	snprintf(sig, sizeof(sig), "%s.minisig", file);
	put(file, good_policy);
	run("minisign -S -W -s %s/k2.sec -m %s -t '%s' >/dev/null", dir, file, TC("3", FUTURE));
	fb = slurp(file, &flen);
	sb = slurp(sig, &slen);
	assert_int_equal(ctl_bundle_judge(&want, fb, flen, "two.yaml", sb, slen, false, &res),
	    CTL_BUNDLE_ACCEPTED);
	assert_int_equal(res.meta.serial, 3);
	assert_null(res.cfg);
	/* a key with k2's id but k1's bytes: the id alone is not trust */
	memcpy(keys[0].id, keys[1].id, sizeof(keys[0].id));
	want.keys = keys;
	want.nkeys = 1;
	assert_int_equal(ctl_bundle_judge(&want, fb, flen, "two.yaml", sb, slen, false, &res),
	    CTL_BUNDLE_BAD_SIGNATURE);
	free(fb);
	free(sb);
}

/* The bare base64 line and the whole file give the same key; junk is refused. */
static void
test_key_forms(void **state)
{
	struct ctl_bundle_key a = key_of("k1"), b;
	char path[128], why[160];
	size_t len, l2 = 0;
	char *buf;

	(void)state;
	snprintf(path, sizeof(path), "%s/k1.pub", dir);
	buf = slurp(path, &len);
	while (l2 < len && buf[l2++] != '\n')
		;
	assert_int_equal(ctl_bundle_key_parse(buf + l2, len - l2, &b, why, sizeof(why)), 0);
	assert_memory_equal(&a, &b, sizeof(a));
	assert_int_equal(ctl_bundle_key_parse(buf + l2, 20, &b, why, sizeof(why)), -1);
	assert_int_equal(ctl_bundle_key_parse("/etc/namegate/k.pub", 19, &b, why, sizeof(why)),
	    -1);
	assert_int_equal(ctl_bundle_key_parse("", 0, &b, why, sizeof(why)), -1);
	free(buf);
}

/* Times: the calendar, not a pattern of digits. */
static void
test_times(void **state)
{
	static const struct {
		const char *t;
		long long want;		/* -1: refused */
	} cases[] = {
		{ "1970-01-01T00:00:00Z", 0 },
		{ "2028-02-29T23:59:59Z", 1835481599 },
		{ "2027-02-29T00:00:00Z", -1 },
		{ "2100-02-29T00:00:00Z", -1 },
		{ "2030-13-01T00:00:00Z", -1 },
		{ "2030-01-01T24:00:00Z", -1 },
		{ "2030-01-01T00:00:60Z", -1 },
		{ "2030-01-01 00:00:00Z", -1 },
		{ "2030-01-01T00:00:00.5Z", -1 },
		{ "2030-01-01T00:00:00z", -1 },
		{ "1969-12-31T23:59:59Z", -1 },
	};
	struct ctl_bundle_meta m;
	char c[128], why[160];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc;

		snprintf(c, sizeof(c), "namegate-bundle fleet=f shard=s serial=1 not_after=%s",
		    cases[i].t);
		rc = ctl_bundle_comment_parse(c, strlen(c), &m, why, sizeof(why));
		if (cases[i].want < 0) {
			if (rc == 0)
				fail_msg("%s accepted", cases[i].t);
		} else if (rc != 0 || (long long)m.not_after != cases[i].want) {
			fail_msg("%s: rc %d, %lld", cases[i].t, rc, (long long)m.not_after);
		}
	}
}

/*
 * A path that only fits cut short is refused by name, never read as the file its cut
 * names: FILE.minisig cut to FILE.minisi, and a relative key path resolved past PATH_MAX.
 * Both would fail another way if read: dir/b.minisi holds no signature, and the cut key
 * path names dir itself.
 */
static void
test_long_paths(void **state)
{
	char path[4096], sig_cut[256], rel[4096], cfg_path[256], why[8192];
	struct pol_config cfg = { 0 };
	struct ctl_bundle_key keys[1];
	uint64_t serial = 0;
	char *key_list[1] = { rel };
	size_t n;

	(void)state;
	/* dir//////...b (runs of slashes are one): FILE.minisig one byte past 4,095 */
	n = (size_t)snprintf(path, sizeof(path), "%s", dir);
	memset(path + n, '/', sizeof(path) - strlen(".minisig") - 1 - n);
	strcpy(path + sizeof(path) - strlen(".minisig") - 1, "b");
	assert_int_equal(strlen(path) + strlen(".minisig"), 4095 + 1);
	put(path, good_policy);
	snprintf(sig_cut, sizeof(sig_cut), "%s/b.minisi", dir);
	put(sig_cut, "untrusted comment: not a signature\n");
	cfg.fleet_cache = path;
	assert_int_equal(ctl_bundle_cache_serial(&cfg, keys, 0, &serial, why, sizeof(why)), -1);
	if (strstr(why, strerror(ENAMETOOLONG)) == NULL)
		fail_msg("cut signature path: %s", why);

	/* a relative key beside a configuration in dir: together past 4,095 bytes */
	rel[0] = '.';
	memset(rel + 1, '/', sizeof(rel) - 3);
	strcpy(rel + sizeof(rel) - 2, "k");
	snprintf(cfg_path, sizeof(cfg_path), "%s/namegate.yaml", dir);
	cfg.path = cfg_path;
	cfg.fleet_cache = NULL;
	cfg.fleet_bundle_keys = key_list;
	cfg.nfleet_bundle_keys = 1;
	assert_int_equal(ctl_bundle_keys_load(&cfg, keys, why, sizeof(why)), -1);
	if (strstr(why, strerror(ENAMETOOLONG)) == NULL)
		fail_msg("cut key path: %s", why);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_second_key),
		cmocka_unit_test(test_key_forms),
		cmocka_unit_test(test_times),
		cmocka_unit_test(test_long_paths),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

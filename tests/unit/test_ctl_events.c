/*
 * control/events/ctl_events: the exact JSON lines, escaping of hostile bytes (every line is parsed
 * back), the per-VM token bucket on an injected clock, suppressed counts, reopening after
 * rename and removal, and the reader behind `namegatectl events [--follow]`.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "ctl_events.h"

#include "ctl_events_fx.h"

static void
assert_file(const char *path, const char *want)
{
	char *got = slurp(path);

	assert_string_equal(got, want);
	free(got);
}

/*
 * A JSON checker for the shapes the log writes: one object per line whose values are
 * strings or unsigned integers. Strings must be printable ASCII with RFC 8259 escapes;
 * they are decoded to bytes so tests can compare with what went in.
 */
struct jfield {
	char key[32];
	char val[1024];
	size_t len;
	bool num;
};

static const char *
jstr(const char *p, char *out, size_t cap, size_t *len)
{
	*len = 0;
	if (*p++ != '"')
		return NULL;
	while (*p != '"') {
		unsigned int c = (unsigned char)*p++;

		if (c < 0x20 || c >= 0x7f)
			return NULL;			/* raw control or non-ASCII byte */
		if (c == '\\') {
			switch (*p++) {
			case '"': c = '"'; break;
			case '\\': c = '\\'; break;
			case '/': c = '/'; break;
			case 'b': c = '\b'; break;
			case 'f': c = '\f'; break;
			case 'n': c = '\n'; break;
			case 'r': c = '\r'; break;
			case 't': c = '\t'; break;
			case 'u':
				if (sscanf(p, "%4x", &c) != 1 || c > 0xff)
					return NULL;
				p += 4;
				break;
			default:
				return NULL;
			}
		}
		if (*len + 1 >= cap)
			return NULL;
		out[(*len)++] = (char)c;
	}
	out[*len] = '\0';
	return p + 1;
}

/* Parses one line (with its '\n'); returns the number of fields, or -1. */
static int
jparse(const char *line, struct jfield *f, int max)
{
	const char *p = line;
	size_t klen;
	int n = 0;

	if (*p++ != '{')
		return -1;
	for (;;) {
		if (n == max || (p = jstr(p, f[n].key, sizeof(f[n].key), &klen)) == NULL ||
		    *p++ != ':')
			return -1;
		if (*p == '"') {
			if ((p = jstr(p, f[n].val, sizeof(f[n].val), &f[n].len)) == NULL)
				return -1;
			f[n].num = false;
		} else {
			size_t d = strspn(p, "0123456789");

			if (d == 0 || d >= sizeof(f[n].val))
				return -1;
			memcpy(f[n].val, p, d);
			f[n].val[d] = '\0';
			f[n].len = d;
			f[n].num = true;
			p += d;
		}
		n++;
		if (*p == '}')
			break;
		if (*p++ != ',')
			return -1;
	}
	return strcmp(p, "}\n") == 0 ? n : -1;
}

static const struct jfield *
jget(const struct jfield *f, int n, const char *key)
{
	for (int i = 0; i < n; i++)
		if (strcmp(f[i].key, key) == 0)
			return &f[i];
	return NULL;
}

/* Every line of the file parses; returns the number of lines. */
static size_t
check_all_lines(const char *path)
{
	char *s = slurp(path), *line = s, *nl;
	struct jfield f[12];
	size_t n = 0;

	while ((nl = strchr(line, '\n')) != NULL) {
		char save = nl[1];

		nl[1] = '\0';
		if (jparse(line, f, 12) < 0)
			fail_msg("not a JSON line: %s", line);
		nl[1] = save;
		line = nl + 1;
		n++;
	}
	assert_string_equal(line, "");		/* no partial line at the end */
	free(s);
	return n;
}

static struct ctl_ev_block
block4(const char *vm, const char *reason, const char *a, uint16_t port, const char *name)
{
	struct ctl_ev_block b = { .vm = vm, .reason = reason, .proto = IPPROTO_TCP,
	    .family = AF_INET, .port = port, .name = name };

	assert_int_equal(inet_pton(AF_INET, a, b.addr), 1);
	return b;
}

#define TS0	"{\"ts\":\"2026-11-29T12:00:00.123Z\""

static void
test_spec_line(void **state)
{
	struct fx *f = *state;
	struct ctl_ev_block b = block4("agent1", "sni_denied", "203.0.113.5", 443,
	    "collect.example.invalid");
	struct timespec t = f->t0;

	open_log(f, CTL_EVENTS_RATE, CTL_EVENTS_BURST);
	assert_int_equal(ctl_events_log_block(f->ev, &t, &b), 0);
	assert_file(f->path, "{\"ts\":\"2026-11-29T12:00:00.123Z\",\"vm\":\"agent1\","
	    "\"event\":\"block\",\"reason\":\"sni_denied\",\"proto\":\"tcp\","
	    "\"dst\":\"203.0.113.5:443\",\"name\":\"collect.example.invalid\"}\n");
}

static void
test_block_fields(void **state)
{
	struct fx *f = *state;
	struct ctl_ev_block b;
	struct timespec t;

	open_log(f, 0, 0);
	b = (struct ctl_ev_block){ .vm = "vm6", .reason = "no_binding", .proto = IPPROTO_UDP,
	    .family = AF_INET6, .port = 8443 };
	assert_int_equal(inet_pton(AF_INET6, "2001:db8::1", b.addr), 1);
	t = at(f, 1);
	assert_int_equal(ctl_events_log_block(f->ev, &t, &b), 0);
	b.proto = IPPROTO_ICMPV6;
	b.port = 0;
	assert_int_equal(ctl_events_log_block(f->ev, &t, &b), 0);
	b = block4("vm4", "spoofed", "10.0.0.1", 0, NULL);
	b.proto = IPPROTO_ICMP;
	t = at(f, 999);
	assert_int_equal(ctl_events_log_block(f->ev, &t, &b), 0);
	b = (struct ctl_ev_block){ .vm = "vm4", .reason = "dns_denied", .proto = 132,
	    .family = AF_UNSPEC, .name = "" };
	t = at(f, -123);	/* exactly on the second */
	assert_int_equal(ctl_events_log_block(f->ev, &t, &b), 0);
	b.reason = NULL;
	assert_int_equal(ctl_events_log_block(f->ev, &t, &b), -EINVAL);
	assert_file(f->path,
	    "{\"ts\":\"2026-11-29T12:00:00.124Z\",\"vm\":\"vm6\",\"event\":\"block\","
	    "\"reason\":\"no_binding\",\"proto\":\"udp\",\"dst\":\"[2001:db8::1]:8443\"}\n"
	    "{\"ts\":\"2026-11-29T12:00:00.124Z\",\"vm\":\"vm6\",\"event\":\"block\","
	    "\"reason\":\"no_binding\",\"proto\":\"icmpv6\",\"dst\":\"2001:db8::1\"}\n"
	    "{\"ts\":\"2026-11-29T12:00:01.122Z\",\"vm\":\"vm4\",\"event\":\"block\","
	    "\"reason\":\"spoofed\",\"proto\":\"icmp\",\"dst\":\"10.0.0.1\"}\n"
	    "{\"ts\":\"2026-11-29T12:00:00.000Z\",\"vm\":\"vm4\",\"event\":\"block\","
	    "\"reason\":\"dns_denied\",\"proto\":\"132\",\"name\":\"\"}\n");
	assert_int_equal(check_all_lines(f->path), 4);
}

static void
test_escape(void **state)
{
	struct fx *f = *state;
	struct ctl_ev_block b = block4("a\"b\\c", "sni_denied", "192.0.2.1", 443,
	    "x\"\\\x01\n\t\r\b\f\x1f\x7f\x80\xff\xc3\xa9</y>");
	struct timespec t = f->t0;

	open_log(f, 0, 0);
	assert_int_equal(ctl_events_log_block(f->ev, &t, &b), 0);
	assert_file(f->path, TS0 ",\"vm\":\"a\\\"b\\\\c\",\"event\":\"block\","
	    "\"reason\":\"sni_denied\",\"proto\":\"tcp\",\"dst\":\"192.0.2.1:443\","
	    "\"name\":\"x\\\"\\\\\\u0001\\n\\t\\r\\b\\f\\u001f\\u007f\\u0080\\u00ff"
	    "\\u00c3\\u00a9</y>\"}\n");
}

/* Every byte value but NUL goes out escaped as needed and comes back unchanged. */
static void
test_escape_roundtrip(void **state)
{
	struct fx *f = *state;
	struct timespec t = f->t0;
	struct ctl_ev_block b;
	struct jfield jf[12];
	char name[256], *s;
	int n;

	for (int i = 1; i < 256; i++)
		name[i - 1] = (char)(256 - i);		/* 0xff down to 0x01 */
	name[255] = '\0';
	b = block4(name + 200, name, "192.0.2.1", 1, name);	/* vm and reason too */
	open_log(f, 0, 0);
	assert_int_equal(ctl_events_log_block(f->ev, &t, &b), 0);
	s = slurp(f->path);
	assert_int_equal(count_lines(s), 1);
	assert_int_equal((n = jparse(s, jf, 12)), 7);
	assert_int_equal(jget(jf, n, "name")->len, 255);
	assert_memory_equal(jget(jf, n, "name")->val, name, 255);
	assert_memory_equal(jget(jf, n, "reason")->val, name, 255);
	assert_string_equal(jget(jf, n, "vm")->val, name + 200);
	assert_string_equal(jget(jf, n, "event")->val, "block");
	free(s);
}

/* rate 20/s, burst 50: token arithmetic is exact on the injected clock. */
static void
test_rate_limit(void **state)
{
	struct fx *f = *state;
	struct ctl_ev_block a = block4("a", "sni_denied", "192.0.2.1", 443, "x.invalid");
	struct ctl_ev_block b = block4("b", "no_sni", "192.0.2.2", 443, NULL);
	struct jfield jf[12];
	struct timespec t;
	char *s, *last;
	int n;

	open_log(f, 20, 50);
	t = at(f, 0);
	for (int i = 0; i < 80; i++)
		assert_int_equal(ctl_events_log_block(f->ev, &t, &a), 0);	/* 30 counted */
	assert_int_equal(ctl_events_log_block(f->ev, &t, &b), 0);	/* its own bucket */
	t = at(f, 49);			/* 0.98 of a token */
	assert_int_equal(ctl_events_log_block(f->ev, &t, &a), 0);	/* 31 counted */
	s = slurp(f->path);
	assert_int_equal(count_lines(s), 51);
	assert_null(strstr(s, "suppressed"));
	free(s);

	t = at(f, 50);			/* 50 ms at 20/s: exactly one token */
	assert_int_equal(ctl_events_log_block(f->ev, &t, &a), 0);
	assert_int_equal(ctl_events_log_block(f->ev, &t, &a), 0);	/* 1 counted */
	s = slurp(f->path);
	assert_int_equal(count_lines(s), 52);
	last = strrchr(s, '{');
	assert_string_equal(last, "{\"ts\":\"2026-11-29T12:00:00.173Z\",\"vm\":\"a\","
	    "\"event\":\"block\",\"reason\":\"sni_denied\",\"proto\":\"tcp\","
	    "\"dst\":\"192.0.2.1:443\",\"name\":\"x.invalid\",\"suppressed\":31}\n");
	assert_int_equal((n = jparse(last, jf, 12)), 8);
	assert_true(jget(jf, n, "suppressed")->num);
	free(s);

	/* A long quiet spell refills to the burst, not beyond. */
	t = at(f, 3600 * 1000);
	for (int i = 0; i < 60; i++)
		assert_int_equal(ctl_events_log_block(f->ev, &t, &a), 0);
	s = slurp(f->path);
	assert_int_equal(count_lines(s), 102);
	/* The one counted at 50 ms rides on the first line after the spell, only there. */
	assert_non_null(last = strstr(s, "\"suppressed\":1}\n"));
	assert_null(strstr(last + strlen("\"suppressed\":1}\n"), "suppressed"));
	free(s);
	assert_int_equal(check_all_lines(f->path), 102);
}

static void
test_rate_unlimited(void **state)
{
	struct fx *f = *state;
	struct ctl_ev_block a = block4("a", "quic", "192.0.2.1", 443, NULL);
	struct timespec t = f->t0;
	char *s;

	open_log(f, 0, 0);
	for (int i = 0; i < 500; i++)
		assert_int_equal(ctl_events_log_block(f->ev, &t, &a), 0);
	assert_int_equal(ctl_events_flush(f->ev, &t), 0);
	s = slurp(f->path);
	assert_int_equal(count_lines(s), 500);
	assert_null(strstr(s, "suppressed"));
	free(s);
}

/* A clock stepped back neither stalls the bucket nor refills it. */
static void
test_clock_backwards(void **state)
{
	struct fx *f = *state;
	struct ctl_ev_block a = block4("a", "quic", "192.0.2.1", 443, NULL);
	struct timespec t;
	char *s;

	open_log(f, 10, 2);
	t = at(f, 100000);
	for (int i = 0; i < 3; i++)
		assert_int_equal(ctl_events_log_block(f->ev, &t, &a), 0);	/* 2 logged */
	t = at(f, 0);			/* 100 s back */
	assert_int_equal(ctl_events_log_block(f->ev, &t, &a), 0);	/* no token yet */
	t = at(f, 100);			/* 100 ms after the step: one token */
	assert_int_equal(ctl_events_log_block(f->ev, &t, &a), 0);
	s = slurp(f->path);
	assert_int_equal(count_lines(s), 3);
	assert_non_null(strstr(s, "\"ts\":\"2026-11-29T12:00:00.223Z\""));
	assert_non_null(strstr(s, "\"suppressed\":2}\n"));
	free(s);
}

static void
test_flush(void **state)
{
	struct fx *f = *state;
	const char *vms[] = { "c", "a", "b" };
	struct ctl_ev_block x;
	struct timespec t = f->t0;

	open_log(f, 1, 1);
	for (int v = 0; v < 3; v++) {
		x = block4(vms[v], "no_sni", "192.0.2.1", 443, NULL);
		for (int i = 0; i <= v + 1; i++)	/* c: 1 counted, a: 2, b: 3 */
			assert_int_equal(ctl_events_log_block(f->ev, &t, &x), 0);
	}
	assert_int_equal(unlink(f->path), 0);		/* rotation in between */
	t = at(f, 1200);
	assert_int_equal(ctl_events_flush(f->ev, &t), 0);
	assert_int_equal(ctl_events_flush(f->ev, &t), 0);	/* nothing new */
	assert_int_equal(ctl_events_log_stop(f->ev, &t), 0);
	assert_file(f->path,
	    "{\"ts\":\"2026-11-29T12:00:01.323Z\",\"vm\":\"c\",\"event\":\"suppressed\","
	    "\"suppressed\":1}\n"
	    "{\"ts\":\"2026-11-29T12:00:01.323Z\",\"vm\":\"a\",\"event\":\"suppressed\","
	    "\"suppressed\":2}\n"
	    "{\"ts\":\"2026-11-29T12:00:01.323Z\",\"vm\":\"b\",\"event\":\"suppressed\","
	    "\"suppressed\":3}\n"
	    "{\"ts\":\"2026-11-29T12:00:01.323Z\",\"event\":\"stop\"}\n");
}

/* Many VMs: the bucket table grows and each VM keeps its own bucket. */
static void
test_many_vms(void **state)
{
	struct fx *f = *state;
	struct timespec t = f->t0;
	struct ctl_ev_block x;
	char vm[16], *s;

	open_log(f, 1, 1);
	for (int round = 0; round < 2; round++) {
		for (int v = 0; v < 300; v++) {
			snprintf(vm, sizeof(vm), "vm%d", v);
			x = block4(vm, "no_sni", "192.0.2.1", 443, NULL);
			assert_int_equal(ctl_events_log_block(f->ev, &t, &x), 0);
		}
	}
	s = slurp(f->path);
	assert_int_equal(count_lines(s), 300);
	free(s);
	assert_int_equal(ctl_events_flush(f->ev, &t), 0);
	s = slurp(f->path);
	assert_int_equal(count_lines(s), 600);
	assert_non_null(strstr(s, "\"vm\":\"vm299\",\"event\":\"suppressed\",\"suppressed\":1}"));
	free(s);
}

static void
test_policy_start_stop(void **state)
{
	struct fx *f = *state;
	struct timespec t = f->t0;
	/* a reload someone asked for names them; one whose sender is not known names nobody */
	const struct ctl_ev_who who = { .uid = 1000, .pid = 4321, .user = "al\"ice" };
	char want[1024];

	open_log(f, CTL_EVENTS_RATE, CTL_EVENTS_BURST);
	assert_int_equal(ctl_events_log_start(f->ev, &t, "0.1.0"), 0);
	assert_int_equal(ctl_events_log_policy(f->ev, &t, 1, 3, "/etc/namegate/policy.yaml",
	    NULL), 0);
	assert_int_equal(ctl_events_log_policy(f->ev, &t, 18446744073709551615ull, 0, NULL,
	    NULL), 0);
	assert_int_equal(ctl_events_log_policy(f->ev, &t, 2, 1, NULL, &who), 0);
	assert_int_equal(ctl_events_log_policy_rejected(f->ev, &t, 2, "ng.yaml", 3, 4, "bad",
	    1, &who), 0);
	assert_int_equal(ctl_events_log_stop(f->ev, &t), 0);
	snprintf(want, sizeof(want),
	    TS0 ",\"event\":\"start\",\"version\":\"0.1.0\",\"pid\":%ld}\n"
	    TS0 ",\"event\":\"policy\",\"generation\":1,\"vms\":3,"
	    "\"file\":\"/etc/namegate/policy.yaml\"}\n"
	    TS0 ",\"event\":\"policy\",\"generation\":18446744073709551615,\"vms\":0}\n"
	    TS0 ",\"event\":\"policy\",\"generation\":2,\"vms\":1,\"uid\":1000,\"pid\":4321,"
	    "\"user\":\"al\\\"ice\"}\n"
	    TS0 ",\"event\":\"policy_rejected\",\"generation\":2,\"file\":\"ng.yaml\",\"line\":3,"
	    "\"col\":4,\"message\":\"bad\",\"errors\":1,\"uid\":1000,\"pid\":4321,"
	    "\"user\":\"al\\\"ice\"}\n"
	    TS0 ",\"event\":\"stop\"}\n", (long)getpid());
	assert_file(f->path, want);
	assert_int_equal(check_all_lines(f->path), 6);
}

/* Grants are never rate-limited; their end is in whole UTC seconds. */
static void
test_grant_events(void **state)
{
	struct fx *f = *state;
	struct timespec t = f->t0;
	struct ctl_ev_grant g = { .event = "grant", .id = 3, .vm = "vm1",
		.host = "files.pythonhosted.org:443", .expires = f->t0.tv_sec + 1800,
		.reason = "pip \"needs\" it" };
	char want[1024], until[32];
	time_t u = (time_t)g.expires;
	const struct ctl_ev_who who = { .uid = 0, .pid = 77, .user = "root" };
	struct tm tm;

	open_log(f, 1, 1);
	for (int i = 0; i < 2; i++)
		assert_int_equal(ctl_events_log_grant(f->ev, &t, &g), 0);
	g.who = &who;
	assert_int_equal(ctl_events_log_grant(f->ev, &t, &g), 0);
	g.who = NULL;
	g.event = "grant_expired";
	g.reason = "";
	assert_int_equal(ctl_events_log_grant(f->ev, &t, &g), 0);
	assert_int_equal(ctl_events_log_grants_damaged(f->ev, &t, "/var/log/namegate/grants.json",
	    "not one JSON document"), 0);
	gmtime_r(&u, &tm);
	strftime(until, sizeof(until), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(want, sizeof(want),
	    TS0 ",\"vm\":\"vm1\",\"event\":\"grant\",\"id\":3,\"host\":"
	    "\"files.pythonhosted.org:443\",\"until\":\"%s\",\"reason\":\"pip \\\"needs\\\" it\"}\n"
	    TS0 ",\"vm\":\"vm1\",\"event\":\"grant\",\"id\":3,\"host\":"
	    "\"files.pythonhosted.org:443\",\"until\":\"%s\",\"reason\":\"pip \\\"needs\\\" it\"}\n"
	    TS0 ",\"vm\":\"vm1\",\"event\":\"grant\",\"id\":3,\"host\":"
	    "\"files.pythonhosted.org:443\",\"until\":\"%s\",\"reason\":\"pip \\\"needs\\\" it\","
	    "\"uid\":0,\"pid\":77,\"user\":\"root\"}\n"
	    TS0 ",\"vm\":\"vm1\",\"event\":\"grant_expired\",\"id\":3,\"host\":"
	    "\"files.pythonhosted.org:443\",\"until\":\"%s\"}\n"
	    TS0 ",\"event\":\"grants_damaged\",\"file\":\"/var/log/namegate/grants.json\","
	    "\"error\":\"not one JSON document\"}\n", until, until, until, until);
	assert_file(f->path, want);
	assert_int_equal(check_all_lines(f->path), 5);
}

static void
test_rotate_rename(void **state)
{
	struct fx *f = *state;
	struct ctl_ev_block a = block4("a", "quic", "192.0.2.1", 443, NULL);
	struct timespec t;
	struct stat st;
	mode_t mask = umask(077);	/* a new file still gets CTL_EVENTS_MODE */
	char *s;

	open_log(f, 0, 0);
	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(st.st_mode & 0777, CTL_EVENTS_MODE);
	t = at(f, 0);
	assert_int_equal(ctl_events_log_block(f->ev, &t, &a), 0);
	assert_int_equal(rename(f->path, f->old), 0);
	t = at(f, 500);			/* checked 0.5 s ago: not yet noticed */
	assert_int_equal(ctl_events_log_block(f->ev, &t, &a), 0);
	assert_int_equal(access(f->path, F_OK), -1);
	t = at(f, 1000);		/* a second since the last check */
	assert_int_equal(ctl_events_log_block(f->ev, &t, &a), 0);
	umask(mask);

	assert_int_equal(check_all_lines(f->old), 2);
	assert_int_equal(check_all_lines(f->path), 1);
	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(st.st_mode & 0777, CTL_EVENTS_MODE);
	s = slurp(f->path);
	assert_non_null(strstr(s, "12:00:01.123Z"));
	free(s);
}

static void
test_rotate_remove(void **state)
{
	struct fx *f = *state;
	struct timespec t = at(f, 0);
	char *s;

	open_log(f, 0, 0);
	assert_int_equal(ctl_events_log_start(f->ev, &t, "0.1.0"), 0);
	assert_int_equal(unlink(f->path), 0);
	t = at(f, 5000);
	assert_int_equal(ctl_events_log_policy(f->ev, &t, 2, 1, NULL, NULL), 0);
	s = slurp(f->path);
	assert_string_equal(s, "{\"ts\":\"2026-11-29T12:00:05.123Z\",\"event\":\"policy\","
	    "\"generation\":2,\"vms\":1}\n");
	free(s);
}

static void
test_reopen(void **state)
{
	struct fx *f = *state;
	struct timespec t = at(f, 0);
	char sub[160], subpath[200], err[256];

	open_log(f, 0, 0);
	assert_int_equal(ctl_events_log_policy(f->ev, &t, 1, 1, NULL, NULL), 0);
	assert_int_equal(rename(f->path, f->old), 0);
	assert_int_equal(ctl_events_reopen(f->ev), 0);	/* SIGHUP: no waiting for the check */
	assert_int_equal(ctl_events_log_policy(f->ev, &t, 2, 1, NULL, NULL), 0);
	assert_int_equal(check_all_lines(f->old), 1);
	assert_int_equal(check_all_lines(f->path), 1);
	ctl_events_close(f->ev);
	f->ev = NULL;

	/* When the path cannot be opened again, the file already open keeps the lines. */
	snprintf(sub, sizeof(sub), "%s/sub", f->dir);
	snprintf(subpath, sizeof(subpath), "%s/e.log", sub);
	assert_int_equal(mkdir(sub, 0700), 0);
	f->ev = ctl_events_open(subpath, 0, 0, err, sizeof(err));
	assert_non_null(f->ev);
	assert_int_equal(unlink(subpath), 0);
	assert_int_equal(rmdir(sub), 0);
	assert_int_equal(ctl_events_reopen(f->ev), -ENOENT);
	t = at(f, 2000);
	assert_int_equal(ctl_events_flush(f->ev, &t), -ENOENT);	/* reported once a second */
	assert_int_equal(ctl_events_log_policy(f->ev, &t, 3, 1, NULL, NULL), 0);
}

static void
test_open_errors(void **state)
{
	struct fx *f = *state;
	char err[256], fifo[160];
	struct timespec t = f->t0;

	errno = 0;
	assert_null(ctl_events_open("/nonexistent/dir/events.log", 20, 50, err, sizeof(err)));
	assert_int_equal(errno, ENOENT);
	assert_string_equal(err, "events: open /nonexistent/dir/events.log: "
	    "No such file or directory");
	assert_null(ctl_events_open(f->path, 20, 0, err, sizeof(err)));
	assert_int_equal(errno, EINVAL);
	assert_null(ctl_events_open("", 20, 50, err, sizeof(err)));
	assert_int_equal(errno, EINVAL);
	assert_null(ctl_events_open(NULL, 20, 50, NULL, 0));
	assert_int_equal(errno, EINVAL);

	/* A FIFO nobody reads fails at once instead of blocking the control loop. */
	snprintf(fifo, sizeof(fifo), "%s/fifo", f->dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_null(ctl_events_open(fifo, 20, 50, err, sizeof(err)));
	assert_int_equal(errno, ENXIO);
	unlink(fifo);

	/* A write that fails is reported, not hidden. */
	f->ev = ctl_events_open("/dev/full", 0, 0, err, sizeof(err));
	assert_non_null(f->ev);
	assert_int_equal(ctl_events_log_start(f->ev, &t, "0.1.0"), -ENOSPC);
	assert_string_equal(err, "");
}

/* An existing file is appended to and keeps its mode. */
static void
test_append_existing(void **state)
{
	struct fx *f = *state;
	struct timespec t = f->t0;
	struct stat st;
	int fd;

	fd = open(f->path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "{\"old\":\"line\"}\n", 15), 15);
	close(fd);
	open_log(f, 0, 0);
	assert_int_equal(ctl_events_log_policy(f->ev, &t, 7, 2, NULL, NULL), 0);
	assert_file(f->path, "{\"old\":\"line\"}\n" TS0 ",\"event\":\"policy\",\"generation\":7,"
	    "\"vms\":2}\n");
	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_spec_line, setup, teardown),
		cmocka_unit_test_setup_teardown(test_block_fields, setup, teardown),
		cmocka_unit_test_setup_teardown(test_escape, setup, teardown),
		cmocka_unit_test_setup_teardown(test_escape_roundtrip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rate_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rate_unlimited, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clock_backwards, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flush, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_vms, setup, teardown),
		cmocka_unit_test_setup_teardown(test_policy_start_stop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_grant_events, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rotate_rename, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rotate_remove, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reopen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_append_existing, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

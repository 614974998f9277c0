/*
 * control/sock/ctl_sock: the server runs in a thread with fake ops, the test is its client, both
 * through namegatectl's own ctl_client_call() and through raw bytes for what a well-behaved
 * client never sends. Every command's round trip, every error reply, clients that stall
 * (silent, half a request, never reading) while others are served, request size bounds,
 * the socket's path, mode and takeover rules, and how long one ctl_sock_poll() may wait.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "ctl_client.h"
#include "ctl_sock_fixture.h"

#define BIG_BINDINGS	20000	/* a reply over 1 MB, larger than any socket buffer */

static atomic_int reload_reject;

static int
op_status(FILE *out, const struct ctl_req *req __attribute__((unused)), void *arg)
{
	(void)arg;
	/* Spread over lines on purpose: the server must send it back on one. */
	fputs("{ \"version\": \"0.1.0\",\n  \"pid\": 42,\n  \"events\": \"/tmp/ev.jsonl\" }\n",
	    out);
	return 0;
}

static int
op_stats(FILE *out, const struct ctl_req *req, void *arg)
{
	const char *vm = req->vm;
	(void)arg;
	if (vm == NULL) {
		fputs("{\"vms\":[{\"vm\":\"a\",\"flows\":1},"
		    "{\"vm\":\"b\",\"flows\":18446744073709551615}],\"generation\":3}", out);
		return 0;
	}
	if (strcmp(vm, "nope") == 0) {
		fprintf(out, "unknown VM '%s'\n", vm);
		return -ENOENT;
	}
	if (strcmp(vm, "quiet") == 0)
		return -EINVAL;		/* no text: strerror() */
	fprintf(out, "{\"vms\":[{\"vm\":\"%s\"}]}", vm);
	return 0;
}

static int
op_bindings(FILE *out, const struct ctl_req *req, void *arg)
{
	const char *vm = req->vm;
	(void)arg;
	if (strcmp(vm, "big") == 0) {
		fputs("{\"vm\":\"big\",\"bindings\":[", out);
		for (int i = 0; i < BIG_BINDINGS; i++)
			fprintf(out, "%s{\"name\":\"host%d.example.com\",\"addr\":\"203.0.%d.%d\","
			    "\"ttl\":%d}", i > 0 ? "," : "", i, i / 256 % 256, i % 256, i);
		fputs("]}", out);
		return 0;
	}
	if (strcmp(vm, "broken") == 0) {
		fputs("{\"vm\":", out);
		return 0;
	}
	if (strcmp(vm, "empty") == 0)
		return 0;
	if (strcmp(vm, "two") == 0) {
		fputs("{} {}", out);
		return 0;
	}
	if (strcmp(vm, "positive") == 0)
		return 7;
	if (strcmp(vm, "nul") == 0) {
		fputc('{', out);
		fputc('\0', out);
		fputc('}', out);
		return 0;
	}
	fprintf(out, "{\"vm\":\"%s\",\"bindings\":[{\"name\":\"pypi.org\","
	    "\"addr\":\"203.0.113.10\",\"ttl\":123}]}", vm);
	return 0;
}

static int
op_flows(FILE *out, const struct ctl_req *req, void *arg)
{
	const char *vm = req->vm;
	(void)arg;
	fprintf(out, "{\"vm\":\"%s\",\"flows\":[{\"proto\":\"tcp\","
	    "\"peer\":\"203.0.113.10:443\",\"vm_port\":40000,\"state\":\"established\","
	    "\"age\":12,\"verdict\":\"allowed\"}]}", vm);
	return 0;
}

static int
op_reload(FILE *out, const struct ctl_req *req __attribute__((unused)), void *arg)
{
	(void)arg;
	if (atomic_load(&reload_reject)) {
		fputs("ng.yaml:2:12: dataplane.workers: 0 is out of range (1..128)\n"
		    "ng.yaml:15:13: vms[1].policy: unknown policy 'nope'\n", out);
		return -EINVAL;
	}
	fputs("{\"ok\":true,\"generation\":4}", out);
	return 0;
}

static int
op_check(FILE *out, const struct ctl_req *req, void *arg)
{
	const char *vm = req->vm, *host = req->host;
	bool allow = strncmp(host, "pypi.org", 8) == 0;

	(void)arg;
	if (strcmp(vm, "nope") == 0) {
		fprintf(out, "unknown VM '%s' in ng.yaml", vm);
		return -EINVAL;
	}
	fprintf(out, "{\"verdict\":\"%s\",\"line\":\"%s %s for %s: test\"}",
	    allow ? "allow" : "block", allow ? "allow" : "block", host, vm);
	return 0;
}

static int
op_suggest(FILE *out, const struct ctl_req *req, void *arg)
{
	const char *vm = req->vm;
	(void)arg;
	fprintf(out, "{\"vm\":\"%s\",\"allow\":[\"*.example.com\",\"pypi.org\"]}", vm);
	return 0;
}

static const struct ctl_cmd fake_ops[] = {
	{ "status", 0, op_status },
	{ "stats", CTL_ARG_VM, op_stats },
	{ "bindings", CTL_ARG_VM | CTL_ARG_VM_REQ, op_bindings },
	{ "flows", CTL_ARG_VM | CTL_ARG_VM_REQ, op_flows },
	{ "reload", 0, op_reload },
	{ "check", CTL_ARG_VM | CTL_ARG_VM_REQ | CTL_ARG_HOST, op_check },
	{ "suggest", CTL_ARG_VM | CTL_ARG_VM_REQ, op_suggest },
};

static void
srv_start(struct srv *v)
{
	srv_start_table(v, fake_ops);
}

static void
test_round_trips(void **state)
{
	struct srv v;

	(void)state;
	srv_start(&v);
	expect_call(v.path, "status", NULL, NULL,
	    "{\"version\":\"0.1.0\",\"pid\":42,\"events\":\"/tmp/ev.jsonl\"}");
	expect_call(v.path, "stats", NULL, NULL, "{\"vms\":[{\"vm\":\"a\",\"flows\":1},"
	    "{\"vm\":\"b\",\"flows\":18446744073709551615}],\"generation\":3}");
	expect_call(v.path, "stats", "agent1", NULL, "{\"vms\":[{\"vm\":\"agent1\"}]}");
	expect_call(v.path, "bindings", "agent1", NULL, "{\"vm\":\"agent1\",\"bindings\":["
	    "{\"name\":\"pypi.org\",\"addr\":\"203.0.113.10\",\"ttl\":123}]}");
	expect_call(v.path, "flows", "agent1", NULL, "{\"vm\":\"agent1\",\"flows\":[{\"proto\":"
	    "\"tcp\",\"peer\":\"203.0.113.10:443\",\"vm_port\":40000,\"state\":\"established\","
	    "\"age\":12,\"verdict\":\"allowed\"}]}");
	atomic_store(&reload_reject, 0);
	expect_call(v.path, "reload", NULL, NULL, "{\"ok\":true,\"generation\":4}");
	expect_call(v.path, "check", "vm1", "pypi.org:443",
	    "{\"verdict\":\"allow\",\"line\":\"allow pypi.org:443 for vm1: test\"}");
	expect_call(v.path, "check", "vm1", "evil.example",
	    "{\"verdict\":\"block\",\"line\":\"block evil.example for vm1: test\"}");
	expect_call(v.path, "suggest", "vm2", NULL,
	    "{\"vm\":\"vm2\",\"allow\":[\"*.example.com\",\"pypi.org\"]}");
	/* Raw: exactly one line back, then EOF; CRLF and blanks around the object are fine. */
	expect_raw(v.path, "{\"cmd\":\"suggest\",\"vm\":\"x\"}\n",
	    "{\"vm\":\"x\",\"allow\":[\"*.example.com\",\"pypi.org\"]}\n");
	expect_raw(v.path, "  {\"vm\":\"x\",\"cmd\":\"flows\"} \r\n",
	    "{\"vm\":\"x\",\"flows\":[{\"proto\":\"tcp\",\"peer\":\"203.0.113.10:443\",\"vm_port\":"
	    "40000,\"state\":\"established\",\"age\":12,\"verdict\":\"allowed\"}]}\n");
	srv_stop(&v);
	assert_int_equal(v.cnt.replied, 11);
	assert_int_equal(v.cnt.errors, 0);
	assert_int_equal(v.cnt.accepted, 11);
}

static void
test_callback_errors(void **state)
{
	struct srv v;

	(void)state;
	srv_start(&v);
	expect_call(v.path, "stats", "nope", NULL, "E:unknown VM 'nope'");
	expect_call(v.path, "stats", "quiet", NULL, "E:Invalid argument");
	expect_call(v.path, "check", "nope", "pypi.org", "E:unknown VM 'nope' in ng.yaml");
	atomic_store(&reload_reject, 1);
	expect_call(v.path, "reload", NULL, NULL, "E:ng.yaml:2:12: dataplane.workers: 0 is out "
	    "of range (1..128)\nng.yaml:15:13: vms[1].policy: unknown policy 'nope'");
	atomic_store(&reload_reject, 0);
	/* The multi-line text travels escaped, on one line. */
	atomic_store(&reload_reject, 1);
	expect_raw(v.path, "{\"cmd\":\"reload\"}\n",
	    "{\"error\":\"ng.yaml:2:12: dataplane.workers: 0 is out of range (1..128)"
	    "\\nng.yaml:15:13: vms[1].policy: unknown policy 'nope'\"}\n");
	atomic_store(&reload_reject, 0);
	expect_call(v.path, "bindings", "broken", NULL,
	    "E:internal: the bindings reply is not one JSON value: incomplete JSON");
	expect_call(v.path, "bindings", "empty", NULL, "E:internal: the bindings reply is empty");
	expect_call(v.path, "bindings", "two", NULL,
	    "E:internal: the bindings reply is not one JSON value: text after the value");
	expect_call(v.path, "bindings", "positive", NULL,
	    "E:internal: the bindings callback returned 7");
	expect_call(v.path, "bindings", "nul", NULL, "E:internal: the bindings reply is not text");
	srv_stop(&v);
	assert_int_equal(v.cnt.errors, 10);
	assert_int_equal(v.cnt.replied, 0);
}

static void
test_bad_requests(void **state)
{
	static const struct {
		const char *req;
		const char *want;
	} cases[] = {
		{ "{\"cmd\":\"shutdown\"}\n", "unknown command \\\"shutdown\\\"" },
		{ "{\"vm\":\"a\"}\n", "bad request: no \\\"cmd\\\"" },
		{ "{\"cmd\":\"bindings\"}\n", "bad request: bindings needs \\\"vm\\\"" },
		{ "{\"cmd\":\"flows\"}\n", "bad request: flows needs \\\"vm\\\"" },
		{ "{\"cmd\":\"suggest\"}\n", "bad request: suggest needs \\\"vm\\\"" },
		{ "{\"cmd\":\"check\",\"vm\":\"a\"}\n", "bad request: check needs \\\"host\\\"" },
		{ "{\"cmd\":\"check\",\"host\":\"x\"}\n", "bad request: check needs \\\"vm\\\"" },
		{ "{\"cmd\":\"status\",\"vm\":\"a\"}\n",
		    "bad request: status takes no \\\"vm\\\"" },
		{ "{\"cmd\":\"reload\",\"vm\":\"a\"}\n",
		    "bad request: reload takes no \\\"vm\\\"" },
		{ "{\"cmd\":\"stats\",\"host\":\"x\"}\n",
		    "bad request: stats takes no \\\"host\\\"" },
		{ "{\"cmd\":\"status\",\"verbose\":true}\n",
		    "bad request: unknown key \\\"verbose\\\"" },
		{ "{\"cmd\":7}\n", "bad request: \\\"cmd\\\" must be a string" },
		{ "{\"cmd\":\"stats\",\"vm\":[\"a\"]}\n",
		    "bad request: \\\"vm\\\" must be a string" },
		{ "{\"cmd\":\"stats\",\"vm\":\"\"}\n",
		    "bad request: \\\"vm\\\" must be a non-empty string without NUL" },
		{ "{\"cmd\":\"stats\",\"vm\":\"a\\u0000b\"}\n",
		    "bad request: \\\"vm\\\" must be a non-empty string without NUL" },
		{ "[\"status\"]\n", "bad request: the request must be a JSON object" },
		{ "\"status\"\n", "bad request: the request must be a JSON object" },
		{ "status\n", "bad request: unexpected character" },
		{ "{\"cmd\":\"status\"\n", "bad request: incomplete JSON" },
		{ "{\"cmd\":\"status\"} {}\n", "bad request: text after the JSON object" },
		{ "\n", "bad request: incomplete JSON" },
		{ "{\"cmd\":\"status\",\"x\":{\"y\":{\"z\":{\"w\":[1]}}}}\n",
		    "bad request: nesting too deep" },
	};
	char want[512];
	struct srv v;

	(void)state;
	srv_start(&v);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(want, sizeof(want), "{\"error\":\"%s\"}\n", cases[i].want);
		expect_raw(v.path, cases[i].req, want);
	}
	/* A NUL byte in the line itself. */
	{
		static const char req[] = "{\"cmd\":\"status\"}\0\n";
		char *reply = raw_call(v.path, req, sizeof(req) - 1, false);

		assert_string_equal(reply,
		    "{\"error\":\"bad request: NUL byte in the request\"}\n");
		free(reply);
	}
	srv_stop(&v);
	assert_int_equal(v.cnt.errors, sizeof(cases) / sizeof(cases[0]) + 1);
}

/* A command nothing serves is unknown; a table cannot serve a name twice or past the cap. */
static void
test_served_by_tables(void **state)
{
	static const struct ctl_cmd few[] = { { "status", 0, op_status } };
	static const struct ctl_cmd again[] = {
		{ "stats", CTL_ARG_VM, op_stats }, { "status", 0, op_status },
	};
	static struct ctl_cmd many[CTL_SOCK_CMDS_MAX];
	struct srv v;

	(void)state;
	srv_start_table(&v, few);
	expect_call(v.path, "status", NULL, NULL,
	    "{\"version\":\"0.1.0\",\"pid\":42,\"events\":\"/tmp/ev.jsonl\"}");
	expect_call(v.path, "stats", NULL, NULL, "E:unknown command \"stats\"");
	expect_call(v.path, "suggest", "a", NULL, "E:unknown command \"suggest\"");
	assert_int_equal(ctl_sock_serve(v.s, again, 2, NULL), -EEXIST);
	expect_call(v.path, "stats", NULL, NULL, "E:unknown command \"stats\"");
	for (size_t i = 0; i < CTL_SOCK_CMDS_MAX; i++)
		many[i] = (struct ctl_cmd){ .name = "x", .fn = op_status };
	assert_int_equal(ctl_sock_serve(v.s, many, CTL_SOCK_CMDS_MAX, NULL), -ENOSPC);
	srv_stop(&v);
}

/* Split requests: byte by byte, and ended by EOF instead of a newline. */
static void
test_request_framing(void **state)
{
	static const char req[] = "{\"cmd\":\"stats\",\"vm\":\"slow\"}\n";
	struct srv v;
	char *reply;
	int fd;

	(void)state;
	srv_start(&v);
	fd = raw_connect(v.path);
	for (size_t i = 0; i < sizeof(req) - 1; i++) {
		raw_send(fd, &req[i], 1);
		usleep(2000);
	}
	reply = raw_read_all(fd, NULL);
	assert_string_equal(reply, "{\"vms\":[{\"vm\":\"slow\"}]}\n");
	free(reply);
	close(fd);

	reply = raw_call(v.path, STR_LEN("{\"cmd\":\"stats\",\"vm\":\"eof\"}"), true);
	assert_string_equal(reply, "{\"vms\":[{\"vm\":\"eof\"}]}\n");
	free(reply);

	/* Bytes after the newline are ignored: one request per connection. */
	reply = raw_call(v.path,
	    STR_LEN("{\"cmd\":\"stats\",\"vm\":\"one\"}\n{\"cmd\":\"reload\"}\n"), false);
	assert_string_equal(reply, "{\"vms\":[{\"vm\":\"one\"}]}\n");
	free(reply);

	/* Connect and go: no reply, counted as aborted, nothing else disturbed. */
	close(raw_connect(v.path));
	expect_call(v.path, "stats", "after", NULL, "{\"vms\":[{\"vm\":\"after\"}]}");
	srv_stop(&v);
	assert_int_equal(v.cnt.replied, 4);
	assert_int_equal(v.cnt.aborted, 1);
}

/* A request of exactly CTL_SOCK_REQ_MAX bytes with its newline is served; one more is not. */
static void
test_oversize(void **state)
{
	static char req[CTL_SOCK_REQ_MAX + 1024];
	static const char head[] = "{\"cmd\":\"status\"";
	struct srv v;
	char *reply;

	(void)state;
	srv_start(&v);
	memset(req, ' ', sizeof(req));
	memcpy(req, head, sizeof(head) - 1);
	req[CTL_SOCK_REQ_MAX - 2] = '}';
	req[CTL_SOCK_REQ_MAX - 1] = '\n';
	reply = raw_call(v.path, req, CTL_SOCK_REQ_MAX, false);
	assert_string_equal(reply,
	    "{\"version\":\"0.1.0\",\"pid\":42,\"events\":\"/tmp/ev.jsonl\"}\n");
	free(reply);

	req[CTL_SOCK_REQ_MAX - 2] = ' ';
	req[CTL_SOCK_REQ_MAX - 1] = '}';
	req[CTL_SOCK_REQ_MAX] = '\n';
	reply = raw_call(v.path, req, CTL_SOCK_REQ_MAX + 1, false);
	assert_string_equal(reply, "{\"error\":\"bad request: longer than 4096 bytes\"}\n");
	free(reply);

	/* Far too long, with no newline at all: refused as soon as the limit is reached. */
	memset(req, 'x', sizeof(req));
	reply = raw_call(v.path, req, sizeof(req), false);
	assert_string_equal(reply, "{\"error\":\"bad request: longer than 4096 bytes\"}\n");
	free(reply);
	srv_stop(&v);
	assert_int_equal(v.cnt.oversize, 2);
	assert_int_equal(v.cnt.errors, 2);
	assert_int_equal(v.cnt.replied, 1);
}

/* A client that says nothing, or half a request, is dropped; others are served meanwhile. */
static void
test_stalled_clients(void **state)
{
	struct srv v;
	int64_t t0, t1;
	int silent, half;
	char *reply;

	(void)state;
	srv_start(&v);
	t0 = now_ms();
	silent = raw_connect(v.path);
	half = raw_connect(v.path);
	raw_send(half, STR_LEN("{\"cmd\":\"sta"));
	for (int i = 0; i < 5; i++)
		expect_call(v.path, "stats", "busy", NULL, "{\"vms\":[{\"vm\":\"busy\"}]}");
	t1 = now_ms();
	assert_true(t1 - t0 < TIMEOUT_MS);	/* served while both stall */
	reply = raw_read_all(silent, NULL);	/* EOF without a reply */
	assert_string_equal(reply, "");
	free(reply);
	reply = raw_read_all(half, NULL);
	assert_string_equal(reply, "");
	free(reply);
	t1 = now_ms();
	assert_true(t1 - t0 >= TIMEOUT_MS - 20 && t1 - t0 < TIMEOUT_MS + 1000);
	close(silent);
	close(half);
	srv_stop(&v);
	assert_int_equal(v.cnt.timeouts, 2);
	assert_int_equal(v.cnt.replied, 5);
}

/*
 * A client that asks for a reply larger than the socket buffer and never reads it holds
 * its slot until the timeout, not the server: others are served, and a client that reads
 * the same reply slowly but steadily gets all of it.
 */
static void
test_slow_readers(void **state)
{
	struct srv v;
	size_t len, n = 0;
	char *reply;
	int stuck, slow;

	(void)state;
	srv_start(&v);
	stuck = raw_connect(v.path);
	raw_send(stuck, STR_LEN("{\"cmd\":\"bindings\",\"vm\":\"big\"}\n"));
	usleep(50000);
	expect_call(v.path, "stats", "other", NULL, "{\"vms\":[{\"vm\":\"other\"}]}");

	slow = raw_connect(v.path);
	raw_send(slow, STR_LEN("{\"cmd\":\"bindings\",\"vm\":\"big\"}\n"));
	for (int i = 0; i < 12; i++) {		/* 600 ms in all, 16 KiB at a time */
		char buf[16384];
		ssize_t k;

		usleep(TIMEOUT_MS * 1000 / 6);
		assert_true((k = recv(slow, buf, sizeof(buf), 0)) > 0);
		n += (size_t)k;
	}
	reply = raw_read_all(slow, &len);
	assert_true(n + len > (size_t)BIG_BINDINGS * 50);
	assert_int_equal(reply[len - 1], '\n');
	free(reply);
	close(slow);

	usleep((TIMEOUT_MS + 100) * 1000);	/* the stuck one is gone by now */
	close(stuck);
	srv_stop(&v);
	assert_int_equal(v.cnt.timeouts, 1);
	assert_int_equal(v.cnt.replied, 2);
}

/* More clients at once than CTL_SOCK_CLIENTS_MAX: the rest wait in the backlog. */
static void
test_many_clients(void **state)
{
	enum { N = CTL_SOCK_CLIENTS_MAX + 40 };
	static const char req[] = "{\"cmd\":\"stats\",\"vm\":\"many\"}\n";
	struct srv v;
	int fd[N];

	(void)state;
	srv_start(&v);
	for (int i = 0; i < N; i++)
		fd[i] = raw_connect(v.path);
	for (int i = 0; i < N; i++)
		raw_send(fd[i], req, sizeof(req) - 1);
	for (int i = 0; i < N; i++) {
		char *reply = raw_read_all(fd[i], NULL);

		assert_string_equal(reply, "{\"vms\":[{\"vm\":\"many\"}]}\n");
		free(reply);
		close(fd[i]);
	}
	srv_stop(&v);
	assert_int_equal(v.cnt.replied, N);
	assert_int_equal(v.cnt.timeouts, 0);
}

/* ctl_sock_poll() waits at most its timeout, whatever the clients' deadlines. */
static void
test_poll_bound(void **state)
{
	char dir[] = "/tmp/test_ctl_sock.XXXXXX", path[128];
	struct ctl_sock *s;
	int64_t t0, dt;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/ng.sock", dir);
	assert_non_null(s = ctl_sock_open(path, 60000, NULL, 0));
	assert_int_equal(ctl_sock_serve(s, fake_ops, sizeof(fake_ops) / sizeof(fake_ops[0]),
	    NULL), 0);
	t0 = now_ms();
	assert_int_equal(ctl_sock_poll(s, 0), 0);
	assert_true(now_ms() - t0 < 20);
	t0 = now_ms();
	assert_int_equal(ctl_sock_poll(s, 100), 0);
	dt = now_ms() - t0;
	assert_true(dt >= 90 && dt < 400);

	fd = raw_connect(path);			/* accepted, silent, deadline a minute away */
	assert_int_equal(ctl_sock_poll(s, 100), 0);
	t0 = now_ms();
	assert_int_equal(ctl_sock_poll(s, 100), 0);
	dt = now_ms() - t0;
	assert_true(dt >= 90 && dt < 400);
	raw_send(fd, STR_LEN("{\"cmd\":\"reload\"}\n"));
	atomic_store(&reload_reject, 0);
	assert_int_equal(ctl_sock_poll(s, 1000), 1);
	{
		char *reply = raw_read_all(fd, NULL);

		assert_string_equal(reply, "{\"ok\":true,\"generation\":4}\n");
		free(reply);
	}
	close(fd);
	/* A negative timeout is treated as 0, never as "forever". */
	t0 = now_ms();
	assert_int_equal(ctl_sock_poll(s, -1), 0);
	assert_true(now_ms() - t0 < 20);
	ctl_sock_close(s);
	assert_int_equal(rmdir(dir), 0);
}

static mode_t
mode_of(const char *path)
{
	struct stat st;

	assert_int_equal(lstat(path, &st), 0);
	return st.st_mode;
}

/* Parent directories created 0711, the socket 0660 whatever the umask. */
static void
test_permissions(void **state)
{
	static const mode_t masks[] = { 022, 077, 0 };
	char dir[] = "/tmp/test_ctl_sock.XXXXXX", a[128], b[128], path[160];

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(a, sizeof(a), "%s/run", dir);
	snprintf(b, sizeof(b), "%s/run/namegate", dir);
	snprintf(path, sizeof(path), "%s/run/namegate/namegate.sock", dir);
	for (size_t i = 0; i < sizeof(masks) / sizeof(masks[0]); i++) {
		mode_t old = umask(masks[i]);
		struct ctl_sock *s = ctl_sock_open(path, 0, NULL, 0);

		umask(old);
		assert_non_null(s);
		assert_true(S_ISDIR(mode_of(a)) && (mode_of(a) & 07777) == 0711);
		assert_true(S_ISDIR(mode_of(b)) && (mode_of(b) & 07777) == 0711);
		assert_true(S_ISSOCK(mode_of(path)));
		assert_int_equal(mode_of(path) & 07777, 0660);
		ctl_sock_close(s);
		assert_int_equal(access(path, F_OK), -1);
		assert_int_equal(rmdir(b), 0);
		assert_int_equal(rmdir(a), 0);
	}
	/* An existing directory keeps its mode: it is the administrator's. */
	assert_int_equal(mkdir(a, 0755), 0);
	snprintf(path, sizeof(path), "%s/run/ng.sock", dir);
	{
		struct ctl_sock *s = ctl_sock_open(path, 0, NULL, 0);

		assert_non_null(s);
		assert_int_equal(mode_of(a) & 07777, 0755);
		ctl_sock_close(s);
	}
	assert_int_equal(rmdir(a), 0);
	assert_int_equal(rmdir(dir), 0);
}

/* A leftover socket is replaced; a live one, or anything else at the path, is not. */
static void
test_takeover(void **state)
{
	char dir[] = "/tmp/test_ctl_sock.XXXXXX", path[128], other[128], err[256], big[200];
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct ctl_sock *s, *t;
	struct ctl_reply r;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/ng.sock", dir);

	/* The daemon is not running: no socket, then a dead one. */
	assert_int_equal(ctl_client_call(path, "status", NULL, NULL, IO_MS, &r, err,
	    sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "namegate is not running (no control socket at"));
	strcpy(sun.sun_path, path);
	assert_true((fd = socket(AF_UNIX, SOCK_STREAM, 0)) >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	close(fd);
	assert_int_equal(ctl_client_call(path, "status", NULL, NULL, IO_MS, &r, err,
	    sizeof(err)), -ECONNREFUSED);
	assert_non_null(strstr(err, "namegate is not running (nothing listens on"));

	err[0] = '\0';
	assert_non_null(s = ctl_sock_open(path, 0, err, sizeof(err)));
	assert_string_equal(err, "");

	assert_null(t = ctl_sock_open(path, 0, err, sizeof(err)));
	assert_int_equal(errno, EADDRINUSE);
	assert_non_null(strstr(err, "another namegate is listening there"));
	assert_true(S_ISSOCK(mode_of(path)));	/* the live one is untouched */

	/* Someone else's socket now sits at the path: closing ours must leave it. */
	snprintf(other, sizeof(other), "%s/other.sock", dir);
	strcpy(sun.sun_path, other);
	assert_true((fd = socket(AF_UNIX, SOCK_STREAM, 0)) >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	assert_int_equal(rename(other, path), 0);
	ctl_sock_close(s);
	assert_true(S_ISSOCK(mode_of(path)));
	close(fd);
	assert_int_equal(unlink(path), 0);

	/* Not a socket: refused, and left alone. */
	assert_true((fd = open(path, O_CREAT | O_WRONLY, 0600)) >= 0);
	close(fd);
	assert_null(ctl_sock_open(path, 0, err, sizeof(err)));
	assert_int_equal(errno, EEXIST);
	assert_non_null(strstr(err, "exists and is not a socket"));
	assert_true(S_ISREG(mode_of(path)));
	assert_int_equal(unlink(path), 0);

	/* Too long for sun_path, and a parent that is a file. */
	memset(big, 'x', sizeof(big) - 1);
	big[0] = '/';
	big[sizeof(big) - 1] = '\0';
	assert_null(ctl_sock_open(big, 0, err, sizeof(err)));
	assert_int_equal(errno, ENAMETOOLONG);
	snprintf(other, sizeof(other), "%s/file", dir);
	assert_true((fd = open(other, O_CREAT | O_WRONLY, 0600)) >= 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/file/ng.sock", dir);
	assert_null(ctl_sock_open(path, 0, err, sizeof(err)));
	assert_int_equal(errno, ENOTDIR);
	assert_int_equal(unlink(other), 0);
	assert_int_equal(rmdir(dir), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trips),
		cmocka_unit_test(test_callback_errors),
		cmocka_unit_test(test_bad_requests),
		cmocka_unit_test(test_served_by_tables),
		cmocka_unit_test(test_request_framing),
		cmocka_unit_test(test_oversize),
		cmocka_unit_test(test_stalled_clients),
		cmocka_unit_test(test_slow_readers),
		cmocka_unit_test(test_many_clients),
		cmocka_unit_test(test_poll_bound),
		cmocka_unit_test(test_permissions),
		cmocka_unit_test(test_takeover),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

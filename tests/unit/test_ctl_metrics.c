/*
 * control/metrics/ctl_metrics: what a scraper sees over a plain socket (status, headers, body), the
 * errors, and that a client holding a connection open does not hold up anyone else.
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "ctl_metrics.h"

#define IO_TIMEOUT_MS	5000
#define REQ		"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"

#define TEXT \
	"# TYPE namegate_policy_generation gauge\n" \
	"namegate_policy_generation 3\n" \
	"namegate_vm_blocked_total{vm=\"agent1\",reason=\"sni_denied\"} 7\n"

struct render {
	const char *text;
	int rc;
	size_t repeat;		/* text is written this many times */
	atomic_int calls;
};

static int
render(FILE *out, void *arg)
{
	struct render *r = arg;

	atomic_fetch_add(&r->calls, 1);
	for (size_t i = 0; i < (r->repeat > 0 ? r->repeat : 1); i++)
		fputs(r->text, out);
	return r->rc;
}

struct resp {
	char *raw;		/* headers and body, NUL-terminated */
	size_t len;
	int status;
	const char *body;
	size_t body_len;
};

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int
connect_to(int family, uint16_t port)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len;
	int fd;

	if (family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		s6->sin6_addr = in6addr_loopback;
		len = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*s4);
	}
	fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	if (connect(fd, (struct sockaddr *)&ss, len) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void
send_all(int fd, const char *s)
{
	size_t n = strlen(s);

	assert_int_equal(send(fd, s, n, MSG_NOSIGNAL), (ssize_t)n);
}

/*
 * Reads until the server closes or timeout_ms passes; returns false on timeout with
 * nothing read. A reset after a complete response still counts as the response.
 */
static bool
read_resp(int fd, struct resp *r, int timeout_ms)
{
	int64_t end = now_ms() + timeout_ms;
	size_t cap = 4096;
	char *hdr_end;
	ssize_t n;

	memset(r, 0, sizeof(*r));
	r->raw = malloc(cap);
	assert_non_null(r->raw);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = end - now_ms();

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			break;
		if (cap - r->len < 4096) {
			cap *= 2;
			r->raw = realloc(r->raw, cap);
			assert_non_null(r->raw);
		}
		if ((n = recv(fd, r->raw + r->len, cap - r->len - 1, 0)) <= 0)
			break;
		r->len += (size_t)n;
	}
	r->raw[r->len] = '\0';
	if (r->len == 0)
		return false;
	if (sscanf(r->raw, "HTTP/1.%*d %d ", &r->status) != 1)
		r->status = -1;
	if ((hdr_end = strstr(r->raw, "\r\n\r\n")) != NULL) {
		r->body = hdr_end + 4;
		r->body_len = r->len - (size_t)(r->body - r->raw);
	}
	return true;
}

/* The value of header name, copied into v, or NULL. */
static const char *
header(const struct resp *r, const char *name, char *v, size_t vlen)
{
	size_t nlen = strlen(name);
	const char *p = strstr(r->raw, "\r\n");

	while (p != NULL && p + 2 < r->body) {
		const char *line = p + 2, *eol = strstr(line, "\r\n");

		if (eol == NULL)
			break;
		if (strncasecmp(line, name, nlen) == 0 && line[nlen] == ':') {
			const char *val = line + nlen + 1;

			while (*val == ' ')
				val++;
			snprintf(v, vlen, "%.*s", (int)(eol - val), val);
			return v;
		}
		p = eol;
	}
	return NULL;
}

static void
resp_free(struct resp *r)
{
	free(r->raw);
	r->raw = NULL;
}

/* One request on a fresh connection; asserts a response came. */
static void
request(int family, uint16_t port, const char *req, struct resp *r)
{
	int fd = connect_to(family, port);

	assert_true(fd >= 0);
	send_all(fd, req);
	assert_true(read_resp(fd, r, IO_TIMEOUT_MS));
	close(fd);
}

static void
get(uint16_t port, const char *path, struct resp *r)
{
	char req[256];

	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: localhost\r\n"
	    "Connection: close\r\n\r\n", path);
	request(AF_INET, port, req, r);
}

static struct ctl_metrics *
start_v4(struct render *rd)
{
	struct ctl_metrics *m;
	char err[256];

	m = ctl_metrics_start("127.0.0.1", 0, render, rd, err, sizeof(err));
	if (m == NULL)
		fail_msg("%s", err);
	assert_int_not_equal(ctl_metrics_port(m), 0);
	return m;
}

static void
check_ok(const struct resp *r, const char *text)
{
	char v[128];

	assert_int_equal(r->status, 200);
	assert_non_null(header(r, "Content-Type", v, sizeof(v)));
	assert_string_equal(v, "text/plain; version=0.0.4; charset=utf-8");
	assert_non_null(header(r, "Content-Length", v, sizeof(v)));
	assert_int_equal(strtoul(v, NULL, 10), strlen(text));
	assert_int_equal(r->body_len, strlen(text));
	assert_memory_equal(r->body, text, r->body_len);
}

static void
test_scrape(void **state)
{
	struct render rd = { .text = TEXT };
	struct ctl_metrics *m = start_v4(&rd);
	struct resp r;

	(void)state;
	get(ctl_metrics_port(m), "/metrics", &r);
	check_ok(&r, TEXT);
	resp_free(&r);
	/* Prometheus may add query parameters; the path is what counts. */
	get(ctl_metrics_port(m), "/metrics?collect[]=x", &r);
	check_ok(&r, TEXT);
	resp_free(&r);
	/* HTTP/1.0 without Host, as curl -0 or a shell one-liner sends it. */
	request(AF_INET, ctl_metrics_port(m), "GET /metrics HTTP/1.0\r\n\r\n", &r);
	check_ok(&r, TEXT);
	resp_free(&r);
	assert_int_equal(atomic_load(&rd.calls), 3);
	ctl_metrics_stop(m);
}

static void
test_empty_body(void **state)
{
	struct render rd = { .text = "" };
	struct ctl_metrics *m = start_v4(&rd);
	struct resp r;

	(void)state;
	get(ctl_metrics_port(m), "/metrics", &r);
	check_ok(&r, "");
	resp_free(&r);
	ctl_metrics_stop(m);
}

static void
test_not_found(void **state)
{
	static const char *const paths[] = { "/", "/metricsx", "/metrics/", "/Metrics",
	    "/x/metrics" };
	struct render rd = { .text = TEXT };
	struct ctl_metrics *m = start_v4(&rd);
	struct resp r;

	(void)state;
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		get(ctl_metrics_port(m), paths[i], &r);
		assert_int_equal(r.status, 404);
		assert_null(strstr(r.raw, "namegate_"));
		resp_free(&r);
	}
	assert_int_equal(atomic_load(&rd.calls), 0);
	ctl_metrics_stop(m);
}

static void
test_method(void **state)
{
	static const char *const reqs[] = {
		"POST /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
		"Content-Length: 5\r\n\r\nhello",
		"HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		"PUT /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
		"Content-Length: 0\r\n\r\n",
		"DELETE /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
	};
	struct render rd = { .text = TEXT };
	struct ctl_metrics *m = start_v4(&rd);
	struct resp r;
	char v[64];

	(void)state;
	for (size_t i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
		request(AF_INET, ctl_metrics_port(m), reqs[i], &r);
		assert_int_equal(r.status, 405);
		assert_non_null(header(&r, "Allow", v, sizeof(v)));
		assert_string_equal(v, "GET");
		resp_free(&r);
	}
	assert_int_equal(atomic_load(&rd.calls), 0);
	ctl_metrics_stop(m);
}

static void
test_render_fails(void **state)
{
	struct render rd = { .text = "namegate_partial 1\n", .rc = -1 };
	struct ctl_metrics *m = start_v4(&rd);
	struct resp r;

	(void)state;
	get(ctl_metrics_port(m), "/metrics", &r);
	assert_int_equal(r.status, 500);
	assert_null(strstr(r.raw, "namegate_partial"));	/* half a render is not served */
	resp_free(&r);
	/* The next scrape is independent of the failed one. */
	rd.rc = 0;
	get(ctl_metrics_port(m), "/metrics", &r);
	check_ok(&r, "namegate_partial 1\n");
	resp_free(&r);
	ctl_metrics_stop(m);
}

static void
test_big_body(void **state)
{
	struct render rd = { .text = "namegate_vm_flows{vm=\"agent-with-a-long-name\"} 123456\n",
	    .repeat = 40000 };	/* ~2 MB: many socket buffers' worth */
	struct ctl_metrics *m = start_v4(&rd);
	size_t one = strlen(rd.text);
	struct resp r;

	(void)state;
	get(ctl_metrics_port(m), "/metrics", &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.body_len, one * rd.repeat);
	for (size_t i = 0; i < rd.repeat; i++)
		assert_memory_equal(r.body + i * one, rd.text, one);
	resp_free(&r);
	ctl_metrics_stop(m);
}

/* A client that sends half a request and waits must not delay anyone else. */
static void
test_slow_client(void **state)
{
	struct render rd = { .text = TEXT };
	struct ctl_metrics *m = start_v4(&rd);
	int slow[3];
	int64_t t0;
	struct resp r;

	(void)state;
	for (size_t i = 0; i < 3; i++) {
		slow[i] = connect_to(AF_INET, ctl_metrics_port(m));
		assert_true(slow[i] >= 0);
		send_all(slow[i], "GET /metr");
	}
	t0 = now_ms();
	for (int i = 0; i < 5; i++) {
		get(ctl_metrics_port(m), "/metrics", &r);
		check_ok(&r, TEXT);
		resp_free(&r);
	}
	assert_true(now_ms() - t0 < 2000);
	/* Nothing was answered to the half requests, and finishing one gets it served. */
	assert_false(read_resp(slow[0], &r, 100));
	resp_free(&r);
	send_all(slow[0], "ics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	assert_true(read_resp(slow[0], &r, IO_TIMEOUT_MS));
	check_ok(&r, TEXT);
	resp_free(&r);
	for (size_t i = 0; i < 3; i++)
		close(slow[i]);
	ctl_metrics_stop(m);
}

/* A TCP connection to 127.0.0.1:port from src (any 127/8 address is local on Linux). */
static int
connect_from(const char *src, uint16_t port)
{
	struct sockaddr_in from = { .sin_family = AF_INET }, to = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(inet_pton(AF_INET, src, &from.sin_addr), 1);
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	to.sin_port = htons(port);
	assert_int_equal(bind(fd, (struct sockaddr *)&from, sizeof(from)), 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&to, sizeof(to)), 0);
	return fd;
}

/* True if a full request from src is answered 200 within timeout_ms. */
static bool
served_from(const char *src, uint16_t port, int timeout_ms)
{
	int fd = connect_from(src, port);
	struct resp r;
	bool ok;

	/* It may be closed already: a failed send is as good as no answer. */
	(void)send(fd, REQ, strlen(REQ), MSG_NOSIGNAL);
	ok = read_resp(fd, &r, timeout_ms) && r.status == 200;
	resp_free(&r);
	close(fd);
	return ok;
}

/*
 * Idle connections from one address stop at CTL_METRICS_CONN_PER_IP, and others are still
 * served; past CTL_METRICS_CONN_MAX in all, nobody new is (MHD closes the connection or
 * leaves it in the backlog). Once they go, scrapes work again.
 */
_Static_assert(CTL_METRICS_CONN_MAX <= 2 * CTL_METRICS_CONN_PER_IP, "two sources fill the server");

static void
test_conn_limit(void **state)
{
	struct render rd = { .text = TEXT };
	struct ctl_metrics *m = start_v4(&rd);
	uint16_t port = ctl_metrics_port(m);
	int idle[CTL_METRICS_CONN_MAX];
	bool served = false;

	(void)state;
	for (size_t i = 0; i < CTL_METRICS_CONN_PER_IP; i++)
		idle[i] = connect_from("127.0.0.1", port);
	usleep(200 * 1000);		/* let MHD accept them */
	assert_false(served_from("127.0.0.1", port, 300));
	assert_true(served_from("127.0.0.2", port, IO_TIMEOUT_MS));

	for (size_t i = CTL_METRICS_CONN_PER_IP; i < CTL_METRICS_CONN_MAX; i++)
		idle[i] = connect_from("127.0.0.2", port);
	usleep(200 * 1000);
	assert_false(served_from("127.0.0.3", port, 300));

	for (size_t i = 0; i < CTL_METRICS_CONN_MAX; i++)
		close(idle[i]);
	for (int i = 0; i < 20 && !served; i++)	/* MHD notices the closes */
		served = served_from("127.0.0.3", port, 500);
	assert_true(served);
	ctl_metrics_stop(m);
}

/* Run under valgrind: every scrape's buffer and response must be released. */
static void
test_many_scrapes(void **state)
{
	struct render rd = { .text = TEXT };
	struct ctl_metrics *m = start_v4(&rd);
	struct resp r;

	(void)state;
	for (int i = 0; i < 300; i++) {
		get(ctl_metrics_port(m), i % 3 == 2 ? "/nope" : "/metrics", &r);
		assert_int_equal(r.status, i % 3 == 2 ? 404 : 200);
		resp_free(&r);
	}
	assert_int_equal(atomic_load(&rd.calls), 200);
	ctl_metrics_stop(m);
}

/* Keep-alive: two requests on one connection, both answered. */
static void
test_keepalive(void **state)
{
	struct render rd = { .text = TEXT };
	struct ctl_metrics *m = start_v4(&rd);
	int fd = connect_to(AF_INET, ctl_metrics_port(m));
	struct resp r;

	(void)state;
	assert_true(fd >= 0);
	send_all(fd, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
	    "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	assert_true(read_resp(fd, &r, IO_TIMEOUT_MS));
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "HTTP/1.1 200"));	/* the second response follows */
	resp_free(&r);
	close(fd);
	assert_int_equal(atomic_load(&rd.calls), 2);
	ctl_metrics_stop(m);
}

static void
test_ipv6(void **state)
{
	static const char *const addrs[] = { "::1", "[::1]" };
	struct render rd = { .text = TEXT };
	struct ctl_metrics *m;
	struct resp r;
	char err[256];

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		m = ctl_metrics_start(addrs[i], 0, render, &rd, err, sizeof(err));
		if (m == NULL && (errno == EADDRNOTAVAIL || errno == EAFNOSUPPORT))
			skip();		/* no IPv6 loopback here */
		if (m == NULL)
			fail_msg("%s", err);
		request(AF_INET6, ctl_metrics_port(m), "GET /metrics HTTP/1.1\r\nHost: [::1]\r\n"
		    "Connection: close\r\n\r\n", &r);
		check_ok(&r, TEXT);
		resp_free(&r);
		ctl_metrics_stop(m);
	}
}

static void
test_bind_busy(void **state)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	struct render rd = { .text = TEXT };
	char err[256], want[96];
	int fd;

	(void)state;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(fd, 1), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);

	errno = 0;
	assert_null(ctl_metrics_start("127.0.0.1", ntohs(sin.sin_port), render, &rd, err,
	    sizeof(err)));
	assert_int_equal(errno, EADDRINUSE);
	snprintf(want, sizeof(want), "metrics: bind 127.0.0.1 port %u: %s", ntohs(sin.sin_port),
	    strerror(EADDRINUSE));
	assert_string_equal(err, want);
	close(fd);

	/* An address this host does not have. */
	assert_null(ctl_metrics_start("192.0.2.1", 0, render, &rd, err, sizeof(err)));
	assert_int_equal(errno, EADDRNOTAVAIL);
	assert_non_null(strstr(err, "bind 192.0.2.1 port 0"));
}

static void
test_bad_args(void **state)
{
	static const char *const bad[] = { "localhost", "", "1.2.3.4.5", "127.0.0.1:80", "[::1",
	    "[]", "::1]", "agent1.example" };
	struct render rd = { .text = TEXT };
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		assert_null(ctl_metrics_start(bad[i], 0, render, &rd, err, sizeof(err)));
		assert_int_equal(errno, EINVAL);
		assert_non_null(strstr(err, "is not an IPv4 or IPv6 literal"));
	}
	assert_null(ctl_metrics_start(NULL, 0, render, &rd, err, sizeof(err)));
	assert_int_equal(errno, EINVAL);
	assert_null(ctl_metrics_start("127.0.0.1", 0, NULL, &rd, err, sizeof(err)));
	assert_int_equal(errno, EINVAL);
	assert_null(ctl_metrics_start("nope", 0, render, &rd, NULL, 0));	/* no err buffer */
	assert_int_equal(atomic_load(&rd.calls), 0);
}

/* Stopping with a connection open returns, and the port is closed afterwards. */
static void
test_stop(void **state)
{
	struct render rd = { .text = TEXT };
	struct ctl_metrics *m = start_v4(&rd);
	uint16_t port = ctl_metrics_port(m);
	int fd = connect_to(AF_INET, port);
	int64_t t0;

	(void)state;
	assert_true(fd >= 0);
	send_all(fd, "GET /met");
	usleep(50 * 1000);
	t0 = now_ms();
	ctl_metrics_stop(m);
	assert_true(now_ms() - t0 < 2000);
	assert_int_equal(connect_to(AF_INET, port), -1);
	close(fd);
	ctl_metrics_stop(NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scrape),
		cmocka_unit_test(test_empty_body),
		cmocka_unit_test(test_not_found),
		cmocka_unit_test(test_method),
		cmocka_unit_test(test_render_fails),
		cmocka_unit_test(test_big_body),
		cmocka_unit_test(test_slow_client),
		cmocka_unit_test(test_conn_limit),
		cmocka_unit_test(test_many_scrapes),
		cmocka_unit_test(test_keepalive),
		cmocka_unit_test(test_ipv6),
		cmocka_unit_test(test_bind_busy),
		cmocka_unit_test(test_bad_args),
		cmocka_unit_test(test_stop),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

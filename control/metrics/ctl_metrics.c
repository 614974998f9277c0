/*
 * GET /metrics over libmicrohttpd. We bind the listening socket ourselves and hand it to MHD
 * (MHD_OPTION_LISTEN_SOCKET): bind errors then carry their errno to the operator, port 0
 * works, and IPv4 and IPv6 need no separate MHD flags. One MHD thread polls every
 * connection non-blocking, so a client that sends half a request costs a slot and a timer,
 * never a thread, and the main lcore does nothing per scrape.
 */
#include <errno.h>
#include <netdb.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>
#include <net/if.h>
#include <netinet/in.h>

#include "ctl_base.h"
#include "ctl_metrics.h"

#define METRICS_PATH		"/metrics"
#define METRICS_BACKLOG		16
#define METRICS_CONN_MEM	(16 * 1024)	/* per-connection pool: requests are tiny */

struct ctl_metrics {
	struct MHD_Daemon *mhd;
	ctl_metrics_render_fn *fn;
	void *arg;
	uint16_t port;
	atomic_bool started;		/* after this, MHD's messages are dropped */
	char mhd_err[128];		/* MHD's first message while starting */
};

/*
 * Keep what MHD says while it starts, so a failure can name its cause. Later messages are
 * about single connections (a client reset, a malformed request): a hostile scraper could
 * otherwise write the daemon's log for it.
 */
static void
metrics_mhd_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

static void
metrics_mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct ctl_metrics *m = cls;
	size_t n;

	if (atomic_load(&m->started) || m->mhd_err[0] != '\0')
		return;
	vsnprintf(m->mhd_err, sizeof(m->mhd_err), fmt, ap);
	n = strlen(m->mhd_err);
	if (n > 0 && m->mhd_err[n - 1] == '\n')
		m->mhd_err[n - 1] = '\0';
}

static enum MHD_Result
metrics_reply(struct MHD_Connection *conn, unsigned int status, const char *body)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(strlen(body), (void *)(uintptr_t)body,
	    MHD_RESPMEM_PERSISTENT);
	if (r == NULL)
		return MHD_NO;
	/* RFC 9110 s15.5.6: a 405 lists the methods the resource supports. */
	if ((status == MHD_HTTP_METHOD_NOT_ALLOWED &&
	    MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, MHD_HTTP_METHOD_GET) != MHD_YES) ||
	    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
	    "text/plain; charset=utf-8") != MHD_YES) {
		MHD_destroy_response(r);
		return MHD_NO;
	}
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

/*
 * Called on the MHD thread: first when a request's headers are in, then for each piece of
 * its body, then once with *upload_data_size 0. Errors are answered on the first call;
 * MHD then closes the connection rather than read a body nobody wants. A scrape is
 * answered on the last call, which is what keeps a Prometheus connection alive between
 * scrapes (MHD 0.9.75 closes after a response queued on the first call).
 */
static enum MHD_Result
metrics_answer(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
    const char *version, const char *upload_data, size_t *upload_data_size, void **req_cls)
{
	struct ctl_metrics *m = cls;
	struct MHD_Response *r;
	enum MHD_Result ret;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int rc;

	(void)version;
	(void)upload_data;
	if (*req_cls == NULL) {
		if (strcmp(url, METRICS_PATH) != 0)
			return metrics_reply(conn, MHD_HTTP_NOT_FOUND, "not found\n");
		if (strcmp(method, MHD_HTTP_METHOD_GET) != 0)
			return metrics_reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
			    "method not allowed\n");
		*req_cls = m;		/* any non-NULL marks "headers seen" */
		return MHD_YES;
	}
	if (*upload_data_size != 0) {	/* a GET with a body: drop it */
		*upload_data_size = 0;
		return MHD_YES;
	}

	if ((f = open_memstream(&buf, &len)) == NULL)
		return metrics_reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	rc = m->fn(f, m->arg);
	if (ferror(f))			/* memstream growth failed: the text is cut short */
		rc = -1;
	if (fclose(f) != 0)
		rc = -1;
	if (rc != 0) {
		free(buf);
		return metrics_reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "metrics unavailable\n");
	}
	if ((r = MHD_create_response_from_buffer_with_free_callback(len, buf, free)) == NULL) {
		free(buf);
		return MHD_NO;
	}
	if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
	    CTL_METRICS_CONTENT_TYPE) != MHD_YES) {
		MHD_destroy_response(r);
		return MHD_NO;
	}
	ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);	/* MHD holds its own reference until sent */
	return ret;
}

/*
 * A bound, listening, non-blocking socket for addr/port, or -1 with errno and err set.
 * Numeric hosts only: a name would need a resolver at startup and could mean two families.
 */
static int
metrics_listen(const char *addr, uint16_t port, uint16_t *bound, char *err, size_t errlen)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE,
	};
	char host[INET6_ADDRSTRLEN + IF_NAMESIZE + 1], serv[8];
	struct sockaddr_storage ss;
	socklen_t sslen = sizeof(ss);
	struct addrinfo *ai = NULL;
	size_t n;
	int fd = -1, one = 1, saved;

	n = addr != NULL ? strlen(addr) : 0;
	if (n >= 2 && addr[0] == '[' && addr[n - 1] == ']') {	/* "[::1]", as in URLs */
		addr++;
		n -= 2;
	}
	if (n == 0 || n >= sizeof(host)) {
		errno = EINVAL;
		ctl_err(err, errlen, "metrics: listen address \"%s\" is not an IPv4 or IPv6 "
		    "literal", addr != NULL ? addr : "");
		return -1;
	}
	memcpy(host, addr, n);
	host[n] = '\0';
	snprintf(serv, sizeof(serv), "%u", port);
	if (getaddrinfo(host, serv, &hints, &ai) != 0 || ai == NULL) {
		errno = EINVAL;
		ctl_err(err, errlen, "metrics: listen address \"%s\" is not an IPv4 or IPv6 "
		    "literal", host);
		goto fail;
	}
	if ((fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0) {
		ctl_err(err, errlen, "metrics: socket for %s: %s", host, strerror(errno));
		goto fail;
	}
	/* A restarted daemon must rebind while old connections sit in TIME_WAIT. */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
		ctl_err(err, errlen, "metrics: bind %s port %u: %s", host, port,
		    strerror(errno));
		goto fail;
	}
	if (listen(fd, METRICS_BACKLOG) != 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &sslen) != 0) {
		ctl_err(err, errlen, "metrics: listen %s port %u: %s", host, port,
		    strerror(errno));
		goto fail;
	}
	*bound = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port :
	    ((struct sockaddr_in *)&ss)->sin_port);
	freeaddrinfo(ai);
	return fd;
fail:
	saved = errno;
	if (fd >= 0)
		close(fd);
	if (ai != NULL)
		freeaddrinfo(ai);
	errno = saved;
	return -1;
}

struct ctl_metrics *
ctl_metrics_start(const char *addr, uint16_t port, ctl_metrics_render_fn *fn, void *arg,
    char *err, size_t errlen)
{
	struct ctl_metrics *m;
	int fd;

	if (errlen > 0)
		err[0] = '\0';
	if (fn == NULL) {
		errno = EINVAL;
		ctl_err(err, errlen, "metrics: no render function");
		return NULL;
	}
	if ((m = calloc(1, sizeof(*m))) == NULL) {
		ctl_err(err, errlen, "metrics: %s", strerror(errno));
		return NULL;
	}
	m->fn = fn;
	m->arg = arg;
	if ((fd = metrics_listen(addr, port, &m->port, err, errlen)) < 0) {
		free(m);
		return NULL;
	}
	/* The logger goes first so that MHD's own startup checks report through it. */
	m->mhd = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG, 0,
	    NULL, NULL, metrics_answer, m,
	    MHD_OPTION_EXTERNAL_LOGGER, metrics_mhd_log, m,
	    MHD_OPTION_LISTEN_SOCKET, fd,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned int)CTL_METRICS_CONN_MAX,
	    MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)CTL_METRICS_CONN_PER_IP,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)CTL_METRICS_IDLE_S,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)METRICS_CONN_MEM,
	    MHD_OPTION_END);
	if (m->mhd == NULL) {
		/*
		 * fd is not closed here: MHD 0.9.75 closes a given socket on some failure paths
		 * and not on others, and a leaked descriptor on a failed start is better than
		 * closing one another thread may have been handed meanwhile.
		 */
		ctl_err(err, errlen, "metrics: cannot start HTTP server on port %u: %s",
		    m->port, m->mhd_err[0] != '\0' ? m->mhd_err : "libmicrohttpd failed");
		free(m);
		errno = EIO;
		return NULL;
	}
	atomic_store(&m->started, true);
	return m;
}

uint16_t
ctl_metrics_port(const struct ctl_metrics *m)
{
	return m->port;
}

void
ctl_metrics_stop(struct ctl_metrics *m)
{
	if (m == NULL)
		return;
	MHD_stop_daemon(m->mhd);	/* joins the thread, closes the listener it was given */
	free(m);
}

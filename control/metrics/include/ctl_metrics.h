/*
 * Prometheus endpoint (SPEC s6): GET /metrics on one address, served by libmicrohttpd from
 * its own thread. The caller (the main lcore) never waits on a scraper: connections are
 * polled by that thread, non-blocking, at most CTL_METRICS_CONN_MAX at a time (and
 * CTL_METRICS_CONN_PER_IP from one address), and closed after CTL_METRICS_IDLE_S seconds
 * without progress. No DPDK.
 */
#ifndef CTL_METRICS_H
#define CTL_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CTL_METRICS_CONN_MAX	16	/* concurrent connections; more wait or are closed */
#define CTL_METRICS_CONN_PER_IP	8	/* so one client cannot take every slot */
#define CTL_METRICS_IDLE_S	10	/* seconds a connection may sit without progress */
#define CTL_METRICS_CONTENT_TYPE	"text/plain; version=0.0.4; charset=utf-8"

/*
 * Writes the exposition text for one scrape to out (an in-memory stream) and returns 0,
 * or non-zero to answer 500 instead; whatever it wrote is then discarded. It runs on the
 * metrics thread, one scrape at a time, concurrently with the caller of ctl_metrics_start():
 * it must read shared counters as snapshots and must not take locks the dataplane holds.
 */
typedef int ctl_metrics_render_fn(FILE *out, void *arg);

struct ctl_metrics;

/*
 * Listens on addr (an IPv4 or IPv6 literal, "[v6]" accepted; no names, so nothing is
 * resolved) and port (0: the kernel picks one, see ctl_metrics_port()), and serves
 * GET /metrics from fn(out, arg). Other paths answer 404, other methods 405.
 * Returns the server, or NULL with errno set and a one-line reason in err (errlen bytes,
 * may be 0). Stop and free it with ctl_metrics_stop().
 */
struct ctl_metrics *ctl_metrics_start(const char *addr, uint16_t port, ctl_metrics_render_fn *fn,
    void *arg, char *err, size_t errlen);

/* The port actually bound, in host order. */
uint16_t ctl_metrics_port(const struct ctl_metrics *m);

/*
 * Closes the listener and every connection and waits for a running fn() to return; fn is
 * not called after this returns. NULL is a no-op.
 */
void ctl_metrics_stop(struct ctl_metrics *m);

#endif /* CTL_METRICS_H */

/*
 * The flow log's line (namegate(8), FLOW LOG): one JSON object per connection or datagram
 * flow when it ends, per flow_log_interval while a long one lasts (cumulative, "final":
 * false), and per connection attempt refused before it had a flow:
 *
 *   {"ts":"2026-12-05T08:01:02.345Z","vm":"vm1","proto":"tcp","src":"10.77.0.11:40312",
 *    "dst":"203.0.113.10:443","name":"pypi.org","sni":"pypi.org","verdict":"allowed",
 *    "end":"fin","start":"2026-12-05T08:01:01.900Z","stop":"2026-12-05T08:01:02.340Z",
 *    "bytes_out":1834,"bytes_in":20931,"packets_out":12,"packets_in":18,
 *    "budgets":["uploads"],"final":true}
 *
 * The writer is a struct ctl_logfile (whole lines only); this builds the line. No DPDK.
 */
#ifndef CTL_FLOWLOG_H
#define CTL_FLOWLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "ctl_jsonl.h"

/* One record, its strings resolved. NULL strings are left out ("name" is null). */
struct ctl_flow_line {
	const char *vm;
	uint8_t proto;			/* IP protocol number */
	int family;			/* AF_INET or AF_INET6 */
	const uint8_t *src, *dst;	/* network order; IPv4 in the first 4 bytes */
	uint16_t sport, dport;		/* host order */
	const char *name;		/* the name it was judged by; NULL: null */
	size_t name_len;
	const char *name_key;		/* "sni" or "host": name is also that; NULL: neither */
	const char *verdict;		/* "allowed", "would_block", "blocked" */
	const char *reason;		/* why blocked, cut or would_block; NULL: none */
	const char *end;		/* "fin", "rst", "idle", "cut", "blocked", "gone", ... */
	struct timespec start, stop;
	uint64_t bytes_out, bytes_in, packets_out, packets_in;
	const char *const *budgets;	/* names of the budgets it counted in */
	size_t nbudgets;
	bool final;
};

/* l as one line, ending in '\n', in b (reset first); ts is when it is written. */
void ctl_flowlog_format(struct ctl_jsonl *b, const struct timespec *ts,
    const struct ctl_flow_line *l);

#endif

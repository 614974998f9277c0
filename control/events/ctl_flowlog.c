/*
 * The flow log's line (ctl_flowlog.h).
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "ctl_flowlog.h"

static const char *
ctl_flowlog_proto(uint8_t proto, char *tmp, size_t len)
{
	switch (proto) {
	case IPPROTO_TCP:
		return "tcp";
	case IPPROTO_UDP:
		return "udp";
	default:
		snprintf(tmp, len, "%u", proto);
		return tmp;
	}
}

/* "10.0.0.1:443", "[2001:db8::1]:443"; IPv4 spelled here, a line's commonest field. */
static void
ctl_flowlog_endpoint(struct ctl_jsonl *b, int family, const uint8_t *addr, uint16_t port)
{
	char a[INET6_ADDRSTRLEN];

	ctl_jsonl_putn(b, family == AF_INET6 ? "\"[" : "\"", family == AF_INET6 ? 2 : 1);
	if (family == AF_INET) {
		for (int i = 0; i < 4; i++) {
			if (i > 0)
				ctl_jsonl_putn(b, ".", 1);
			ctl_jsonl_u64(b, addr[i]);
		}
	} else {
		if (inet_ntop(family, addr, a, sizeof(a)) == NULL)
			strcpy(a, "?");
		ctl_jsonl_puts(b, a);
		ctl_jsonl_putn(b, "]", 1);
	}
	ctl_jsonl_putn(b, ":", 1);
	ctl_jsonl_u64(b, port);
	ctl_jsonl_putn(b, "\"", 1);
}

void
ctl_flowlog_format(struct ctl_jsonl *b, const struct timespec *ts, const struct ctl_flow_line *l)
{
	char proto[4];

	ctl_jsonl_reset(b);
	ctl_jsonl_puts(b, "{\"ts\":");
	ctl_jsonl_ts(b, ts);
	ctl_jsonl_puts(b, ",\"vm\":");
	ctl_jsonl_str(b, l->vm);
	ctl_jsonl_puts(b, ",\"proto\":");
	ctl_jsonl_str(b, ctl_flowlog_proto(l->proto, proto, sizeof(proto)));
	ctl_jsonl_puts(b, ",\"src\":");
	ctl_flowlog_endpoint(b, l->family, l->src, l->sport);
	ctl_jsonl_puts(b, ",\"dst\":");
	ctl_flowlog_endpoint(b, l->family, l->dst, l->dport);
	ctl_jsonl_puts(b, ",\"name\":");
	if (l->name != NULL)
		ctl_jsonl_strn(b, l->name, l->name_len);
	else
		ctl_jsonl_puts(b, "null");
	if (l->name != NULL && l->name_key != NULL) {
		ctl_jsonl_putn(b, ",", 1);
		ctl_jsonl_str(b, l->name_key);
		ctl_jsonl_putn(b, ":", 1);
		ctl_jsonl_strn(b, l->name, l->name_len);
	}
	ctl_jsonl_puts(b, ",\"verdict\":");
	ctl_jsonl_str(b, l->verdict);
	if (l->reason != NULL) {
		ctl_jsonl_puts(b, ",\"reason\":");
		ctl_jsonl_str(b, l->reason);
	}
	ctl_jsonl_puts(b, ",\"end\":");
	if (strcmp(l->end, "cut") == 0 && l->reason != NULL) {
		ctl_jsonl_puts(b, "\"cut:");
		ctl_jsonl_puts(b, l->reason);	/* a reason's label: letters and '_' */
		ctl_jsonl_putn(b, "\"", 1);
	} else {
		ctl_jsonl_str(b, l->end);
	}
	ctl_jsonl_puts(b, ",\"start\":");
	ctl_jsonl_ts(b, &l->start);
	ctl_jsonl_puts(b, ",\"stop\":");
	ctl_jsonl_ts(b, &l->stop);
	ctl_jsonl_puts(b, ",\"bytes_out\":");
	ctl_jsonl_u64(b, l->bytes_out);
	ctl_jsonl_puts(b, ",\"bytes_in\":");
	ctl_jsonl_u64(b, l->bytes_in);
	ctl_jsonl_puts(b, ",\"packets_out\":");
	ctl_jsonl_u64(b, l->packets_out);
	ctl_jsonl_puts(b, ",\"packets_in\":");
	ctl_jsonl_u64(b, l->packets_in);
	ctl_jsonl_puts(b, ",\"budgets\":[");
	for (size_t i = 0; i < l->nbudgets; i++) {
		if (i > 0)
			ctl_jsonl_putn(b, ",", 1);
		ctl_jsonl_str(b, l->budgets[i]);
	}
	ctl_jsonl_puts(b, l->final ? "],\"final\":true}\n" : "],\"final\":false}\n");
}

/*
 * The flow log's line (ctl_flowlog.h).
 */
#include <stdio.h>
#include <string.h>

#include "ctl_flowlog.h"

void
ctl_flowlog_format(struct ctl_jsonl *b, const struct timespec *ts, const struct ctl_flow_line *l)
{
	ctl_jsonl_reset(b);
	ctl_jsonl_puts(b, "{\"ts\":");
	ctl_jsonl_ts(b, ts);
	ctl_jsonl_puts(b, ",\"vm\":");
	ctl_jsonl_str(b, l->vm);
	ctl_jsonl_puts(b, ",\"proto\":");
	ctl_jsonl_proto(b, l->proto);
	ctl_jsonl_puts(b, ",\"src\":");
	ctl_jsonl_endpoint(b, l->family, l->src, l->sport);
	ctl_jsonl_puts(b, ",\"dst\":");
	ctl_jsonl_endpoint(b, l->family, l->dst, l->dport);
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

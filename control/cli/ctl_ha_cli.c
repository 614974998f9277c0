/*
 * namegatectl ha: the HA pair's role as the daemon has it, and the health check
 * keepalived's vrrp_script runs (--check): exit 0 when this box may lead, 1 when not,
 * whatever the reason (namegate not running, not answering within --timeout, starting,
 * stalled), so that keepalived takes any failure as one. --watch: the watcher
 * (ctl_ha_watch.h), whose --timeout is the bound of a hang instead.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "ctl_cli.h"
#include "ctl_client.h"
#include "ctl_ha_watch.h"
#include "ctl_tab.h"

#define CTL_HA_CHECK_MS		1000	/* --check's default: below keepalived's script timeout */
#define CTL_HA_CHECK_MS_MAX	60000

static const char ctl_ha_usage[] = "usage: namegatectl ha [--json] | ha --check [--timeout MS] |\n"
    "       ha --watch FILE [--timeout MS]\n";

/* --check: the exit status only, and why not on stderr. */
static int
ctl_ha_check(const struct ctl_opts *o, int timeout_ms)
{
	const char *const kv[] = { "cmd", "ha", NULL };
	struct json_object *healthy;
	struct ctl_reply r;
	char err[512];
	bool ok;

	if (ctl_client_request(o->socket, kv, timeout_ms, &r, err, sizeof(err)) < 0) {
		fprintf(stderr, "namegatectl: ha: %s\n", err);
		return CTL_EXIT_BLOCK;
	}
	if (r.error != NULL) {
		fprintf(stderr, "namegatectl: ha: %s\n", r.error);
		ctl_reply_free(&r);
		return CTL_EXIT_BLOCK;
	}
	ok = json_object_object_get_ex(r.json, "healthy", &healthy) &&
	    json_object_is_type(healthy, json_type_boolean) && json_object_get_boolean(healthy);
	if (!ok)
		fprintf(stderr, "namegatectl: ha: may not lead: %s\n",
		    ctl_jstr(r.json, "reason", "?"));
	ctl_reply_free(&r);
	return ok ? CTL_EXIT_OK : CTL_EXIT_BLOCK;
}

/* The sync stream's two directions, each when configured. */
static void
ctl_ha_print_sync(struct json_object *y)
{
	struct json_object *v;
	double lag = json_object_object_get_ex(y, "lag_ms", &v) ? json_object_get_double(v) : -1;

	if (strcmp(ctl_jstr(y, "peer_state", "off"), "off") != 0) {
		printf("%-12s %s %s, %" PRIu64 " sent, %" PRIu64 " acked, ", "sync out",
		    ctl_jstr(y, "peer", "?"), ctl_jstr(y, "peer_state", "?"), ctl_ju64(y, "sent"),
		    ctl_ju64(y, "acked"));
		if (lag >= 0)
			printf("lag %.1f ms, ", lag);
		printf("%" PRIu64 " resyncs\n", ctl_ju64(y, "resyncs"));
	}
	if (strcmp(ctl_jstr(y, "inbound", "off"), "off") != 0)
		printf("%-12s %s %s, %" PRIu64 " received, %" PRIu64 " applied, %" PRIu64
		    " installed, %" PRIu64 " refused\n", "sync in", ctl_jstr(y, "listen", "?"),
		    ctl_jstr(y, "inbound", "?"), ctl_ju64(y, "received"), ctl_ju64(y, "applied"),
		    ctl_ju64(y, "installed"), ctl_ju64(y, "refused"));
	if (strcmp(ctl_jstr(y, "inbound", "off"), "off") != 0)
		printf("%-12s resync %s, %" PRIu64 " budget counts, %" PRIu64 " grants\n",
		    "sync state", ctl_jstr(y, "resync_in", "?"), ctl_ju64(y, "budget_in"),
		    ctl_ju64(y, "grants_in"));
}

/* The split-brain guard, and the peer's last beacon. */
static void
ctl_ha_print_guard(struct json_object *g)
{
	struct json_object *p = ctl_jget(g, "peer"), *v;

	printf("%-12s %s, priority %" PRIu64 ": %s%s%s\n", "guard", ctl_jstr(g, "mode", "?"),
	    ctl_ju64(g, "priority"), ctl_jstr(g, "state", "?"),
	    *ctl_jstr(g, "reason", "") != '\0' ? ": " : "", ctl_jstr(g, "reason", ""));
	if (p == NULL || !json_object_object_get_ex(p, "seen", &v) || !json_object_get_boolean(v)) {
		printf("%-12s none yet\n", "peer beacon");
		return;
	}
	printf("%-12s priority %" PRIu64 ", %s%s, %" PRIu64 " ms ago%s (taken %" PRIu64
	    ", stale %" PRIu64 ", bad %" PRIu64 ")\n", "peer beacon", ctl_ju64(p, "priority"),
	    json_object_object_get_ex(p, "forwards", &v) && json_object_get_boolean(v) ?
	    "forwards" : "does not forward",
	    json_object_object_get_ex(p, "held", &v) && json_object_get_boolean(v) ?
	    ", held" : "", ctl_ju64(p, "age_ms"),
	    json_object_object_get_ex(p, "fresh", &v) && json_object_get_boolean(v) ? "" :
	    " (stale)", ctl_ju64(p, "taken"), ctl_ju64(p, "stale"), ctl_ju64(p, "bad"));
}

static void
ctl_ha_print(struct json_object *j)
{
	struct json_object *lines = ctl_jget(j, "lines"), *v;
	bool healthy = json_object_object_get_ex(j, "healthy", &v) && json_object_get_boolean(v);
	int64_t age = json_object_object_get_ex(j, "heartbeat_age_ms", &v) ?
	    json_object_get_int64(v) : -1;
	double secs = json_object_object_get_ex(j, "seconds", &v) ? json_object_get_double(v) : 0;

	printf("%-12s %s since %s (%.1fs)\n", "role", ctl_jstr(j, "role", "?"),
	    ctl_jstr(j, "since", "?"), secs);
	printf("%-12s %s\n", "instance", *ctl_jstr(j, "instance", "") != '\0' ?
	    ctl_jstr(j, "instance", "") : "any");
	printf("%-12s %s\n", "notify fifo", ctl_jstr(j, "notify_fifo", "?"));
	printf("%-12s %s%s\n", "may lead", healthy ? "yes" : "no: ",
	    healthy ? "" : ctl_jstr(j, "reason", "?"));
	if (age >= 0)
		printf("%-12s %" PRId64 " ms ago (limit %" PRIu64 " ms)\n", "heartbeat", age,
		    ctl_ju64(j, "heartbeat_timeout_ms"));
	else
		printf("%-12s none yet\n", "heartbeat");
	printf("%-12s %" PRIu64 " (lines read %" PRIu64 ", ignored %" PRIu64 ", malformed %"
	    PRIu64 ")\n", "changes", ctl_ju64(j, "changes"), ctl_ju64(lines, "read"),
	    ctl_ju64(lines, "ignored"), ctl_ju64(lines, "malformed"));
	if (ctl_jget(j, "guard") != NULL)
		ctl_ha_print_guard(ctl_jget(j, "guard"));
	if (ctl_jget(j, "sync") != NULL)
		ctl_ha_print_sync(ctl_jget(j, "sync"));
}

int
ctl_cmd_ha(const struct ctl_opts *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "check", no_argument, NULL, 'k' },
		{ "timeout", required_argument, NULL, 't' },
		{ "watch", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *const kv[] = { "cmd", "ha", NULL };
	bool json = false, check = false;
	int ch, timeout_ms = -1, rc;
	const char *watch = NULL;
	struct ctl_reply r;
	char *end;
	long v;

	optind = 0;
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'j':
			json = true;
			break;
		case 'k':
			check = true;
			break;
		case 'w':
			watch = optarg;
			break;
		case 't':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || end == optarg || v < 1 ||
			    v > CTL_HA_CHECK_MS_MAX) {
				fprintf(stderr, "namegatectl: ha: --timeout: milliseconds, 1 to %d\n",
				    CTL_HA_CHECK_MS_MAX);
				return CTL_EXIT_ERROR;
			}
			timeout_ms = (int)v;
			break;
		case 'h':
			fputs(ctl_ha_usage, stdout);
			return CTL_EXIT_OK;
		default:
			fputs(ctl_ha_usage, stderr);
			return CTL_EXIT_ERROR;
		}
	}
	if (optind != argc || json + check + (watch != NULL) > 1 ||
	    (timeout_ms >= 0 && !check && watch == NULL)) {
		fputs(ctl_ha_usage, stderr);
		return CTL_EXIT_ERROR;
	}
	if (check)
		return ctl_ha_check(o, timeout_ms >= 0 ? timeout_ms : CTL_HA_CHECK_MS);
	if (watch != NULL)
		return ctl_ha_watch_run(o->socket, watch,
		    timeout_ms >= 0 ? timeout_ms : CTL_HA_WATCH_BOUND_MS);
	if ((rc = ctl_ask_kv(o, kv, &r)) >= 0)
		return rc;
	if (json)
		puts(r.text);
	else
		ctl_ha_print(r.json);
	ctl_reply_free(&r);
	return CTL_EXIT_OK;
}

/*
 * namegatectl pending, approve and deny: the daemon holds the queries and decides; this
 * side parses options and shows replies.
 *
 *   pending [VM] [-f|--follow] [--json]   (follow: each new request once, as it comes)
 *   approve ID [--for DURATION] [--json]  (the daemon's default grant: 1h)
 *   deny ID [--json]
 */
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "ctl_cli.h"
#include "ctl_client.h"

#define CTL_PENDING_POLL_MS	250	/* --follow: between looks */

static volatile sig_atomic_t ctl_pending_stop;

static void
ctl_pending_on_signal(int sig)
{
	(void)sig;
	ctl_pending_stop = 1;
}

/* Print the requests of reply r with an id above *seen (all: seen 0); *seen moves up. */
static size_t
ctl_pending_print(const struct ctl_reply *r, bool json, bool header, int64_t *seen)
{
	struct json_object *list;
	size_t n, shown = 0;

	if (!json_object_object_get_ex(r->json, "pending", &list) ||
	    !json_object_is_type(list, json_type_array))
		return 0;
	n = json_object_array_length(list);
	for (size_t i = 0; i < n; i++) {
		struct json_object *q = json_object_array_get_idx(list, i);
		int64_t id = ctl_json_int(q, "id");

		if (id <= *seen)
			continue;
		*seen = id;
		if (json) {
			puts(json_object_to_json_string_ext(q, JSON_C_TO_STRING_PLAIN |
			    JSON_C_TO_STRING_NOSLASHESCAPE));
		} else {
			if (header && shown == 0)
				printf("%-6s %-16s %-40s %-6s %-21s %s\n", "ID", "VM", "NAME",
				    "TYPE", "FIRST SEEN (UTC)", "LEFT");
			printf("%-6" PRId64 " %-16s %-40s %-6s %-21s %" PRId64 "s\n", id,
			    ctl_json_str(q, "vm"), ctl_json_str(q, "name"),
			    ctl_json_str(q, "type_name"), ctl_json_str(q, "first_seen"),
			    ctl_json_int(q, "left"));
		}
		shown++;
	}
	fflush(stdout);
	return shown;
}

int
ctl_cmd_pending(const struct ctl_opts *o, int argc, char **argv)
{
	static const char usage[] = "pending [VM] [-f|--follow] [--json]";
	const struct timespec nap = { .tv_nsec = CTL_PENDING_POLL_MS * 1000000L };
	struct ctl_args a;
	struct ctl_reply r;
	int64_t seen = 0;
	int rc;

	if ((rc = ctl_args_parse(argc, argv, CTL_OPT_JSON | CTL_OPT_FOLLOW, 0, 1, usage,
	    &a)) >= 0)
		return rc;
	if (o->fleet != NULL && !a.follow)	/* a management host: the store's, all of them */
		return ctl_fleet_pending_store(o, a.pos[0], a.json);
	const char *kv[] = { "cmd", "pending", "vm", a.pos[0], NULL };

	if ((rc = ctl_ask_kv(o, kv, &r)) >= 0)
		return rc;
	if (!a.follow) {
		if (a.json)
			puts(r.text);
		else if (ctl_pending_print(&r, false, true, &seen) == 0)
			printf("nothing waits for approval%s%s\n", a.pos[0] != NULL ? " for " : "",
			    a.pos[0] != NULL ? a.pos[0] : "");
		ctl_reply_free(&r);
		if (!a.json)
			ctl_fleet_pending_print(o, a.pos[0]);
		return ferror(stdout) ? CTL_EXIT_ERROR : CTL_EXIT_OK;
	}
	signal(SIGINT, ctl_pending_on_signal);
	signal(SIGTERM, ctl_pending_on_signal);
	ctl_pending_print(&r, a.json, true, &seen);
	ctl_reply_free(&r);
	while (!ctl_pending_stop) {
		nanosleep(&nap, NULL);
		if ((rc = ctl_ask_kv(o, kv, &r)) >= 0)
			return rc;	/* the daemon went away: said on stderr */
		ctl_pending_print(&r, a.json, seen == 0, &seen);
		ctl_reply_free(&r);
	}
	return CTL_EXIT_OK;
}

/* approve and deny: one ID, the reply's request shown. */
static int
ctl_decide(const struct ctl_opts *o, int argc, char **argv, const char *cmd, unsigned int flags,
    const char *usage)
{
	struct json_object *q = NULL;
	struct ctl_args a;
	struct ctl_reply r;
	int rc;

	if ((rc = ctl_args_parse(argc, argv, CTL_OPT_JSON | flags, 1, 1, usage, &a)) >= 0)
		return rc;
	if (strchr(a.pos[0], '/') != NULL)	/* GATEWAY/ID: a request elsewhere in the fleet */
		return ctl_fleet_decide(o, &a, cmd);
	const char *kv[] = { "cmd", cmd, "id", a.pos[0], "for", a.dur, NULL };

	if ((rc = ctl_ask_kv(o, kv, &r)) >= 0)
		return rc;
	if (a.json) {
		puts(r.text);
	} else if (strcmp(cmd, "approve") == 0) {
		json_object_object_get_ex(r.json, "approved", &q);
		printf("request %" PRId64 " approved: %s may resolve and reach %s (grant %" PRId64
		    ")\n", ctl_json_int(q, "id"), ctl_json_str(q, "vm"), ctl_json_str(q, "name"),
		    ctl_json_int(r.json, "grant"));
	} else {
		json_object_object_get_ex(r.json, "denied", &q);
		printf("request %" PRId64 " denied: %s is told REFUSED for %s\n",
		    ctl_json_int(q, "id"), ctl_json_str(q, "vm"), ctl_json_str(q, "name"));
	}
	ctl_reply_free(&r);
	return CTL_EXIT_OK;
}

int
ctl_cmd_approve(const struct ctl_opts *o, int argc, char **argv)
{
	return ctl_decide(o, argc, argv, "approve", CTL_OPT_FOR, "approve ID [--for DURATION] "
	    "[--json]");
}

int
ctl_cmd_deny(const struct ctl_opts *o, int argc, char **argv)
{
	return ctl_decide(o, argc, argv, "deny", 0, "deny ID [--json]");
}

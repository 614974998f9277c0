/*
 * namegatectl grant, grants and revoke: the daemon checks everything (VM, pattern,
 * duration, reason) and says why it refuses; this side parses options and shows replies.
 *
 *   grant VM HOST[:PORT] --for DURATION [--reason TEXT] [--json]
 *   grants [VM] [--json]
 *   revoke ID [--json]
 */
#include <inttypes.h>
#include <stdio.h>

#include <json-c/json.h>

#include "ctl_cli.h"
#include "ctl_client.h"

const char *
ctl_json_str(struct json_object *g, const char *key)
{
	struct json_object *v;

	if (g == NULL || !json_object_object_get_ex(g, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return "?";
	return json_object_get_string(v);
}

int64_t
ctl_json_int(struct json_object *g, const char *key)
{
	struct json_object *v;

	if (g == NULL || !json_object_object_get_ex(g, key, &v) ||
	    !json_object_is_type(v, json_type_int))
		return 0;
	return json_object_get_int64(v);
}

/* "1h30m" for people; seconds as the daemon counts them. */
static void
ctl_grant_left(int64_t s, char *buf, size_t len)
{
	if (s >= 86400)
		snprintf(buf, len, "%" PRId64 "d%" PRId64 "h", s / 86400, s % 86400 / 3600);
	else if (s >= 3600)
		snprintf(buf, len, "%" PRId64 "h%" PRId64 "m", s / 3600, s % 3600 / 60);
	else if (s >= 60)
		snprintf(buf, len, "%" PRId64 "m%" PRId64 "s", s / 60, s % 60);
	else
		snprintf(buf, len, "%" PRId64 "s", s);
}

int
ctl_cmd_grant(const struct ctl_opts *o, int argc, char **argv)
{
	static const char usage[] = "grant VM HOST[:PORT] --for DURATION [--reason TEXT] [--json]";
	struct ctl_fleet_where w;
	struct ctl_args a;
	struct ctl_reply r;
	char left[32];
	int rc;

	if ((rc = ctl_args_parse(argc, argv, CTL_OPT_GRANT | CTL_OPT_JSON, 2, 2, usage, &a)) >= 0)
		return rc;
	/* a box in a fleet: the grant goes to the store, for every gateway of the VM */
	if ((rc = ctl_fleet_where_find(o, &w)) < 0) {
		rc = ctl_fleet_grant(&w, &a);
		ctl_fleet_where_free(&w);
		return rc;
	} else if (rc > 0) {
		return rc;
	}
	{
		const char *kv[] = { "cmd", "grant", "vm", a.pos[0], "host", a.pos[1],
			"for", a.dur, "reason", a.reason != NULL && *a.reason != '\0' ? a.reason : NULL,
			NULL };

		if ((rc = ctl_ask_kv(o, kv, &r)) >= 0)
			return rc;
	}
	if (a.json) {
		puts(r.text);
	} else {
		ctl_grant_left(ctl_json_int(r.json, "left"), left, sizeof(left));
		printf("grant %" PRId64 ": %s may reach %s until %s (%s)\n",
		    ctl_json_int(r.json, "id"), ctl_json_str(r.json, "vm"),
		    ctl_json_str(r.json, "host"), ctl_json_str(r.json, "until"), left);
	}
	ctl_reply_free(&r);
	return CTL_EXIT_OK;
}

int
ctl_cmd_grants(const struct ctl_opts *o, int argc, char **argv)
{
	static const char usage[] = "grants [VM] [--json]";
	struct json_object *list;
	struct ctl_args a;
	struct ctl_reply r;
	size_t n;
	int rc;

	if ((rc = ctl_args_parse(argc, argv, CTL_OPT_JSON, 0, 1, usage, &a)) >= 0)
		return rc;
	{
		const char *kv[] = { "cmd", "grants", "vm", a.pos[0], NULL };

		if ((rc = ctl_ask_kv(o, kv, &r)) >= 0)
			return rc;
	}
	if (a.json) {
		puts(r.text);
		ctl_reply_free(&r);
		return CTL_EXIT_OK;
	}
	if (!json_object_object_get_ex(r.json, "grants", &list) ||
	    !json_object_is_type(list, json_type_array) ||
	    (n = json_object_array_length(list)) == 0) {
		printf("no live grants%s%s\n", a.pos[0] != NULL ? " for " : "",
		    a.pos[0] != NULL ? a.pos[0] : "");
		ctl_reply_free(&r);
		return CTL_EXIT_OK;
	}
	printf("%-5s %-16s %-32s %-21s %-8s %-12s %s\n", "ID", "VM", "HOST", "UNTIL (UTC)",
	    "LEFT", "BY", "REASON");
	for (size_t i = 0; i < n; i++) {
		struct json_object *g = json_object_array_get_idx(list, i);
		char left[32], by[96];

		ctl_grant_left(ctl_json_int(g, "left"), left, sizeof(left));
		/* a grant from before makers were recorded has none */
		if (json_object_object_get_ex(g, "uid", NULL))
			snprintf(by, sizeof(by), "%s", ctl_json_str(g, "user"));
		else
			snprintf(by, sizeof(by), "-");
		printf("%-5" PRId64 " %-16s %-32s %-21s %-8s %-12s %s\n", ctl_json_int(g, "id"),
		    ctl_json_str(g, "vm"), ctl_json_str(g, "host"), ctl_json_str(g, "until"),
		    left, by, ctl_json_str(g, "reason"));
	}
	ctl_reply_free(&r);
	return ferror(stdout) ? CTL_EXIT_ERROR : CTL_EXIT_OK;
}

int
ctl_cmd_revoke(const struct ctl_opts *o, int argc, char **argv)
{
	static const char usage[] = "revoke ID [--json]";
	struct json_object *g = NULL;
	struct ctl_args a;
	struct ctl_reply r;
	int rc;

	if ((rc = ctl_args_parse(argc, argv, CTL_OPT_JSON, 1, 1, usage, &a)) >= 0)
		return rc;
	if (o->fleet != NULL) {		/* a management host: straight to the store */
		struct ctl_fleet_where w;

		if ((rc = ctl_fleet_where_find(o, &w)) >= 0)
			return CTL_EXIT_ERROR;
		rc = ctl_fleet_revoke(&w, a.pos[0]);
		ctl_fleet_where_free(&w);
		return rc;
	}
	{
		const char *kv[] = { "cmd", "revoke", "id", a.pos[0], NULL };

		if ((rc = ctl_ask_kv(o, kv, &r)) >= 0)
			return rc;
	}
	if (a.json) {
		puts(r.text);
	} else {
		json_object_object_get_ex(r.json, "revoked", &g);
		printf("grant %" PRId64 " revoked: %s may no longer reach %s\n",
		    ctl_json_int(g, "id"), ctl_json_str(g, "vm"), ctl_json_str(g, "host"));
	}
	ctl_reply_free(&r);
	return CTL_EXIT_OK;
}

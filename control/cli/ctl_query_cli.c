/*
 * namegatectl events, flows and bindings: history read from the logs (ctl_logq.c) through
 * the filters of ctl_filter.h, and live state asked of the daemon. flows VM is the VM's
 * open flows (ctl_show.c); flows without a VM is the flow log. bindings without a VM asks
 * the daemon for each VM's in turn (it lists one VM's at a time) and filters here. vms
 * lists the VMs (-c FILE's, else the daemon's) for the shell's completion.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "ctl_cli.h"
#include "ctl_client.h"
#include "ctl_filter.h"
#include "ctl_logq.h"
#include "ctl_tab.h"
#include "policy/load.h"

static volatile sig_atomic_t ctl_query_stop;

static void
ctl_query_sig(int sig)
{
	(void)sig;
	ctl_query_stop = 1;
}

/* No SA_RESTART: ^C must end the follower's nap, which then sees the flag. */
static void
ctl_query_signals(void)
{
	struct sigaction sa = { .sa_handler = ctl_query_sig };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/*
 * The log's path: given, else the status reply's member key. Returns -1 with *path (and
 * *r to free), or the exit status after saying why (none is configured: what).
 */
static int
ctl_log_path(const struct ctl_opts *o, const char *given, const char *key, const char *cmd,
    const char *what, struct ctl_reply *r, const char **path)
{
	const char *kv[] = { "cmd", "status", NULL };
	int rc;

	memset(r, 0, sizeof(*r));
	if ((*path = given) != NULL)
		return -1;
	if ((rc = ctl_ask_kv(o, kv, r)) >= 0)
		return rc;
	*path = ctl_jstr(r->json, key, "");
	if (**path == '\0') {
		fprintf(stderr, "namegatectl: %s: %s\n", cmd, what);
		ctl_reply_free(r);
		return CTL_EXIT_ERROR;
	}
	return -1;
}

static int
ctl_query_filter(const struct ctl_args *a, const char *const *keys, const char *cmd,
    struct ctl_filter *f)
{
	struct timespec now;
	char why[256];

	clock_gettime(CLOCK_REALTIME, &now);
	if (ctl_filter_init(f, a, keys, (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000, why,
	    sizeof(why)) == 0)
		return -1;
	fprintf(stderr, "namegatectl: %s: %s\n", cmd, why);
	return CTL_EXIT_ERROR;
}

/* Runs the query; says what went wrong and what was skipped; the exit status. */
static int
ctl_query_run(const char *cmd, const char *path, const struct ctl_filter *f, bool follow,
    const struct ctl_logq_out *out)
{
	size_t bad = 0;
	int rc;

	/* history alone: ^C ends the process as usual; a follower ends cleanly, counts said */
	if (follow)
		ctl_query_signals();
	rc = ctl_logq_run(path, f, follow, out, &ctl_query_stop, &bad);
	fflush(stdout);
	if (bad > 0)
		fprintf(stderr, "namegatectl: %s: skipped %zu malformed line%s (not a JSON object "
		    "with an RFC 3339 \"ts\")\n", cmd, bad, bad == 1 ? "" : "s");
	if (rc < 0) {
		fprintf(stderr, "namegatectl: %s: %s: %s\n", cmd, path, strerror(-rc));
		return CTL_EXIT_ERROR;
	}
	return CTL_EXIT_OK;
}

/* A line as it is in the log. */
static void
ctl_emit_raw(void *arg, const char *line, size_t len, struct json_object *o)
{
	(void)arg;
	(void)o;
	fwrite(line, 1, len, stdout);
	putchar('\n');
}

static void
ctl_flush_stdout(void *arg)
{
	(void)arg;
	fflush(stdout);
}

int
ctl_cmd_events(const struct ctl_opts *o, int argc, char **argv)
{
	static const char usage[] = "events [--vm VM] [--reason R] [--name PATTERN] "
	    "[--since T] [--last N] [-f|--follow] [-e PATH]";
	static const char *const keys[] = { "name", NULL };
	const struct ctl_logq_out out = { ctl_emit_raw, ctl_flush_stdout, NULL };
	struct ctl_filter f;
	struct ctl_reply r;
	const char *path;
	struct ctl_args a;
	int rc;

	if ((rc = ctl_args_parse(argc, argv, CTL_OPT_EVENTS | CTL_OPT_FILTER, 0, 0, usage,
	    &a)) >= 0 || (rc = ctl_query_filter(&a, keys, "events", &f)) >= 0)
		return rc;
	/* -e reads the file without the daemon: the log outlives it. */
	if ((rc = ctl_log_path(o, a.events, "events", "events", "namegate writes no event log "
	    "(no \"events\" in its configuration)", &r, &path)) >= 0)
		return rc;
	rc = ctl_query_run("events", path, &f, a.follow, &out);
	ctl_reply_free(&r);
	return rc;
}

/* Flow records as a table; a batch at a time, so --follow lines up with the history. */
struct ctl_flow_out {
	struct ctl_tab t;
	bool json;
};

/* "allowed/fin", "allowed/open" (an interim record), "blocked/sni_denied". */
static void
ctl_flow_verdict(struct ctl_tab *t, size_t col, struct json_object *f)
{
	const char *verdict = ctl_jstr(f, "verdict", "-");
	struct json_object *fin = ctl_jget(f, "final");

	if (strcmp(verdict, "blocked") == 0)
		ctl_tab_set(t, col, "%s/%s", verdict, ctl_jstr(f, "reason", "-"));
	else if (fin != NULL && json_object_is_type(fin, json_type_boolean) &&
	    !json_object_get_boolean(fin))
		ctl_tab_set(t, col, "%s/open", verdict);
	else
		ctl_tab_set(t, col, "%s/%s", verdict, ctl_jstr(f, "end", "-"));
}

static void
ctl_emit_flow(void *arg, const char *line, size_t len, struct json_object *f)
{
	struct ctl_flow_out *fo = arg;
	struct ctl_tab *t = &fo->t;
	const char *name;

	if (fo->json) {
		ctl_emit_raw(NULL, line, len, f);
		return;
	}
	/* the name judged by, else the SNI or Host seen */
	name = ctl_jstr(f, "name", ctl_jstr(f, "sni", ctl_jstr(f, "host", "-")));
	ctl_tab_row(t);
	ctl_tab_set(t, 0, "%s", ctl_jstr(f, "ts", "-"));
	ctl_tab_set(t, 1, "%s", ctl_jstr(f, "vm", "-"));
	ctl_tab_set(t, 2, "%s", ctl_jstr(f, "proto", "-"));
	ctl_tab_set(t, 3, "%s", ctl_jstr(f, "src", "-"));
	ctl_tab_set(t, 4, "->");
	ctl_tab_set(t, 5, "%s", ctl_jstr(f, "dst", "-"));
	ctl_tab_set(t, 6, "%s", name);
	ctl_flow_verdict(t, 7, f);
	ctl_tab_set(t, 8, "%" PRIu64 "/%" PRIu64, ctl_ju64(f, "bytes_out"),
	    ctl_ju64(f, "bytes_in"));
}

static void
ctl_flush_flows(void *arg)
{
	struct ctl_flow_out *fo = arg;

	if (!fo->json && fo->t.nrows > 0 && !ctl_tab_flush(&fo->t, stdout))
		fputs("namegatectl: flows: out of memory; records left out\n", stderr);
	fflush(stdout);
}

int
ctl_cmd_flows(const struct ctl_opts *o, int argc, char **argv)
{
	static const char usage[] = "flows VM [--json] | flows [--vm VM] [--reason R] "
	    "[--name PATTERN] [--since T] [--last N] [-f|--follow] [--flow-log PATH] [--json]";
	static const char *const keys[] = { "name", "sni", "host", NULL };
	static const char *const head[] = { "TIME", "VM", "PROTO", "SOURCE", "", "DESTINATION",
	    "NAME", "VERDICT", "BYTES(out/in)" };
	struct ctl_flow_out fo = { .t = { .ncols = 9, .head = head, .align = "lllrlllll" } };
	const struct ctl_logq_out out = { ctl_emit_flow, ctl_flush_flows, &fo };
	struct ctl_filter f;
	struct ctl_reply r;
	const char *path;
	struct ctl_args a;
	int rc;

	if ((rc = ctl_args_parse(argc, argv, CTL_OPT_JSON | CTL_OPT_FOLLOW | CTL_OPT_FILTER |
	    CTL_OPT_FLOWLOG, 0, 1, usage, &a)) >= 0)
		return rc;
	if (a.npos == 1) {
		/* the live form keeps its one option */
		if (a.follow || a.vm != NULL || a.reason != NULL || a.name != NULL ||
		    a.since != NULL || a.last != NULL || a.flow_log != NULL) {
			fprintf(stderr, "usage: namegatectl %s\n", usage);
			return CTL_EXIT_ERROR;
		}
		return ctl_flows_live(o, &a);
	}
	if ((rc = ctl_query_filter(&a, keys, "flows", &f)) >= 0 ||
	    (rc = ctl_log_path(o, a.flow_log, "flow_log", "flows", "no flow log is configured "
	    "(no \"flow_log\" in namegate's configuration; or give --flow-log PATH)", &r,
	    &path)) >= 0)
		return rc;
	fo.json = a.json;
	rc = ctl_query_run("flows", path, &f, a.follow, &out);
	ctl_tab_free(&fo.t);
	ctl_reply_free(&r);
	return rc;
}

/* By VM, name, then address. */
static int
ctl_binding_cmp(const void *a, const void *b)
{
	struct json_object *x = *(struct json_object *const *)a;
	struct json_object *y = *(struct json_object *const *)b;
	int c = strcmp(ctl_jstr(x, "vm", ""), ctl_jstr(y, "vm", ""));

	if (c == 0)
		c = strcmp(ctl_jstr(x, "name", ""), ctl_jstr(y, "name", ""));
	return c != 0 ? c : strcmp(ctl_jstr(x, "addr", ""), ctl_jstr(y, "addr", ""));
}

/* "443,80", "any", or "-" when the daemon does not say. */
static void
ctl_binding_ports(struct ctl_tab *t, size_t col, struct json_object *b)
{
	struct json_object *p = ctl_jget(b, "ports");
	char buf[128] = "-";
	size_t off = 0;

	if (p != NULL && json_object_is_type(p, json_type_string)) {
		snprintf(buf, sizeof(buf), "%s", json_object_get_string(p));
	} else if (p != NULL && json_object_is_type(p, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(p) && off < sizeof(buf); i++) {
			struct json_object *port = json_object_array_get_idx(p, i);
			int n = snprintf(buf + off, sizeof(buf) - off, "%s%" PRId64,
			    i > 0 ? "," : "", json_object_get_int64(port));

			if (n < 0)
				break;
			off += (size_t)n;
		}
	}
	ctl_tab_set(t, col, "%s", buf);
}

/*
 * Adds vm's bindings that pass f to all, each with its "vm". Returns -1, or the exit
 * status after saying why; a VM gone since the list was made (skip_gone) is passed over.
 */
static int
ctl_bindings_of(const struct ctl_opts *o, const char *vm, const struct ctl_filter *f,
    bool skip_gone, struct json_object *all)
{
	const char *kv[] = { "cmd", "bindings", "vm", vm, NULL };
	struct json_object *list;
	struct ctl_reply r;
	char err[512];
	int rc = -1;

	if (ctl_client_request(o->socket, kv, 0, &r, err, sizeof(err)) < 0) {
		fprintf(stderr, "namegatectl: %s\n", err);
		return CTL_EXIT_ERROR;
	}
	if (r.error != NULL) {
		if (!skip_gone) {
			fprintf(stderr, "namegatectl: bindings: %s\n", r.error);
			rc = CTL_EXIT_ERROR;
		}
		ctl_reply_free(&r);
		return rc;
	}
	list = ctl_jarr(r.json, "bindings");
	for (size_t i = 0; list != NULL && i < json_object_array_length(list); i++) {
		struct json_object *b = json_object_array_get_idx(list, i);
		struct json_object *n = ctl_jget(b, "name");

		if (!json_object_is_type(b, json_type_object) || (f->has_name && (n == NULL ||
		    !json_object_is_type(n, json_type_string) || !ctl_filter_name(f,
		    json_object_get_string(n), (size_t)json_object_get_string_len(n)))))
			continue;
		if (json_object_object_add(b, "vm", json_object_new_string(vm)) < 0 ||
		    json_object_array_add(all, json_object_get(b)) < 0) {
			rc = CTL_EXIT_ERROR;
			fputs("namegatectl: out of memory\n", stderr);
			break;
		}
	}
	ctl_reply_free(&r);
	return rc;
}

/* Every VM's bindings that pass f, into all. */
static int
ctl_bindings_all(const struct ctl_opts *o, const struct ctl_filter *f, struct json_object *all)
{
	const char *kv[] = { "cmd", "stats", NULL };
	struct json_object *vms;
	struct ctl_reply r;
	int rc;

	if ((rc = ctl_ask_kv(o, kv, &r)) >= 0)
		return rc;
	vms = ctl_jarr(r.json, "vms");
	rc = -1;
	for (size_t i = 0; rc < 0 && vms != NULL && i < json_object_array_length(vms); i++) {
		const char *vm = ctl_jstr(json_object_array_get_idx(vms, i), "vm", NULL);

		if (vm != NULL)
			rc = ctl_bindings_of(o, vm, f, true, all);
	}
	ctl_reply_free(&r);
	return rc;
}

static int
ctl_bindings_print(const struct ctl_args *a, struct json_object *all)
{
	static const char *const head[] = { "VM", "NAME", "ADDRESS", "TTL(s)", "PORTS" };
	bool one = a->npos == 1;
	/* one VM's: as before, without its VM column */
	struct ctl_tab t = { .ncols = one ? 4 : 5, .head = one ? head + 1 : head,
	    .align = one ? "llrl" : "lllrl" };
	size_t n = json_object_array_length(all);

	if (n == 0) {
		printf("%s%s%s\n", one ? a->pos[0] : "", one ? " has no bindings" : "no bindings",
		    a->name != NULL ? " matching the name" : "");
		return CTL_EXIT_OK;
	}
	json_object_array_sort(all, ctl_binding_cmp);
	for (size_t i = 0; i < n; i++) {
		struct json_object *b = json_object_array_get_idx(all, i);
		size_t c = 0;

		ctl_tab_row(&t);
		if (!one)
			ctl_tab_set(&t, c++, "%s", ctl_jstr(b, "vm", "?"));
		ctl_tab_set(&t, c++, "%s", ctl_jstr(b, "name", "?"));
		ctl_tab_set(&t, c++, "%s", ctl_jstr(b, "addr", "?"));
		ctl_tab_set(&t, c++, "%" PRIu64, ctl_ju64(b, "ttl"));
		ctl_binding_ports(&t, c, b);
	}
	return ctl_tab_finish(&t);
}

int
ctl_cmd_bindings(const struct ctl_opts *o, int argc, char **argv)
{
	static const char usage[] = "bindings [VM] [--name PATTERN] [--json]";
	static const char *const keys[] = { "name", NULL };
	struct json_object *all, *doc;
	struct ctl_filter f;
	struct ctl_args a;
	int rc;

	if ((rc = ctl_args_parse(argc, argv, CTL_OPT_JSON | CTL_OPT_FILTER, 0, 1, usage,
	    &a)) >= 0)
		return rc;
	if (a.vm != NULL || a.reason != NULL || a.since != NULL || a.last != NULL) {
		fprintf(stderr, "usage: namegatectl %s\n", usage);
		return CTL_EXIT_ERROR;
	}
	if ((rc = ctl_query_filter(&a, keys, "bindings", &f)) >= 0)
		return rc;
	if ((doc = json_object_new_object()) == NULL || (all = json_object_new_array()) == NULL ||
	    json_object_object_add(doc, "bindings", all) < 0) {
		json_object_put(doc);
		fputs("namegatectl: out of memory\n", stderr);
		return CTL_EXIT_ERROR;
	}
	rc = a.npos == 1 ? ctl_bindings_of(o, a.pos[0], &f, false, all) :
	    ctl_bindings_all(o, &f, all);
	if (rc < 0 && a.json)
		puts(json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN |
		    JSON_C_TO_STRING_NOSLASHESCAPE));
	else if (rc < 0)
		rc = ctl_bindings_print(&a, all);
	json_object_put(doc);
	return rc < 0 ? CTL_EXIT_OK : rc;
}

int
ctl_cmd_vms(const struct ctl_opts *o, int argc, char **argv)
{
	static const char usage[] = "vms";
	const char *kv[] = { "cmd", "stats", NULL };
	struct pol_config *cfg;
	struct json_object *vms;
	struct ctl_reply r;
	struct ctl_args a;
	int rc;

	if ((rc = ctl_args_parse(argc, argv, 0, 0, 0, usage, &a)) >= 0)
		return rc;
	if (o->config != NULL) {
		if ((cfg = ctl_config_load(o->config)) == NULL)
			return CTL_EXIT_ERROR;
		for (size_t i = 0; i < cfg->nvms; i++)
			puts(cfg->vms[i].name);
		pol_config_free(cfg);
		return CTL_EXIT_OK;
	}
	if ((rc = ctl_ask_kv(o, kv, &r)) >= 0)
		return rc;
	vms = ctl_jarr(r.json, "vms");
	for (size_t i = 0; vms != NULL && i < json_object_array_length(vms); i++)
		puts(ctl_jstr(json_object_array_get_idx(vms, i), "vm", "?"));
	ctl_reply_free(&r);
	return CTL_EXIT_OK;
}

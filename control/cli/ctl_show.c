/*
 * namegatectl commands answered by the daemon: each asks over the control socket
 * (ctl_client.c) and turns the JSON of ctl_sock.h into text for people, or prints it as is
 * with --json. Output goes to stdout only on success; every failure is one message on
 * stderr and a non-zero exit. Keys the daemon adds later are ignored; missing ones print
 * as 0 or "-", so an older daemon still gets a readable table.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "ctl_cli.h"
#include "ctl_client.h"
#include "ctl_tab.h"

#define CTL_TOP_REASONS	3	/* block reasons shown per VM in the stats table */

/*
 * Asks the daemon. Returns -1 with a successful reply in *r (free it), or the exit status
 * after saying why on stderr: the daemon is unreachable, or it answered with an error.
 */
int
ctl_ask_kv(const struct ctl_opts *o, const char *const *kv, struct ctl_reply *r)
{
	char err[512];

	if (ctl_client_request(o->socket, kv, 0, r, err, sizeof(err)) < 0) {
		fprintf(stderr, "namegatectl: %s\n", err);
		return CTL_EXIT_ERROR;
	}
	if (r->error != NULL) {
		fprintf(stderr, "namegatectl: %s: %s\n", kv[1], r->error);
		ctl_reply_free(r);
		return CTL_EXIT_ERROR;
	}
	return -1;
}

static int
ctl_ask(const struct ctl_opts *o, const char *cmd, const char *vm, const char *host,
    struct ctl_reply *r)
{
	const char *kv[] = { "cmd", cmd, "vm", vm, "host", host, NULL };

	return ctl_ask_kv(o, kv, r);
}

/* Seconds as "1d2h3m4s", leading zero units left out. */
static void
ctl_duration(char *buf, size_t len, uint64_t s)
{
	uint64_t d = s / 86400, h = s / 3600 % 24, m = s / 60 % 60;
	int n = 0;

	buf[0] = '\0';
	if (d > 0)
		n = snprintf(buf, len, "%" PRIu64 "d%" PRIu64 "h%" PRIu64 "m", d, h, m);
	else if (h > 0)
		n = snprintf(buf, len, "%" PRIu64 "h%" PRIu64 "m", h, m);
	else if (m > 0)
		n = snprintf(buf, len, "%" PRIu64 "m", m);
	if (n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, "%" PRIu64 "s", s % 60);
}

int
ctl_cmd_status(const struct ctl_opts *o, int argc, char **argv)
{
	static const char usage[] = "status [--json]";
	struct json_object *ports;
	struct ctl_reply r;
	struct ctl_args a;
	char up[64];
	int rc;

	if ((rc = ctl_args_parse(argc, argv, CTL_OPT_JSON, 0, 0, usage, &a)) >= 0 ||
	    (rc = ctl_ask(o, "status", NULL, NULL, &r)) >= 0)
		return rc;
	if (a.json) {
		puts(r.text);
		ctl_reply_free(&r);
		return CTL_EXIT_OK;
	}
	ports = ctl_jget(r.json, "ports");
	ctl_duration(up, sizeof(up), ctl_ju64(r.json, "uptime"));
	printf("namegate %s, pid %" PRIu64 ", up %s\n", ctl_jstr(r.json, "version", "?"),
	    ctl_ju64(r.json, "pid"), up);
	printf("%-12s %s (generation %" PRIu64 ")\n", "config", ctl_jstr(r.json, "config", "-"),
	    ctl_ju64(r.json, "generation"));
	printf("%-12s %" PRIu64 "\n", "vms", ctl_ju64(r.json, "vms"));
	printf("%-12s %" PRIu64 "\n", "workers", ctl_ju64(r.json, "workers"));
	printf("%-12s %s\n", "vm port", ctl_jstr(ports, "vm", "-"));
	printf("%-12s %s\n", "uplink port", ctl_jstr(ports, "uplink", "-"));
	printf("%-12s %s\n", "metrics", ctl_jstr(r.json, "metrics", "-"));
	printf("%-12s %s\n", "events", *ctl_jstr(r.json, "events", "") != '\0' ?
	    ctl_jstr(r.json, "events", "") : "none");
	ctl_reply_free(&r);
	return CTL_EXIT_OK;
}

struct ctl_reason {
	const char *name;
	uint64_t n;
};

/* "sni_denied=12,no_binding=3": the largest counts first, ties by name; "-" for none. */
static void
ctl_stats_reasons(struct ctl_tab *t, size_t col, struct json_object *blocked)
{
	struct ctl_reason top[CTL_TOP_REASONS];
	char buf[256] = "-";
	size_t ntop = 0, off = 0;

	if (blocked != NULL && json_object_is_type(blocked, json_type_object)) {
		json_object_object_foreach(blocked, key, val) {
			uint64_t n = json_object_is_type(val, json_type_int) ?
			    json_object_get_uint64(val) : 0;
			size_t k;

			if (n == 0)
				continue;
			for (k = ntop; k > 0; k--) {
				if (top[k - 1].n > n ||
				    (top[k - 1].n == n && strcmp(top[k - 1].name, key) < 0))
					break;
				if (k < CTL_TOP_REASONS)
					top[k] = top[k - 1];
			}
			if (k < CTL_TOP_REASONS)
				top[k] = (struct ctl_reason){ .name = key, .n = n };
			if (ntop < CTL_TOP_REASONS)
				ntop++;
		}
	}
	for (size_t i = 0; i < ntop && off < sizeof(buf); i++) {
		int n = snprintf(buf + off, sizeof(buf) - off, "%s%s=%" PRIu64, i > 0 ? "," : "",
		    top[i].name, top[i].n);

		if (n < 0)
			break;
		off += (size_t)n;
	}
	ctl_tab_set(t, col, "%s", buf);
}

static void
ctl_stats_pb(struct ctl_tab *t, size_t col, struct json_object *pb)
{
	ctl_tab_set(t, col, "%" PRIu64 "/%" PRIu64, ctl_ju64(pb, "packets"), ctl_ju64(pb, "bytes"));
}

int
ctl_cmd_stats(const struct ctl_opts *o, int argc, char **argv)
{
	static const char usage[] = "stats [VM] [--json]";
	static const char *const head[] = { "VM", "MODE", "ALLOWED", "BLOCKED", "WOULD_BLOCK",
	    "DNS_OK", "DNS_BLOCKED", "BINDINGS", "FLOWS", "TOP_BLOCK_REASONS" };
	struct ctl_tab t = { .ncols = 10, .head = head, .align = "llrrrrrrrl" };
	struct json_object *vms, *ports;
	struct ctl_reply r;
	struct ctl_args a;
	int rc;

	if ((rc = ctl_args_parse(argc, argv, CTL_OPT_JSON, 0, 1, usage, &a)) >= 0 ||
	    (rc = ctl_ask(o, "stats", a.npos > 0 ? a.pos[0] : NULL, NULL, &r)) >= 0)
		return rc;
	if (a.json) {
		puts(r.text);
		ctl_reply_free(&r);
		return CTL_EXIT_OK;
	}
	if ((vms = ctl_jarr(r.json, "vms")) == NULL || json_object_array_length(vms) == 0) {
		puts("no VMs");
		ctl_reply_free(&r);
		return CTL_EXIT_OK;
	}
	for (size_t i = 0; i < json_object_array_length(vms); i++) {
		struct json_object *vm = json_object_array_get_idx(vms, i);
		struct json_object *eg = ctl_jget(vm, "egress"), *dns = ctl_jget(vm, "dns");

		ctl_tab_row(&t);
		ctl_tab_set(&t, 0, "%s", ctl_jstr(vm, "vm", "?"));
		ctl_tab_set(&t, 1, "%s", ctl_jstr(vm, "mode", "-"));
		ctl_stats_pb(&t, 2, ctl_jget(eg, "allowed"));
		ctl_stats_pb(&t, 3, ctl_jget(eg, "blocked"));
		ctl_stats_pb(&t, 4, ctl_jget(eg, "would_block"));
		ctl_tab_set(&t, 5, "%" PRIu64, ctl_ju64(dns, "allowed"));
		ctl_tab_set(&t, 6, "%" PRIu64, ctl_ju64(dns, "blocked"));
		ctl_tab_set(&t, 7, "%" PRIu64, ctl_ju64(vm, "bindings"));
		ctl_tab_set(&t, 8, "%" PRIu64, ctl_ju64(vm, "flows"));
		ctl_stats_reasons(&t, 9, ctl_jget(vm, "blocked"));
	}
	if ((rc = ctl_tab_finish(&t)) == CTL_EXIT_OK) {
		puts("(egress packets/bytes; DNS in queries)");
		if ((ports = ctl_jget(r.json, "ports")) != NULL &&
		    json_object_is_type(ports, json_type_object)) {
			const char *sep = "ports:";

			json_object_object_foreach(ports, name, p) {
				printf("%s %s rx %" PRIu64 " tx %" PRIu64, sep, name,
				    ctl_ju64(p, "rx"), ctl_ju64(p, "tx"));
				sep = ",";
			}
			putchar('\n');
		}
		if (ctl_jget(r.json, "generation") != NULL)
			printf("policy generation %" PRIu64 "\n", ctl_ju64(r.json, "generation"));
	}
	ctl_reply_free(&r);
	return rc;
}

int
ctl_flows_live(const struct ctl_opts *o, const struct ctl_args *a)
{
	static const char *const head[] = { "PROTO", "PEER", "VM_PORT", "STATE", "AGE(s)",
	    "VERDICT" };
	struct ctl_tab t = { .ncols = 6, .head = head, .align = "llrlrl" };
	struct json_object *list;
	struct ctl_reply r;
	int rc;

	if ((rc = ctl_ask(o, "flows", a->pos[0], NULL, &r)) >= 0)
		return rc;
	if (a->json) {
		puts(r.text);
		ctl_reply_free(&r);
		return CTL_EXIT_OK;
	}
	if ((list = ctl_jarr(r.json, "flows")) == NULL || json_object_array_length(list) == 0) {
		printf("%s has no flows\n", a->pos[0]);
		ctl_reply_free(&r);
		return CTL_EXIT_OK;
	}
	for (size_t i = 0; i < json_object_array_length(list); i++) {
		struct json_object *f = json_object_array_get_idx(list, i);

		ctl_tab_row(&t);
		ctl_tab_set(&t, 0, "%s", ctl_jstr(f, "proto", "?"));
		ctl_tab_set(&t, 1, "%s", ctl_jstr(f, "peer", "?"));
		ctl_tab_set(&t, 2, "%" PRIu64, ctl_ju64(f, "vm_port"));
		ctl_tab_set(&t, 3, "%s", ctl_jstr(f, "state", "-"));
		ctl_tab_set(&t, 4, "%" PRIu64, ctl_ju64(f, "age"));
		ctl_tab_set(&t, 5, "%s", ctl_jstr(f, "verdict", "-"));
	}
	rc = ctl_tab_finish(&t);
	ctl_reply_free(&r);
	return rc;
}

int
ctl_cmd_reload(const struct ctl_opts *o, int argc, char **argv)
{
	static const char usage[] = "reload [--json]";
	struct json_object *warnings;
	char err[512];
	struct ctl_reply r;
	struct ctl_args a;
	int rc;

	if ((rc = ctl_args_parse(argc, argv, CTL_OPT_JSON, 0, 0, usage, &a)) >= 0)
		return rc;
	if (ctl_client_call(o->socket, "reload", NULL, NULL, 0, &r, err, sizeof(err)) < 0) {
		fprintf(stderr, "namegatectl: %s\n", err);
		return CTL_EXIT_ERROR;
	}
	/* The daemon's text first (file:line:col lines, like namegate --check), then ours. */
	if (r.error != NULL) {
		fprintf(stderr, "%s\nnamegatectl: reload rejected; namegate keeps the running "
		    "policy\n", r.error);
		ctl_reply_free(&r);
		return CTL_EXIT_REJECTED;
	}
	if (a.json) {
		puts(r.text);
	} else {
		if ((warnings = ctl_jarr(r.json, "warnings")) != NULL)
			for (size_t i = 0; i < json_object_array_length(warnings); i++)
				fprintf(stderr, "%s\n",
				    json_object_get_string(json_object_array_get_idx(warnings, i)));
		printf("reloaded: policy generation %" PRIu64 "\n", ctl_ju64(r.json, "generation"));
	}
	ctl_reply_free(&r);
	return CTL_EXIT_OK;
}

int
ctl_cmd_reopen(const struct ctl_opts *o, int argc, char **argv)
{
	static const char usage[] = "reopen";
	char err[512];
	struct ctl_reply r;
	struct ctl_args a;
	int rc;

	if ((rc = ctl_args_parse(argc, argv, 0, 0, 0, usage, &a)) >= 0)
		return rc;
	if (ctl_client_call(o->socket, "reopen", NULL, NULL, 0, &r, err, sizeof(err)) < 0) {
		fprintf(stderr, "namegatectl: %s\n", err);
		return CTL_EXIT_ERROR;
	}
	rc = r.error != NULL ? CTL_EXIT_ERROR : CTL_EXIT_OK;
	if (r.error != NULL)
		fprintf(stderr, "namegatectl: reopen: %s\n", r.error);
	ctl_reply_free(&r);
	return rc;
}

/* A host pattern as a YAML scalar: plain when that is unambiguous, else double-quoted. */
static void
ctl_yaml_scalar(const char *s, FILE *out)
{
	bool plain = *s != '\0' && strchr("-.", *s) == NULL;

	for (const char *p = s; plain && *p != '\0'; p++)
		plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || *p == '.' || *p == '-' || *p == '_';
	if (plain) {
		fputs(s, out);
		return;
	}
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(out, "\\x%02x", *p);
		else
			fputc(*p, out);
	}
	fputc('"', out);
}

int
ctl_cmd_suggest(const struct ctl_opts *o, int argc, char **argv)
{
	static const char usage[] = "suggest VM [--json]";
	struct json_object *allow;
	const char *policy;
	struct ctl_reply r;
	struct ctl_args a;
	size_t n;
	int rc;

	if ((rc = ctl_args_parse(argc, argv, CTL_OPT_JSON, 1, 1, usage, &a)) >= 0 ||
	    (rc = ctl_ask(o, "suggest", a.pos[0], NULL, &r)) >= 0)
		return rc;
	if (a.json) {
		puts(r.text);
		ctl_reply_free(&r);
		return CTL_EXIT_OK;
	}
	allow = ctl_jarr(r.json, "allow");
	n = allow != NULL ? json_object_array_length(allow) : 0;
	policy = ctl_jstr(r.json, "policy", a.pos[0]);
	/* A block for the configuration's policies: map, as SPEC s3 writes one. */
	if (n == 0)
		printf("# namegatectl suggest %s: nothing refused so far\n", a.pos[0]);
	else
		printf("# namegatectl suggest %s: %zu host%s it was refused; review before use\n",
		    a.pos[0], n, n == 1 ? "" : "s");
	fputs("policies:\n  ", stdout);
	ctl_yaml_scalar(policy, stdout);
	fputs(":\n", stdout);
	if (n == 0)
		fputs("    allow: []\n", stdout);
	else
		fputs("    allow:\n", stdout);
	for (size_t i = 0; i < n; i++) {
		struct json_object *h = json_object_array_get_idx(allow, i);

		if (!json_object_is_type(h, json_type_string))
			continue;
		fputs("      - ", stdout);
		ctl_yaml_scalar(json_object_get_string(h), stdout);
		fputc('\n', stdout);
	}
	ctl_reply_free(&r);
	return CTL_EXIT_OK;
}

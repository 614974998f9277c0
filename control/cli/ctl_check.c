/*
 * namegatectl check [-c FILE] [--json] VM HOST[:PORT]. With -c the decision is computed
 * offline from the file, by the same loader and matcher the daemon runs, so it predicts
 * what the dataplane does; without, the daemon answers from its running generation, with
 * the same line and exit status.
 *
 * --json is made from that line (pol_explain()'s, which both forms print), so the online
 * and offline forms agree; ctl_check_parse() reads it back into the rule and the reason.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "ctl_cli.h"
#include "ctl_client.h"
#include "ctl_tab.h"
#include "policy/load.h"

#define CTL_CHECK_USAGE	"usage: namegatectl check [-c FILE] [--json] VM HOST[:PORT]"

static bool
ctl_add(struct json_object *o, const char *key, struct json_object *v)
{
	return v != NULL && json_object_object_add(o, key, v) == 0;
}

static struct json_object *
ctl_strn(const char *s, size_t n)
{
	return json_object_new_string_len(s, (int)n);
}

/*
 * rest is what follows "VERDICT HOST for VM": ': KEY[I] "PATTERN" (FILE:LINE)...',
 * ': policies.P.import KEY[I] "PATTERN" (FILE:LINE)...', ' by grant N until ...', or
 * ": no pattern of policy 'P' matches (default deny)...". Sets "reason", "rule" (null for
 * none) and, for the default, "policy"; false when rest is none of them.
 */
static bool
ctl_check_rule(struct json_object *o, const char *verdict, const char *rest)
{
	static const char nomatch[] = ": no pattern of policy '";
	const char *p, *q, *pat, *file, *colon;
	struct json_object *rule;
	char *end;
	long idx, line;

	if (strncmp(rest, nomatch, sizeof(nomatch) - 1) == 0) {
		p = rest + sizeof(nomatch) - 1;
		if ((q = strchr(p, '\'')) == NULL)
			return false;
		return ctl_add(o, "reason", json_object_new_string("default_deny")) &&
		    ctl_add(o, "policy", ctl_strn(p, (size_t)(q - p))) &&
		    json_object_object_add(o, "rule", NULL) == 0;
	}
	if (strncmp(rest, " by grant ", 10) == 0) {
		idx = strtol(rest + 10, &end, 10);
		rule = json_object_new_object();
		return end != rest + 10 && ctl_add(o, "reason", json_object_new_string("grant")) &&
		    ctl_add(o, "rule", rule) && ctl_add(rule, "grant", json_object_new_int64(idx));
	}
	if (strncmp(rest, ": ", 2) != 0)
		return false;
	p = rest + 2;
	/* KEY[I] "PATTERN" (FILE:LINE): patterns hold no quote, keys no '[' */
	if ((q = strchr(p, '[')) == NULL)
		return false;
	idx = strtol(q + 1, &end, 10);
	if (end == q + 1 || strncmp(end, "] \"", 3) != 0)
		return false;
	pat = end + 3;
	if ((file = strstr(pat, "\" (")) == NULL)
		return false;
	if ((end = strchr(file + 3, ')')) == NULL)
		return false;
	for (colon = end; colon > file + 3 && *colon != ':'; colon--)
		;
	line = strtol(colon + 1, NULL, 10);
	if (colon == file + 3)
		return false;
	rule = json_object_new_object();
	if (!ctl_add(o, "rule", rule))
		return false;
	if (strncmp(p, "policies.", 9) == 0 && strstr(p, ".import ") != NULL &&
	    strstr(p, ".import ") < q) {
		const char *imp = strstr(p, ".import ");

		if (!ctl_add(rule, "policy", ctl_strn(p + 9, (size_t)(imp - p - 9))) ||
		    !ctl_add(rule, "import", json_object_new_boolean(true)))
			return false;
		p = imp + 8;
	}
	return ctl_add(rule, "key", ctl_strn(p, (size_t)(q - p))) &&
	    ctl_add(rule, "index", json_object_new_int64(idx)) &&
	    ctl_add(rule, "pattern", ctl_strn(pat, (size_t)(file - pat))) &&
	    ctl_add(rule, "file", ctl_strn(file + 3, (size_t)(colon - file - 3))) &&
	    ctl_add(rule, "line", json_object_new_int64(line)) &&
	    ctl_add(o, "reason", json_object_new_string(strcmp(verdict, "allow") == 0 ?
	    "allow_pattern" : strcmp(verdict, "ask") == 0 ? "approval" : "deny_pattern"));
}

/* Prints check's line as a JSON object; false when out of memory. */
static bool
ctl_check_json(const char *vm, const char *host, const char *line)
{
	struct json_object *o = json_object_new_object();
	size_t vlen = strcspn(line, " ");
	char verdict[8] = "unknown", *head = NULL;
	const char *rest = NULL;
	bool ok;

	if (vlen < sizeof(verdict) && (strncmp(line, "allow ", 6) == 0 ||
	    strncmp(line, "block ", 6) == 0 || strncmp(line, "ask ", 4) == 0))
		snprintf(verdict, sizeof(verdict), "%.*s", (int)vlen, line);
	/* "VERDICT HOST for VM": a host has no blank, a VM name neither */
	if (asprintf(&head, " for %s", vm) >= 0 && (rest = strstr(line, head)) != NULL)
		rest += strlen(head);
	free(head);
	ok = o != NULL && ctl_add(o, "vm", json_object_new_string(vm)) &&
	    ctl_add(o, "host", json_object_new_string(host)) &&
	    ctl_add(o, "verdict", json_object_new_string(verdict));
	if (ok && (rest == NULL || !ctl_check_rule(o, verdict, rest))) {
		json_object_object_del(o, "rule");
		ok = ctl_add(o, "reason", json_object_new_string("unknown")) &&
		    json_object_object_add(o, "rule", NULL) == 0;
	}
	ok = ok && ctl_add(o, "audit", json_object_new_boolean(strstr(line,
	    " is in audit mode") != NULL)) && ctl_add(o, "line", json_object_new_string(line));
	if (ok)
		puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
		    JSON_C_TO_STRING_NOSLASHESCAPE));
	else
		fputs("namegatectl: out of memory\n", stderr);
	json_object_put(o);
	return ok;
}

/* Prints line (without its newline) as text or JSON; the exit status for verdict rc. */
static int
ctl_check_print(const char *vm, const char *host, char *line, bool json, int rc)
{
	size_t n = strlen(line);

	if (n > 0 && line[n - 1] == '\n')
		line[n - 1] = '\0';
	if (!json)
		puts(line);
	else if (!ctl_check_json(vm, host, line))
		return CTL_EXIT_ERROR;
	return rc;
}

static int
ctl_check_online(const struct ctl_opts *o, const char *vm, const char *host, bool json)
{
	const char *verdict, *line;
	struct ctl_reply r;
	char err[512], *copy;
	int rc;

	if (ctl_client_call(o->socket, "check", vm, host, 0, &r, err, sizeof(err)) < 0) {
		fprintf(stderr, "namegatectl: %s\n", err);
		return CTL_EXIT_ERROR;
	}
	/* As the offline form: the reason alone on stderr ("unknown VM 'x' in FILE"). */
	if (r.error != NULL) {
		fprintf(stderr, "%s\n", r.error);
		ctl_reply_free(&r);
		return CTL_EXIT_ERROR;
	}
	verdict = ctl_jstr(r.json, "verdict", "");
	line = ctl_jstr(r.json, "line", NULL);
	if (line == NULL || (strcmp(verdict, "allow") != 0 && strcmp(verdict, "block") != 0)) {
		fputs("namegatectl: check: the daemon's reply has no verdict\n", stderr);
		ctl_reply_free(&r);
		return CTL_EXIT_ERROR;
	}
	rc = strcmp(verdict, "allow") == 0 ? CTL_EXIT_OK : CTL_EXIT_BLOCK;
	if ((copy = strdup(line)) == NULL) {
		fputs("namegatectl: out of memory\n", stderr);
		rc = CTL_EXIT_ERROR;
	} else {
		rc = ctl_check_print(vm, host, copy, json, rc);
	}
	free(copy);
	ctl_reply_free(&r);
	return rc;
}

struct pol_config *
ctl_config_load(const char *file)
{
	struct pol_errs errs = { 0 };
	struct pol_config *cfg;

	if ((cfg = pol_load_file(file, &errs)) == NULL) {
		if (errs.n == 0 && errs.dropped == 0)
			fprintf(stderr, "%s: out of memory\n", file);
		pol_errs_print(stderr, &errs);
		pol_errs_free(&errs);
	}
	return cfg;
}

static int
ctl_check_offline(const char *file, const char *vm, const char *host, bool json)
{
	struct pol_config *cfg;
	char *line = NULL;
	size_t len = 0;
	FILE *mem;
	int rc;

	if ((cfg = ctl_config_load(file)) == NULL)
		return CTL_EXIT_ERROR;
	if ((mem = open_memstream(&line, &len)) == NULL) {
		pol_config_free(cfg);
		fputs("namegatectl: out of memory\n", stderr);
		return CTL_EXIT_ERROR;
	}
	rc = pol_explain(cfg, vm, host, mem, stderr);
	fclose(mem);
	if (rc < 2)
		rc = ctl_check_print(vm, host, line, json, rc);
	free(line);
	pol_config_free(cfg);
	return rc;
}

int
ctl_cmd_check(const struct ctl_opts *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *file = NULL;
	bool json = false;
	int ch;

	optind = 0;
	while ((ch = getopt_long(argc, argv, "c:jh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			file = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			puts(CTL_CHECK_USAGE);
			return CTL_EXIT_OK;
		default:
			fputs(CTL_CHECK_USAGE "\n", stderr);
			return CTL_EXIT_ERROR;
		}
	}
	if (argc - optind != 2) {
		fputs(CTL_CHECK_USAGE "\n", stderr);
		return CTL_EXIT_ERROR;
	}
	if (file == NULL)
		return ctl_check_online(o, argv[optind], argv[optind + 1], json);
	return ctl_check_offline(file, argv[optind], argv[optind + 1], json);
}

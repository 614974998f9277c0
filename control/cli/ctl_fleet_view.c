/*
 * namegatectl's views of a fleet: fleet (every gateway's status) and the requests waiting
 * on the fleet's gateways (pending), from this box's daemon, which mirrors the store, or
 * with --fleet FILE from the store itself, as the operator (ctl_fleet_cli.c has the
 * writes and how the store is found).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "ctl_cli.h"
#include "ctl_client.h"
#include "ctl_etcd.h"
#include "ctl_fleet_rec.h"
#include "ctl_grants.h"

static void
ctl_fleet_print(struct json_object *list)
{
	printf("%-16s %-12s %-8s %-14s %-7s %-5s %-20s %s\n", "GATEWAY", "SHARD", "SERIAL",
	    "DIGEST", "SOURCE", "UP", "SEEN (UTC)", "REFUSED");
	for (size_t i = 0; i < json_object_array_length(list); i++) {
		struct json_object *s = json_object_array_get_idx(list, i), *ref = NULL;
		char seen[32], refused[600] = "-";

		ctl_grant_time(ctl_json_int(s, "seen"), seen, sizeof(seen));
		if (json_object_object_get_ex(s, "refused", &ref))
			snprintf(refused, sizeof(refused), "%" PRId64 ": %s",
			    ctl_json_int(ref, "serial"), ctl_json_str(ref, "reason"));
		printf("%-16s %-12s %-8" PRId64 " %-14.12s %-7s %-5s %-20s %s\n",
		    ctl_json_str(s, "gateway"), ctl_json_str(s, "shard"), ctl_json_int(s, "serial"),
		    ctl_json_str(s, "digest"), ctl_json_str(s, "source"),
		    json_object_get_boolean(json_object_object_get(s, "connected")) ? "yes" : "no",
		    seen, refused);
	}
}

/* fleet with --fleet: the statuses straight from the store, as a daemon would show them. */
static int
ctl_fleet_from_store(const struct ctl_opts *o, struct ctl_reply *r)
{
	struct ctl_fleet_where w;
	struct ctl_etcd_kvs kvs = { 0 };
	struct json_object *list;
	char key[CTL_FLEET_KEY_MAX];
	struct ctl_etcd *c;
	int rc;

	if ((rc = ctl_fleet_where_find(o, &w)) >= 0)
		return CTL_EXIT_ERROR;
	ctl_fleet_key(key, w.prefix, "status/", "");
	rc = CTL_EXIT_ERROR;
	if ((c = ctl_fleet_client(&w)) != NULL && ctl_etcd_range(c, key, &kvs) != 0)
		fprintf(stderr, "namegatectl: fleet %s's store: %s\n", w.name, ctl_etcd_error(c));
	else if (c != NULL && (r->json = json_object_new_object()) != NULL &&
	    (list = json_object_new_array()) != NULL) {
		json_object_object_add(r->json, "fleet", json_object_new_string(w.name));
		json_object_object_add(r->json, "connected", json_object_new_boolean(1));
		json_object_object_add(r->json, "gateways", list);
		for (size_t i = 0; i < kvs.n; i++) {
			struct json_object *s = json_tokener_parse(kvs.kv[i].value);

			if (s != NULL && json_object_is_type(s, json_type_object))
				json_object_array_add(list, s);
			else
				json_object_put(s);
		}
		r->text = strdup(json_object_to_json_string_ext(r->json, JSON_C_TO_STRING_PLAIN));
		rc = r->text != NULL ? -1 : CTL_EXIT_ERROR;
	}
	ctl_etcd_kvs_free(&kvs);
	ctl_etcd_free(c);
	ctl_fleet_where_free(&w);
	return rc;
}

int
ctl_cmd_fleet(const struct ctl_opts *o, int argc, char **argv)
{
	static const char usage[] = "fleet [--json]";
	const char *kv[] = { "cmd", "fleet", NULL };
	struct json_object *list;
	struct ctl_args a;
	struct ctl_reply r = { 0 };
	int rc;

	if ((rc = ctl_args_parse(argc, argv, CTL_OPT_JSON, 0, 0, usage, &a)) >= 0)
		return rc;
	if ((rc = o->fleet != NULL ? ctl_fleet_from_store(o, &r) : ctl_ask_kv(o, kv, &r)) >= 0) {
		ctl_reply_free(&r);
		return rc;
	}
	if (o->fleet != NULL && !a.json) {
		printf("fleet %s, from its store:\n", ctl_json_str(r.json, "fleet"));
		if (json_object_object_get_ex(r.json, "gateways", &list))
			ctl_fleet_print(list);
		ctl_reply_free(&r);
		return CTL_EXIT_OK;
	}
	if (a.json) {
		puts(r.text);
	} else {
		printf("fleet %s, shard %s, this gateway %s: store %s%s%s\n",
		    ctl_json_str(r.json, "fleet"), ctl_json_str(r.json, "shard"),
		    ctl_json_str(r.json, "gateway"),
		    json_object_get_boolean(json_object_object_get(r.json, "connected")) ?
		    "reached" : "NOT reached", *ctl_json_str(r.json, "reason") != '\0' ? ": " : "",
		    ctl_json_str(r.json, "reason"));
		if (json_object_object_get_ex(r.json, "gateways", &list) &&
		    json_object_is_type(list, json_type_array))
			ctl_fleet_print(list);
	}
	ctl_reply_free(&r);
	return CTL_EXIT_OK;
}

/* The table of waiting requests, q each: its header before the first. */
static void
ctl_fleet_pending_row(struct json_object *q, size_t *shown, const char *fleet)
{
	char seen[32], id[96];

	if ((*shown)++ == 0)
		printf("waiting on %s gateways of fleet %s (approve or deny GATEWAY/ID):\n"
		    "%-22s %-16s %-40s %-6s %s\n", fleet[0] == '\0' ? "the" : "other", fleet,
		    "GATEWAY/ID", "VM", "NAME", "TYPE", "FIRST SEEN (UTC)");
	ctl_grant_time(ctl_json_int(q, "first_seen"), seen, sizeof(seen));
	snprintf(id, sizeof(id), "%s/%" PRId64, ctl_json_str(q, "gateway"), ctl_json_int(q, "id"));
	printf("%-22s %-16s %-40s %-6" PRId64 " %s\n", id, ctl_json_str(q, "vm"),
	    ctl_json_str(q, "name"), ctl_json_int(q, "type"), seen);
}

int
ctl_fleet_pending_store(const struct ctl_opts *o, const char *vm, bool json)
{
	struct ctl_fleet_where w;
	struct ctl_etcd_kvs kvs = { 0 };
	char key[CTL_FLEET_KEY_MAX], why[256];
	struct ctl_etcd *c;
	size_t shown = 0;
	int rc;

	if ((rc = ctl_fleet_where_find(o, &w)) >= 0)
		return CTL_EXIT_ERROR;
	ctl_fleet_key(key, w.prefix, "pending/", "");
	rc = CTL_EXIT_ERROR;
	if ((c = ctl_fleet_client(&w)) != NULL && ctl_etcd_range(c, key, &kvs) != 0) {
		fprintf(stderr, "namegatectl: fleet %s's store: %s\n", w.name, ctl_etcd_error(c));
	} else if (c != NULL) {
		for (size_t i = 0; i < kvs.n; i++) {
			struct ctl_fleet_pending p;
			struct json_object *q;
			char *text;

			if (ctl_fleet_pending_decode(kvs.kv[i].value, kvs.kv[i].value_len, &p, why,
			    sizeof(why)) != 0 || (vm != NULL && strcmp(p.vm, vm) != 0) ||
			    (text = ctl_fleet_pending_encode(&p)) == NULL)
				continue;
			if (json)
				puts(text);
			else if ((q = json_tokener_parse(text)) != NULL) {
				ctl_fleet_pending_row(q, &shown, "");
				json_object_put(q);
			}
			free(text);
		}
		if (!json && shown == 0)
			printf("nothing waits for approval in fleet %s\n", w.name);
		rc = CTL_EXIT_OK;
	}
	ctl_etcd_kvs_free(&kvs);
	ctl_etcd_free(c);
	ctl_fleet_where_free(&w);
	return rc;
}

void
ctl_fleet_pending_print(const struct ctl_opts *o, const char *vm)
{
	const char *kv[] = { "cmd", "fleet", NULL };
	struct json_object *list;
	struct ctl_reply r;
	char err[256];
	const char *me;
	size_t shown = 0;

	if (ctl_client_request(o->socket, kv, 0, &r, err, sizeof(err)) < 0)
		return;

	me = ctl_json_str(r.json, "gateway");
	if (r.error == NULL && json_object_object_get_ex(r.json, "pending", &list) &&
	    json_object_is_type(list, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(list); i++) {
			struct json_object *q = json_object_array_get_idx(list, i);

			if (strcmp(ctl_json_str(q, "gateway"), me) == 0 ||
			    (vm != NULL && strcmp(ctl_json_str(q, "vm"), vm) != 0))
				continue;	/* this gateway's are above */
			ctl_fleet_pending_row(q, &shown, ctl_json_str(r.json, "fleet"));
		}
	}
	ctl_reply_free(&r);
}

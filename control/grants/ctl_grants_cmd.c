/*
 * The control socket's grant, grants and revoke (namegatectl): JSON replies over the
 * grants in force. See ctl_grants_live.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "ctl_grants_live.h"
#include "ctl_grants_live_int.h"
#include "ctl_sock.h"
#include "policy/load.h"

/* One grant as the control socket shows it; NULL when out of memory. */
static struct json_object *
ctl_gl_json(const struct ctl_grant *g, int64_t now)
{
	struct json_object *o = json_object_new_object();
	char created[32], until[32];

	if (o == NULL)
		return NULL;
	ctl_grant_time(g->created, created, sizeof(created));
	ctl_grant_time(g->expires, until, sizeof(until));
	if (json_object_object_add(o, "id", json_object_new_uint64(g->id)) < 0 ||
	    json_object_object_add(o, "vm", json_object_new_string(g->vm)) < 0 ||
	    json_object_object_add(o, "host", json_object_new_string(g->host)) < 0 ||
	    json_object_object_add(o, "created", json_object_new_string(created)) < 0 ||
	    json_object_object_add(o, "until", json_object_new_string(until)) < 0 ||
	    json_object_object_add(o, "expires", json_object_new_int64(g->expires)) < 0 ||
	    json_object_object_add(o, "left", json_object_new_int64(g->expires > now ?
	    g->expires - now : 0)) < 0 ||
	    json_object_object_add(o, "reason", json_object_new_string(g->reason)) < 0 ||
	    (g->uid >= 0 && (json_object_object_add(o, "uid", json_object_new_int64(g->uid)) < 0 ||
	    json_object_object_add(o, "user", json_object_new_string(g->user)) < 0))) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

static int
ctl_gl_cs_grant(FILE *out, const struct ctl_req *req, void *arg)
{
	const struct ctl_grants_live *gr = arg;
	struct ctl_grant g;
	char why[512];
	int rc;

	if (gr->fleet != NULL) {
		fprintf(out, "this gateway takes its grants from fleet %s's store: namegatectl "
		    "grant writes them there with an operator's credentials", gr->fleet);
		return -EPERM;
	}
	if ((rc = ctl_grants_live_make(arg, req->vm, req->host, req->dur, req->reason, req->peer,
	    &g, why, sizeof(why))) < 0) {
		fputs(why, out);
		return rc;
	}
	return ctl_sock_reply_json(out, NULL, ctl_gl_json(&g, ctl_gl_now()));
}

static int
ctl_gl_cs_list(FILE *out, const struct ctl_req *req, void *arg)
{
	const char *vm = req->vm;
	struct ctl_grants_live *gr = arg;
	struct json_object *list = json_object_new_array();
	int64_t now = ctl_gl_now();
	size_t n;

	if (vm != NULL && pol_config_vm(*gr->cfgp, vm) == NULL) {
		json_object_put(list);
		fprintf(out, "unknown VM '%s'", vm);
		return -ENOENT;
	}
	n = ctl_grants_count(gr->table);
	for (size_t i = 0; list != NULL && i < n; i++) {
		const struct ctl_grant *g = ctl_grants_at(gr->table, i);
		struct json_object *o;

		if (vm != NULL && strcmp(g->vm, vm) != 0)
			continue;
		if ((o = ctl_gl_json(g, now)) == NULL || json_object_array_add(list, o) < 0) {
			json_object_put(o);
			json_object_put(list);
			return -ENOMEM;
		}
	}
	return ctl_sock_reply_json(out, "grants", list);
}

static int
ctl_gl_cs_revoke(FILE *out, const struct ctl_req *req, void *arg)
{
	const char *id = req->id;
	struct ctl_grants_live *gr = arg;
	struct ctl_grant g;
	char *end;
	uint64_t v;
	int rc;

	errno = 0;
	v = strtoull(id, &end, 10);
	if (id[0] < '0' || id[0] > '9' || *end != '\0' || errno != 0 || v == 0) {
		fprintf(out, "bad grant id \"%.32s\" (a number from namegatectl grants)", id);
		return -EINVAL;
	}
	if ((rc = ctl_grants_live_revoke(gr, v, req->peer, &g)) == -ENOENT) {
		fprintf(out, "no live grant %" PRIu64, v);
		return rc;
	}
	if (rc == -EAGAIN) {
		fprintf(out, "grant %" PRIu64 " revoked, but no generation without it is in "
		    "force yet (retried every second)", v);
		return rc;
	}
	return ctl_sock_reply_json(out, "revoked", ctl_gl_json(&g, ctl_gl_now()));
}

static const struct ctl_cmd ctl_gl_cmds[] = {
	{ "grant", CTL_ARG_VM | CTL_ARG_VM_REQ | CTL_ARG_HOST | CTL_ARG_FOR, ctl_gl_cs_grant },
	{ "grants", CTL_ARG_VM, ctl_gl_cs_list },
	{ "revoke", CTL_ARG_ID, ctl_gl_cs_revoke },
};

int
ctl_grants_live_serve(struct ctl_grants_live *gr, struct ctl_sock *s)
{
	return ctl_sock_serve(s, ctl_gl_cmds, sizeof(ctl_gl_cmds) / sizeof(ctl_gl_cmds[0]),
	    gr);
}

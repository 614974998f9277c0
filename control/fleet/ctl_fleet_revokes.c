/*
 * Revocations made on this gateway that the store has not shown back yet, kept on disk
 * (fleet.cache + ".revokes", written whole): a gateway that restarts while the store is
 * out of reach would otherwise forget them, and the grant's record, still in the store,
 * would bring the grant back on reconnect. A revoke must win wherever it was made.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "ctl_fleet_int.h"

#define CTL_FLEET_REVOKES_FILE_MAX	(1u << 20)

/* FILE.revokes beside the cache: whole, as the loader bounds the cache's path */
static void
cfr_path(const struct ctl_fleet *f, char *buf, size_t len)
{
	_Static_assert(POL_FLEET_CACHE_MAX + sizeof(".revokes") <= 4096, "FILE.revokes fits");
	snprintf(buf, len, "%s.revokes", f->boot->fleet_cache);
}

/* The list as it stands, to disk; an error is said, the list stays in memory. */
static void
cfr_save(const struct ctl_fleet *f)
{
	struct json_object *list = json_object_new_array();
	char path[4096];
	const char *text;
	int rc = -ENOMEM;

	for (size_t i = 0; list != NULL && i < f->nprev; i++) {
		const struct ctl_fleet_revoke *r = &f->prev[i];
		struct json_object *o = json_object_new_object();

		if (o == NULL || json_object_object_add(o, "id", json_object_new_uint64(r->id)) ||
		    json_object_object_add(o, "expires", json_object_new_int64(r->expires)) ||
		    json_object_object_add(o, "uid", json_object_new_int64(r->uid)) ||
		    json_object_object_add(o, "user", json_object_new_string(r->user)) ||
		    json_object_array_add(list, o)) {
			json_object_put(o);
			json_object_put(list);
			list = NULL;
		}
	}
	cfr_path(f, path, sizeof(path));
	if (list != NULL && (text = json_object_to_json_string_ext(list,
	    JSON_C_TO_STRING_PLAIN)) != NULL)
		rc = ctl_fleet_write_file(path, text, strlen(text));
	json_object_put(list);
	if (rc != 0)
		fprintf(stderr, "namegate: fleet: %s not written: %s (revocations not yet in the "
		    "store are in memory only)\n", path, strerror(-rc));
}

void
ctl_fleet_revokes_add(struct ctl_fleet *f, const struct ctl_fleet_revoke *r)
{
	if (f->nprev == CTL_FLEET_REVOKED_MAX)	/* the oldest have reached the store by now */
		memmove(f->prev, f->prev + 1, --f->nprev * sizeof(f->prev[0]));
	f->prev[f->nprev++] = *r;
	cfr_save(f);
}

void
ctl_fleet_revokes_seen(struct ctl_fleet *f, const uint64_t *revoked, size_t n)
{
	int64_t now = time(NULL);
	size_t kept = 0;

	for (size_t i = 0; i < f->nprev; i++) {
		bool seen = false;

		for (size_t k = 0; k < n && !seen; k++)
			seen = revoked[k] == f->prev[i].id;
		/* in the store now, or its grant would have ended anyway */
		if (!seen && f->prev[i].expires > now)
			f->prev[kept++] = f->prev[i];
	}
	if (kept != f->nprev) {
		f->nprev = kept;
		cfr_save(f);
	}
}

void
ctl_fleet_revokes_load(struct ctl_fleet *f)
{
	struct json_object *list;
	char path[4096], *text;
	size_t len;
	int rc;

	cfr_path(f, path, sizeof(path));
	if ((rc = ctl_bundle_read(path, CTL_FLEET_REVOKES_FILE_MAX, &text, &len)) != 0) {
		if (rc != -ENOENT)
			fprintf(stderr, "namegate: fleet: %s: %s\n", path, strerror(-rc));
		return;
	}
	list = json_tokener_parse(text);
	free(text);
	if (list == NULL || !json_object_is_type(list, json_type_array)) {
		fprintf(stderr, "namegate: fleet: %s is not what namegate writes: ignored\n", path);
		json_object_put(list);
		return;
	}
	for (size_t i = 0; i < json_object_array_length(list) &&
	    f->nprev < CTL_FLEET_REVOKED_MAX; i++) {
		struct json_object *o = json_object_array_get_idx(list, i), *v;
		struct ctl_fleet_revoke r = { .uid = -1 };

		if (!json_object_object_get_ex(o, "id", &v) || (r.id = json_object_get_uint64(v)) == 0)
			continue;
		if (json_object_object_get_ex(o, "expires", &v))
			r.expires = json_object_get_int64(v);
		if (json_object_object_get_ex(o, "uid", &v))
			r.uid = json_object_get_int64(v);
		if (json_object_object_get_ex(o, "user", &v))
			snprintf(r.user, sizeof(r.user), "%s", json_object_get_string(v));
		f->prev[f->nprev++] = r;
		ctl_fleet_revoke_queue(f, &r);	/* on its way to the store again */
	}
	json_object_put(list);
	if (f->nprev > 0)
		fprintf(stderr, "namegate: fleet: %zu revocation%s made here before a restart, "
		    "on their way to the store again\n", f->nprev, f->nprev == 1 ? "" : "s");
}

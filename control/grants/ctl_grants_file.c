/*
 * The grants' state file: written whole and atomically on every change, read once at
 * start. Reading is strict and all or nothing: a grant widens what a VM may reach, so a
 * file that is not exactly what we wrote grants nothing (fail closed), and is kept aside
 * for the operator instead of being overwritten by the next change.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "ctl_grants_int.h"

#define CTL_GRANTS_DEPTH	4	/* object, grants array, grant object, scalar */
#define CTL_GRANTS_MODE		0640

static int __attribute__((format(printf, 4, 5)))
gf_fail(int rc, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

/* The whole file, NUL-terminated, or NULL with *rc: -ENOENT, -EFBIG, -errno. */
static char *
gf_read(const char *path, size_t *len, int *rc)
{
	struct stat st;
	char *buf = NULL;
	size_t off = 0;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0) {
		*rc = -errno;
		return NULL;
	}
	if (fstat(fd, &st) < 0) {
		*rc = -errno;
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		*rc = -EINVAL;
		goto fail;
	}
	if (st.st_size > CTL_GRANTS_FILE_MAX) {
		*rc = -EFBIG;
		goto fail;
	}
	if ((buf = malloc((size_t)st.st_size + 1)) == NULL) {
		*rc = -ENOMEM;
		goto fail;
	}
	while (off < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + off, (size_t)st.st_size - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			*rc = n < 0 ? -errno : -EIO;	/* shrank under us */
			goto fail;
		}
		off += (size_t)n;
	}
	close(fd);
	buf[off] = '\0';
	*len = off;
	return buf;
fail:
	free(buf);
	close(fd);
	return NULL;
}

/* A non-negative integer member that fits in max. */
static bool
gf_uint(struct json_object *o, const char *key, uint64_t max, uint64_t *out)
{
	struct json_object *v;
	int64_t x;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
		return false;
	errno = 0;
	x = json_object_get_int64(v);
	if (errno != 0 || x < 0 || (uint64_t)x > max)
		return false;
	*out = (uint64_t)x;
	return true;
}

/* A string member copied into dst[cap]; "" only when empty_ok. */
static bool
gf_str(struct json_object *o, const char *key, char *dst, size_t cap, bool empty_ok)
{
	struct json_object *v;
	size_t n;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return false;
	n = (size_t)json_object_get_string_len(v);
	if (n >= cap || strlen(json_object_get_string(v)) != n || (n == 0 && !empty_ok))
		return false;
	memcpy(dst, json_object_get_string(v), n + 1);
	return true;
}

/* One grant object into *gr: exactly the keys we write, each well-formed. */
static int
gf_grant(struct json_object *o, struct ctl_grant *gr, char *why, size_t whylen)
{
	static const char *const keys[] = { "id", "vm", "host", "created", "expires", "reason",
		"uid", "user", "fleet" };
	struct json_object *fleet;
	uint64_t id, created, expires, uid;
	char pwhy[POL_WHY_MAX];

	if (!json_object_is_type(o, json_type_object))
		return gf_fail(-EINVAL, why, whylen, "not an object");
	json_object_object_foreach(o, key, val) {
		bool known = false;

		(void)val;
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			known = known || strcmp(key, keys[k]) == 0;
		if (!known)
			return gf_fail(-EINVAL, why, whylen, "unknown key \"%.32s\"", key);
	}
	memset(gr, 0, sizeof(*gr));
	if (!gf_uint(o, "id", INT64_MAX, &id) || id == 0)
		return gf_fail(-EINVAL, why, whylen, "\"id\" must be a positive integer");
	if (!gf_str(o, "vm", gr->vm, sizeof(gr->vm), false) ||
	    !gf_str(o, "host", gr->host, sizeof(gr->host), false) ||
	    !gf_str(o, "reason", gr->reason, sizeof(gr->reason), true))
		return gf_fail(-EINVAL, why, whylen, "grant %llu: \"vm\", \"host\" and \"reason\" "
		    "must be strings of their sizes", (unsigned long long)id);
	if (!gf_uint(o, "created", INT64_MAX, &created) ||
	    !gf_uint(o, "expires", INT64_MAX, &expires) || expires <= created ||
	    expires - created > CTL_GRANT_SECONDS_MAX)
		return gf_fail(-EINVAL, why, whylen, "grant %llu: \"created\" and \"expires\" must "
		    "be times at most 30d apart", (unsigned long long)id);
	gr->uid = -1;
	if (json_object_object_get_ex(o, "uid", NULL) ||
	    json_object_object_get_ex(o, "user", NULL)) {
		if (!gf_uint(o, "uid", UINT32_MAX, &uid) ||
		    !gf_str(o, "user", gr->user, sizeof(gr->user), false))
			return gf_fail(-EINVAL, why, whylen, "grant %llu: \"uid\" and \"user\" "
			    "must come together, a uid and a name", (unsigned long long)id);
		gr->uid = (int64_t)uid;
	}
	if (json_object_object_get_ex(o, "fleet", &fleet)) {
		if (!json_object_is_type(fleet, json_type_boolean))
			return gf_fail(-EINVAL, why, whylen, "grant %llu: \"fleet\" must be true or "
			    "false", (unsigned long long)id);
		gr->fleet = json_object_get_boolean(fleet);
	}
	gr->id = id;
	gr->created = (int64_t)created;
	gr->expires = (int64_t)expires;
	if (ctl_grant_check(gr, NULL, pwhy, sizeof(pwhy)) < 0)
		return gf_fail(-EINVAL, why, whylen, "grant %llu: %s", (unsigned long long)id,
		    pwhy);
	pol_pattern_parse(gr->host, &gr->pattern, pwhy, sizeof(pwhy));
	return 0;
}

/* "revoked": [{"vm", "host", "until"}], the revokes the HA peer must not undo. */
static int
gf_tombs(struct ctl_grants *g, struct json_object *list, char *why, size_t whylen)
{
	size_t n;

	if (!json_object_is_type(list, json_type_array) ||
	    (n = json_object_array_length(list)) > CTL_GRANTS_MAX)
		return gf_fail(-EINVAL, why, whylen, "\"revoked\" must be a list of at most %u",
		    CTL_GRANTS_MAX);
	for (size_t i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(list, i);
		struct ctl_grant_tomb t;
		uint64_t until;

		if (!json_object_is_type(o, json_type_object) || json_object_object_length(o) != 3 ||
		    !gf_str(o, "vm", t.vm, sizeof(t.vm), false) ||
		    !gf_str(o, "host", t.host, sizeof(t.host), false) ||
		    !gf_uint(o, "until", INT64_MAX, &until) || until == 0 ||
		    ctl_grants_tomb_live(g, t.vm, t.host, 0))
			return gf_fail(-EINVAL, why, whylen, "revoked[%zu]: not {\"vm\", \"host\", "
			    "\"until\"} (or twice)", i);
		/* now 0: kept as written; the next save drops what is over */
		if (ctl_grants_tomb_add(g, t.vm, t.host, (int64_t)until, 0) < 0)
			return gf_fail(-ENOMEM, why, whylen, "out of memory");
	}
	return 0;
}

/* The document into g (empty on entry); on failure g may hold some: the caller clears. */
int
ctl_grants_parse(struct ctl_grants *g, const char *buf, size_t len, char *why, size_t whylen)
{
	struct json_tokener *tok = json_tokener_new_ex(CTL_GRANTS_DEPTH);
	struct json_object *doc = NULL, *list, *tombs = NULL;
	uint64_t version, next_id;
	size_t n;
	int rc = -EINVAL;

	if (tok == NULL)
		return gf_fail(-ENOMEM, why, whylen, "out of memory");
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		len--;
	if (len > INT_MAX || (doc = json_tokener_parse_ex(tok, buf, (int)len)) == NULL ||
	    json_tokener_get_parse_end(tok) != len) {
		enum json_tokener_error e = json_tokener_get_error(tok);

		gf_fail(rc, why, whylen, "not one JSON document (%s)", doc != NULL ?
		    "text after it" : e == json_tokener_continue ? "it ends too soon" :
		    json_tokener_error_desc(e));
		goto out;
	}
	if (!json_object_is_type(doc, json_type_object) ||
	    !gf_uint(doc, "version", UINT32_MAX, &version) ||
	    version != CTL_GRANTS_FILE_VERSION ||
	    !gf_uint(doc, "next_id", INT64_MAX, &next_id) || next_id == 0 ||
	    !json_object_object_get_ex(doc, "grants", &list) ||
	    !json_object_is_type(list, json_type_array) || json_object_object_length(doc) !=
	    (json_object_object_get_ex(doc, "revoked", &tombs) ? 4 : 3)) {
		gf_fail(rc, why, whylen, "not a version %d grants file ({\"version\", \"next_id\", "
		    "\"grants\"[, \"revoked\"]})", CTL_GRANTS_FILE_VERSION);
		goto out;
	}
	if (tombs != NULL && gf_tombs(g, tombs, why, whylen) < 0)
		goto out;
	if ((n = json_object_array_length(list)) > CTL_GRANTS_MAX) {
		gf_fail(rc, why, whylen, "%zu grants, more than %u", n, CTL_GRANTS_MAX);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct ctl_grant gr;
		char gwhy[POL_WHY_MAX + 64];

		if (gf_grant(json_object_array_get_idx(list, i), &gr, gwhy, sizeof(gwhy)) < 0) {
			gf_fail(rc, why, whylen, "grants[%zu]: %s", i, gwhy);
			goto out;
		}
		if (gr.id >= next_id || ctl_grants_revoke(g, gr.id, NULL) == 0) {
			gf_fail(rc, why, whylen, "grants[%zu]: id %llu is %s", i,
			    (unsigned long long)gr.id, gr.id >= next_id ? "not below next_id" :
			    "used twice");
			goto out;
		}
		if ((rc = ctl_grants_put(g, &gr)) < 0) {
			gf_fail(rc, why, whylen, "out of memory");
			goto out;
		}
		rc = -EINVAL;
	}
	g->next_id = next_id;
	rc = 0;
out:
	json_object_put(doc);
	json_tokener_free(tok);
	return rc;
}

int
ctl_grants_load(struct ctl_grants *g, char *err, size_t errlen)
{
	char why[POL_WHY_MAX + 128], aside[PATH_MAX];
	size_t len = 0;
	char *buf;
	int rc;

	if ((buf = gf_read(g->path, &len, &rc)) == NULL) {
		if (rc == -ENOENT)
			return 0;	/* never granted anything */
		snprintf(why, sizeof(why), "cannot read it: %s", rc == -EFBIG ?
		    "larger than 1 MiB" : rc == -EINVAL ? "not a regular file" : strerror(-rc));
	} else {
		rc = ctl_grants_parse(g, buf, len, why, sizeof(why));
		free(buf);
		if (rc == 0)
			return 0;
	}
	g->n = 0;		/* nothing from a damaged file counts */
	if (snprintf(aside, sizeof(aside), "%s.damaged", g->path) < (int)sizeof(aside) &&
	    rc != -EACCES && rename(g->path, aside) == 0)
		return gf_fail(rc, err, errlen, "%s: %s; moved to %s", g->path, why, aside);
	return gf_fail(rc, err, errlen, "%s: %s", g->path, why);
}

static bool
gf_tombs_doc(const struct ctl_grants *g, struct json_object *doc)
{
	struct json_object *list = json_object_new_array();

	if (list == NULL || json_object_object_add(doc, "revoked", list) != 0) {
		json_object_put(list);
		return false;
	}
	for (size_t i = 0; i < g->ntombs; i++) {
		const struct ctl_grant_tomb *t = &g->tombs[i];
		struct json_object *o = json_object_new_object();

		if (o == NULL || json_object_array_add(list, o) != 0) {
			json_object_put(o);
			return false;
		}
		if (json_object_object_add(o, "vm", json_object_new_string(t->vm)) != 0 ||
		    json_object_object_add(o, "host", json_object_new_string(t->host)) != 0 ||
		    json_object_object_add(o, "until", json_object_new_int64(t->until)) != 0)
			return false;
	}
	return true;
}

/* The table as the state file holds it; NULL when out of memory. */
static struct json_object *
gf_doc(const struct ctl_grants *g)
{
	struct json_object *doc = json_object_new_object(), *list = json_object_new_array();
	bool ok = doc != NULL && list != NULL &&
	    json_object_object_add(doc, "version", json_object_new_int(CTL_GRANTS_FILE_VERSION))
	    == 0 && json_object_object_add(doc, "next_id",
	    json_object_new_int64((int64_t)g->next_id)) == 0;

	if (ok && json_object_object_add(doc, "grants", list) == 0)
		list = NULL;		/* doc has it */
	else
		ok = false;
	for (size_t i = 0; ok && i < g->n; i++) {
		const struct ctl_grant *gr = &g->v[i];
		struct json_object *o = json_object_new_object();

		ok = o != NULL && json_object_array_add(json_object_object_get(doc, "grants"), o)
		    == 0;
		if (!ok) {
			json_object_put(o);
			break;
		}
		ok = json_object_object_add(o, "id", json_object_new_int64((int64_t)gr->id)) == 0 &&
		    json_object_object_add(o, "vm", json_object_new_string(gr->vm)) == 0 &&
		    json_object_object_add(o, "host", json_object_new_string(gr->host)) == 0 &&
		    json_object_object_add(o, "created", json_object_new_int64(gr->created)) == 0 &&
		    json_object_object_add(o, "expires", json_object_new_int64(gr->expires)) == 0 &&
		    json_object_object_add(o, "reason", json_object_new_string(gr->reason)) == 0 &&
		    (gr->uid < 0 ||	/* the maker, when known */
		    (json_object_object_add(o, "uid", json_object_new_int64(gr->uid)) == 0 &&
		    json_object_object_add(o, "user", json_object_new_string(gr->user)) == 0)) &&
		    (!gr->fleet ||
		    json_object_object_add(o, "fleet", json_object_new_boolean(1)) == 0);
	}
	json_object_put(list);
	if (ok && g->ntombs > 0)	/* only a pair's box revokes what its peer may resend */
		ok = gf_tombs_doc(g, doc);
	if (!ok) {
		json_object_put(doc);
		return NULL;
	}
	return doc;
}

/* fsync of the directory holding path, so the rename itself survives a crash. */
static int
gf_sync_dir(const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	int fd, rc = 0;

	if (slash == NULL)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -errno;
	if (fsync(fd) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

int
ctl_grants_save(const struct ctl_grants *g, char *err, size_t errlen)
{
	struct json_object *doc;
	char tmp[PATH_MAX];
	const char *text;
	size_t len, off = 0;
	int fd = -1, rc = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", g->path) >= (int)sizeof(tmp))
		return gf_fail(-ENAMETOOLONG, err, errlen, "%s: path too long", g->path);
	if ((doc = gf_doc(g)) == NULL ||
	    (text = json_object_to_json_string_length(doc, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE, &len)) == NULL) {
		json_object_put(doc);
		return gf_fail(-ENOMEM, err, errlen, "%s: out of memory", g->path);
	}
	/* O_TRUNC over a tmp file a crash left behind; the rename replaces path whole */
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
	    CTL_GRANTS_MODE)) < 0) {
		rc = -errno;
		goto out;
	}
	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			goto out;
		}
		off += (size_t)n;
	}
	if (write(fd, "\n", 1) != 1 || fsync(fd) < 0) {
		rc = errno != 0 ? -errno : -EIO;
		goto out;
	}
	if (close(fd) < 0) {
		fd = -1;
		rc = -errno;
		goto out;
	}
	fd = -1;
	if (rename(tmp, g->path) < 0) {
		rc = -errno;
		goto out;
	}
	rc = gf_sync_dir(g->path);
out:
	if (fd >= 0)
		close(fd);
	if (rc < 0 && access(tmp, F_OK) == 0)
		unlink(tmp);
	json_object_put(doc);
	if (rc < 0)
		gf_fail(rc, err, errlen, "%s: %s", g->path, strerror(-rc));
	return rc;
}

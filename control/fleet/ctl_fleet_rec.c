/*
 * The store's records as JSON (json-c): written by namegatectl and the daemon, read by
 * every gateway, so a decoder trusts no field it has not checked.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <sodium/crypto_hash_sha256.h>
#include <sodium/utils.h>

#include "ctl_fleet_rec.h"

static const struct {
	const char *dir;
	enum ctl_fleet_kind kind;
	bool two;			/* GATEWAY/ID below it, not one name */
} ctl_fleet_dirs[] = {
	{ "grants/", CTL_FLEET_K_GRANT, false },
	{ "revoked/", CTL_FLEET_K_REVOKED, false },
	{ "bundles/", CTL_FLEET_K_BUNDLE, false },
	{ "status/", CTL_FLEET_K_STATUS, false },
	{ "pending/", CTL_FLEET_K_PENDING, true },
	{ "decisions/", CTL_FLEET_K_DECISION, true },
};

/* A tail of one name, or with two, of "GATEWAY/ID": no other '/'. */
static bool
ctl_fleet_tail_ok(const char *t, size_t len, bool two)
{
	const char *slash = memchr(t, '/', len);

	if (!two)
		return slash == NULL;
	return slash != NULL && slash > t && slash < t + len - 1 &&
	    memchr(slash + 1, '/', len - (size_t)(slash + 1 - t)) == NULL;
}

enum ctl_fleet_kind
ctl_fleet_key_kind(const char *prefix, const char *key, size_t len, const char **tail,
    size_t *tail_len)
{
	size_t plen = strlen(prefix);

	if (len <= plen || memcmp(key, prefix, plen) != 0)
		return CTL_FLEET_K_OTHER;
	key += plen;
	len -= plen;
	for (size_t i = 0; i < sizeof(ctl_fleet_dirs) / sizeof(ctl_fleet_dirs[0]); i++) {
		size_t dlen = strlen(ctl_fleet_dirs[i].dir);

		/* at its depth: a tail with more '/' in it is nobody's record */
		if (len > dlen && memcmp(key, ctl_fleet_dirs[i].dir, dlen) == 0 &&
		    ctl_fleet_tail_ok(key + dlen, len - dlen, ctl_fleet_dirs[i].two)) {
			*tail = key + dlen;
			*tail_len = len - dlen;
			return ctl_fleet_dirs[i].kind;
		}
	}
	return CTL_FLEET_K_OTHER;
}

void
ctl_fleet_key(char *buf, const char *prefix, const char *what, const char *tail)
{
	snprintf(buf, CTL_FLEET_KEY_MAX, "%s%s%s", prefix, what, tail);
}

/* json_object_to_json_string's text, copied: the object is freed. */
static char *
ctl_fleet_text(struct json_object *o, bool ok)
{
	char *s = NULL;

	if (ok && o != NULL)
		s = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return s;
}

static bool
ctl_fleet_add_str(struct json_object *o, const char *k, const char *v)
{
	return json_object_object_add(o, k, json_object_new_string(v)) == 0;
}

static bool
ctl_fleet_add_i64(struct json_object *o, const char *k, int64_t v)
{
	return json_object_object_add(o, k, json_object_new_int64(v)) == 0;
}

char *
ctl_fleet_grant_encode(const struct ctl_fleet_grant *fg)
{
	struct json_object *o = json_object_new_object();
	const struct ctl_grant *g = &fg->g;

	return ctl_fleet_text(o, o != NULL && ctl_fleet_add_str(o, "vm", g->vm) &&
	    ctl_fleet_add_str(o, "host", g->host) && ctl_fleet_add_i64(o, "created", g->created) &&
	    ctl_fleet_add_i64(o, "expires", g->expires) &&
	    ctl_fleet_add_str(o, "reason", g->reason) && ctl_fleet_add_i64(o, "uid", g->uid) &&
	    ctl_fleet_add_str(o, "user", g->user) && ctl_fleet_add_str(o, "origin", fg->origin) &&
	    ctl_fleet_add_i64(o, "put_ms", fg->put_ms));
}

/* A JSON object from untrusted bytes, or NULL with why. */
static struct json_object *
ctl_fleet_parse(const char *val, size_t len, const char *what, char *why, size_t whylen)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *o = NULL;

	if (tok == NULL) {
		snprintf(why, whylen, "out of memory");
		return NULL;
	}
	if (len > INT32_MAX || (o = json_tokener_parse_ex(tok, val, (int)len)) == NULL ||
	    json_tokener_get_error(tok) != json_tokener_success ||
	    (size_t)json_tokener_get_parse_end(tok) != len ||
	    !json_object_is_type(o, json_type_object)) {
		snprintf(why, whylen, "%s: not a JSON object", what);
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	return o;
}

/* Member k, a string that fits cap with its NUL, copied into dst. */
static bool
ctl_fleet_get_str(struct json_object *o, const char *k, char *dst, size_t cap)
{
	struct json_object *v;
	const char *s;
	size_t n;

	if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_string))
		return false;
	s = json_object_get_string(v);
	n = (size_t)json_object_get_string_len(v);
	if (n >= cap || memchr(s, '\0', n) != NULL)
		return false;
	memcpy(dst, s, n + 1);
	return true;
}

static bool
ctl_fleet_get_i64(struct json_object *o, const char *k, int64_t *out)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_int))
		return false;
	errno = 0;
	*out = json_object_get_int64(v);
	return errno == 0;
}

int
ctl_fleet_grant_decode(const char *val, size_t len, uint64_t id, struct ctl_fleet_grant *out,
    char *why, size_t whylen)
{
	struct json_object *o = ctl_fleet_parse(val, len, "grant", why, whylen);
	struct ctl_grant *g = &out->g;
	char pwhy[POL_WHY_MAX];
	int rc = -EINVAL;

	if (o == NULL)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	g->id = id;
	if (!ctl_fleet_get_str(o, "vm", g->vm, sizeof(g->vm)) ||
	    !ctl_fleet_get_str(o, "host", g->host, sizeof(g->host)) ||
	    !ctl_fleet_get_str(o, "reason", g->reason, sizeof(g->reason)) ||
	    !ctl_fleet_get_str(o, "user", g->user, sizeof(g->user)) ||
	    !ctl_fleet_get_str(o, "origin", out->origin, sizeof(out->origin)) ||
	    !ctl_fleet_get_i64(o, "created", &g->created) ||
	    !ctl_fleet_get_i64(o, "expires", &g->expires) ||
	    !ctl_fleet_get_i64(o, "uid", &g->uid) || !ctl_fleet_get_i64(o, "put_ms", &out->put_ms))
		snprintf(why, whylen, "grant %" PRIu64 ": a field is missing or of the wrong type",
		    id);
	else if (g->expires <= g->created || g->expires - g->created > CTL_GRANT_SECONDS_MAX)
		snprintf(why, whylen, "grant %" PRIu64 ": expires is not within 30 days after "
		    "created", id);
	else if (g->uid < -1 || g->uid > UINT32_MAX || (g->uid == -1) != (g->user[0] == '\0'))
		snprintf(why, whylen, "grant %" PRIu64 ": uid and user do not go together", id);
	else if (pol_pattern_parse(g->host, &g->pattern, pwhy, sizeof(pwhy)) < 0)
		snprintf(why, whylen, "grant %" PRIu64 ": host \"%s\": %s", id, g->host, pwhy);
	else
		rc = 0;
	json_object_put(o);
	return rc;
}

char *
ctl_fleet_revoked_encode(uint64_t id, const char *user, int64_t uid, const char *gateway,
    int64_t at)
{
	struct json_object *o = json_object_new_object();

	return ctl_fleet_text(o, o != NULL &&
	    json_object_object_add(o, "id", json_object_new_uint64(id)) == 0 &&
	    ctl_fleet_add_str(o, "user", user) && ctl_fleet_add_i64(o, "uid", uid) &&
	    ctl_fleet_add_str(o, "gateway", gateway) && ctl_fleet_add_i64(o, "at", at));
}

int
ctl_fleet_id_parse(const char *tail, size_t len, uint64_t *id)
{
	uint64_t v = 0;

	if (len == 0 || len > 19 || tail[0] == '0')
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (tail[i] < '0' || tail[i] > '9')
			return -EINVAL;
		v = v * 10 + (uint64_t)(tail[i] - '0');
	}
	*id = v;
	return 0;
}

char *
ctl_fleet_bundle_encode(const char *policy, size_t plen, const char *sig, size_t slen,
    int64_t put_ms)
{
	struct json_object *o = json_object_new_object();

	return ctl_fleet_text(o, o != NULL && plen <= INT32_MAX && slen <= INT32_MAX &&
	    json_object_object_add(o, "policy", json_object_new_string_len(policy,
	    (int)plen)) == 0 &&
	    json_object_object_add(o, "minisig", json_object_new_string_len(sig, (int)slen)) == 0 &&
	    ctl_fleet_add_i64(o, "put_ms", put_ms));
}

/* Member k, a string, copied to a malloc'ed buffer of its length (NUL after). */
static bool
ctl_fleet_get_blob(struct json_object *o, const char *k, size_t max, char **dst, size_t *len)
{
	struct json_object *v;
	size_t n;

	if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_string) ||
	    (n = (size_t)json_object_get_string_len(v)) > max || (*dst = malloc(n + 1)) == NULL)
		return false;
	memcpy(*dst, json_object_get_string(v), n);
	(*dst)[n] = '\0';
	*len = n;
	return true;
}

int
ctl_fleet_bundle_decode(const char *val, size_t len, struct ctl_fleet_bundle *out, char *why,
    size_t whylen)
{
	struct json_object *o = ctl_fleet_parse(val, len, "bundle", why, whylen);

	memset(out, 0, sizeof(*out));
	if (o == NULL)
		return -EINVAL;
	if (!ctl_fleet_get_blob(o, "policy", CTL_BUNDLE_FILE_MAX, &out->policy,
	    &out->policy_len) ||
	    !ctl_fleet_get_blob(o, "minisig", CTL_BUNDLE_SIG_FILE_MAX, &out->minisig,
	    &out->minisig_len) || !ctl_fleet_get_i64(o, "put_ms", &out->put_ms)) {
		snprintf(why, whylen, "bundle: policy, minisig or put_ms missing, of the wrong "
		    "type or too large");
		ctl_fleet_bundle_clear(out);
		json_object_put(o);
		return -EINVAL;
	}
	json_object_put(o);
	return 0;
}

void
ctl_fleet_bundle_clear(struct ctl_fleet_bundle *b)
{
	free(b->policy);
	free(b->minisig);
	memset(b, 0, sizeof(*b));
}

char *
ctl_fleet_status_encode(const struct ctl_fleet_status *s)
{
	struct json_object *o = json_object_new_object(), *r = NULL;
	bool ok = o != NULL && ctl_fleet_add_str(o, "gateway", s->gateway) &&
	    ctl_fleet_add_str(o, "fleet", s->fleet) && ctl_fleet_add_str(o, "shard", s->shard) &&
	    json_object_object_add(o, "serial", json_object_new_uint64(s->serial)) == 0 &&
	    ctl_fleet_add_str(o, "digest", s->digest) && ctl_fleet_add_str(o, "source",
	    s->source != NULL ? s->source : "file") &&
	    json_object_object_add(o, "connected", json_object_new_boolean(s->connected)) == 0 &&
	    ctl_fleet_add_i64(o, "grants", s->grants) && ctl_fleet_add_i64(o, "seen", s->seen);

	if (ok && s->have_refused) {
		ok = (r = json_object_new_object()) != NULL &&
		    json_object_object_add(r, "serial",
		    json_object_new_uint64(s->refused_serial)) == 0 &&
		    ctl_fleet_add_str(r, "reason", s->refused_reason);
		if (!ok || json_object_object_add(o, "refused", r) != 0) {
			json_object_put(r);
			ok = false;
		}
	}
	return ctl_fleet_text(o, ok);
}

void
ctl_fleet_digest(const void *p, size_t len, char *hex)
{
	unsigned char h[crypto_hash_sha256_BYTES];

	crypto_hash_sha256(h, p, len);
	sodium_bin2hex(hex, CTL_FLEET_DIGEST_LEN + 1, h, sizeof(h));
}

char *
ctl_fleet_pending_encode(const struct ctl_fleet_pending *p)
{
	struct json_object *o = json_object_new_object();

	return ctl_fleet_text(o, o != NULL && ctl_fleet_add_str(o, "gateway", p->gateway) &&
	    json_object_object_add(o, "id", json_object_new_uint64(p->id)) == 0 &&
	    ctl_fleet_add_str(o, "vm", p->vm) && ctl_fleet_add_str(o, "name", p->name) &&
	    ctl_fleet_add_i64(o, "type", p->qtype) &&
	    ctl_fleet_add_i64(o, "first_seen", p->first_seen) &&
	    ctl_fleet_add_i64(o, "expires", p->expires));
}

int
ctl_fleet_pending_decode(const char *val, size_t len, struct ctl_fleet_pending *out,
    char *why, size_t whylen)
{
	struct json_object *o = ctl_fleet_parse(val, len, "pending", why, whylen);
	int64_t id, qtype;
	int rc = -EINVAL;

	memset(out, 0, sizeof(*out));
	if (o == NULL)
		return -EINVAL;
	if (!ctl_fleet_get_str(o, "gateway", out->gateway, sizeof(out->gateway)) ||
	    !ctl_fleet_get_str(o, "vm", out->vm, sizeof(out->vm)) ||
	    !ctl_fleet_get_str(o, "name", out->name, sizeof(out->name)) ||
	    !ctl_fleet_get_i64(o, "id", &id) || id <= 0 ||
	    !ctl_fleet_get_i64(o, "type", &qtype) || qtype < 0 || qtype > UINT16_MAX ||
	    !ctl_fleet_get_i64(o, "first_seen", &out->first_seen) ||
	    !ctl_fleet_get_i64(o, "expires", &out->expires))
		snprintf(why, whylen, "pending: a field is missing or of the wrong type");
	else if (!pol_fleet_word_ok(out->gateway, strlen(out->gateway)))
		snprintf(why, whylen, "pending: gateway \"%s\" is not a name", out->gateway);
	else {
		out->id = (uint64_t)id;
		out->qtype = (uint16_t)qtype;
		rc = 0;
	}
	json_object_put(o);
	return rc;
}

char *
ctl_fleet_decision_encode(const char *verdict, const char *name, const char *user,
    int64_t uid, int64_t at)
{
	struct json_object *o = json_object_new_object();

	return ctl_fleet_text(o, o != NULL && ctl_fleet_add_str(o, "verdict", verdict) &&
	    ctl_fleet_add_str(o, "name", name) &&
	    ctl_fleet_add_str(o, "user", user) && ctl_fleet_add_i64(o, "uid", uid) &&
	    ctl_fleet_add_i64(o, "at", at));
}

int
ctl_fleet_decision_decode(const char *val, size_t len, char *name, size_t namelen, char *user,
    size_t userlen, int64_t *uid, char *why, size_t whylen)
{
	struct json_object *o = ctl_fleet_parse(val, len, "decision", why, whylen);
	char verdict[8];
	int rc = -EINVAL;

	if (o == NULL)
		return -EINVAL;
	if (!ctl_fleet_get_str(o, "verdict", verdict, sizeof(verdict)) ||
	    !ctl_fleet_get_str(o, "name", name, namelen) ||
	    !ctl_fleet_get_str(o, "user", user, userlen) || !ctl_fleet_get_i64(o, "uid", uid))
		snprintf(why, whylen, "decision: a field is missing or of the wrong type");
	else if (strcmp(verdict, "deny") != 0)
		snprintf(why, whylen, "decision: \"%s\" is not one (deny; an approval is a "
		    "grant)", verdict);
	else
		rc = 0;
	json_object_put(o);
	return rc;
}

int
ctl_fleet_gw_id_parse(const char *tail, size_t len, char *gw, size_t gwlen, uint64_t *id)
{
	const char *slash = memchr(tail, '/', len);
	size_t glen;

	if (slash == NULL || (glen = (size_t)(slash - tail)) >= gwlen ||
	    !pol_fleet_word_ok(tail, glen) ||
	    ctl_fleet_id_parse(slash + 1, len - glen - 1, id) != 0)
		return -EINVAL;
	memcpy(gw, tail, glen);
	gw[glen] = '\0';
	return 0;
}

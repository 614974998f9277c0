/*
 * Keys and leases: put, get, a range by prefix paged at one revision, delete, and a
 * lease's grant, keepalive and revoke, each one gateway request (ctl_etcd_call()).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_etcd_int.h"

int64_t
ctl_etcd_i64(struct json_object *o, const char *field)
{
	struct json_object *v;
	const char *s;
	char *end;
	long long n;

	if (!json_object_object_get_ex(o, field, &v))
		return 0;
	if (json_object_is_type(v, json_type_int))
		return json_object_get_int64(v);
	if (!json_object_is_type(v, json_type_string))
		return 0;
	s = json_object_get_string(v);
	errno = 0;
	n = strtoll(s, &end, 10);
	return errno != 0 || end == s || *end != '\0' ? 0 : n;
}

static struct json_object *
etcd_i64_new(int64_t v)
{
	char s[24];

	snprintf(s, sizeof(s), "%" PRId64, v);
	return json_object_new_string(s);
}

int
ctl_etcd_add_b64(struct json_object *o, const char *field, const void *p, size_t n)
{
	struct json_object *s;
	char *enc;

	if ((enc = malloc(ctl_etcd_b64_len(n) + 1)) == NULL)
		return -ENOMEM;
	ctl_etcd_b64_encode(p, n, enc);
	s = json_object_new_string(enc);
	free(enc);
	if (s == NULL || json_object_object_add(o, field, s) < 0) {
		json_object_put(s);
		return -ENOMEM;
	}
	return 0;
}

/*
 * etcd's range [key, range_end): the prefix with its last byte below 0xff incremented and
 * what follows dropped; a prefix of 0xff bytes only (or "") has no end but "\0", all keys.
 */
int
ctl_etcd_add_range_end(struct json_object *o, const char *prefix)
{
	size_t n = strlen(prefix);
	uint8_t *end;
	int rc;

	if ((end = malloc(n + 1)) == NULL)
		return -ENOMEM;
	memcpy(end, prefix, n);
	while (n > 0 && end[n - 1] == 0xff)
		n--;
	if (n == 0)
		end[n++] = 0;
	else
		end[n - 1]++;
	rc = ctl_etcd_add_b64(o, "range_end", end, n);
	free(end);
	return rc;
}

/* The first key of a prefix: "" is "\0" (its terminator), since etcd takes no empty key. */
size_t
ctl_etcd_key_len(const char *prefix)
{
	return prefix[0] != '\0' ? strlen(prefix) : 1;
}

/* A base64 field into a fresh NUL-terminated buffer; absent is empty (jsonpb omits ""). */
static int
etcd_b64_field(struct json_object *o, const char *field, char **out, size_t *len)
{
	struct json_object *v;
	const char *s = "";
	size_t n = 0;

	if (json_object_object_get_ex(o, field, &v)) {
		if (!json_object_is_type(v, json_type_string))
			return -EPROTO;
		s = json_object_get_string(v);
		n = (size_t)json_object_get_string_len(v);
	}
	if ((*out = malloc(n / 4 * 3 + 1)) == NULL)
		return -ENOMEM;
	if (ctl_etcd_b64_decode(s, n, (uint8_t *)*out, len) < 0)
		return -EPROTO;
	(*out)[*len] = '\0';
	return 0;
}

void
ctl_etcd_kv_clear(struct ctl_etcd_kv *kv)
{
	free(kv->key);
	free(kv->value);
	*kv = (struct ctl_etcd_kv){ 0 };
}

void
ctl_etcd_kvs_free(struct ctl_etcd_kvs *kvs)
{
	for (size_t i = 0; i < kvs->n; i++)
		ctl_etcd_kv_clear(&kvs->kv[i]);
	free(kvs->kv);
	*kvs = (struct ctl_etcd_kvs){ 0 };
}

int
ctl_etcd_kv_parse(struct json_object *o, struct ctl_etcd_kv *kv)
{
	int rc;

	*kv = (struct ctl_etcd_kv){ 0 };
	if (!json_object_is_type(o, json_type_object))
		return -EPROTO;
	if ((rc = etcd_b64_field(o, "key", &kv->key, &kv->key_len)) < 0 ||
	    (rc = etcd_b64_field(o, "value", &kv->value, &kv->value_len)) < 0) {
		ctl_etcd_kv_clear(kv);
		return rc;
	}
	kv->create_rev = ctl_etcd_i64(o, "create_revision");
	kv->mod_rev = ctl_etcd_i64(o, "mod_revision");
	kv->version = ctl_etcd_i64(o, "version");
	kv->lease = ctl_etcd_i64(o, "lease");
	return 0;
}

/* header.revision of a reply. */
static int64_t
etcd_rev(struct json_object *resp)
{
	struct json_object *h;

	return json_object_object_get_ex(resp, "header", &h) ? ctl_etcd_i64(h, "revision") : 0;
}

static int
etcd_oom(struct ctl_etcd *c, struct json_object *req)
{
	json_object_put(req);
	return ctl_etcd_fail(c, -ENOMEM, "etcd: out of memory");
}

/* Sends req unless building it failed (!built), puts it; *rev (may be NULL): the reply's. */
static int
etcd_request(struct ctl_etcd *c, const char *path, struct json_object *req, bool built,
    struct json_object **resp, int64_t *rev)
{
	int rc;

	if (!built)
		return etcd_oom(c, req);
	rc = ctl_etcd_call(c, path, req, resp);
	json_object_put(req);
	if (rc == 0 && rev != NULL)
		*rev = etcd_rev(*resp);
	return rc;
}

int
ctl_etcd_put(struct ctl_etcd *c, const char *key, const void *val, size_t len, int64_t lease,
    int64_t *rev)
{
	struct json_object *req, *resp;
	int rc;

	req = json_object_new_object();
	rc = etcd_request(c, "/v3/kv/put", req, req != NULL &&
	    ctl_etcd_add_b64(req, "key", key, strlen(key)) == 0 &&
	    ctl_etcd_add_b64(req, "value", val, len) == 0 &&
	    (lease == 0 || json_object_object_add(req, "lease", etcd_i64_new(lease)) == 0),
	    &resp, rev);
	if (rc == 0)
		json_object_put(resp);
	return rc;
}

/* One page of a range: kvs appended to out, *more and *last (the last key's index). */
static int
etcd_range_page(struct ctl_etcd *c, struct json_object *req, struct ctl_etcd_kvs *out,
    bool *more)
{
	struct json_object *resp, *arr, *m;
	struct ctl_etcd_kv *kv;
	size_t n;
	int rc;

	if ((rc = ctl_etcd_call(c, "/v3/kv/range", req, &resp)) < 0)
		return rc;
	if (out->rev == 0)
		out->rev = etcd_rev(resp);
	*more = json_object_object_get_ex(resp, "more", &m) && json_object_get_boolean(m);
	n = json_object_object_get_ex(resp, "kvs", &arr) &&
	    json_object_is_type(arr, json_type_array) ? json_object_array_length(arr) : 0;
	if (n == 0) {
		json_object_put(resp);
		return *more ? ctl_etcd_fail(c, -EPROTO, "etcd: more keys but none sent") : 0;
	}
	if ((kv = realloc(out->kv, (out->n + n) * sizeof(*kv))) == NULL) {
		json_object_put(resp);
		return ctl_etcd_fail(c, -ENOMEM, "etcd: out of memory");
	}
	out->kv = kv;
	for (size_t i = 0; i < n; i++, out->n++)
		if ((rc = ctl_etcd_kv_parse(json_object_array_get_idx(arr, i),
		    &out->kv[out->n])) < 0)
			break;
	json_object_put(resp);
	return rc < 0 ? ctl_etcd_fail(c, rc, "etcd %s: malformed key in a range",
	    c->ep[c->cur]) : 0;
}

/*
 * Page after page from the key past the last one received ("key\0"), the revision pinned to
 * the first page's so that the pages make one snapshot.
 */
int
ctl_etcd_range(struct ctl_etcd *c, const char *prefix, struct ctl_etcd_kvs *out)
{
	struct json_object *req;
	bool more = true;
	int rc = 0;

	*out = (struct ctl_etcd_kvs){ 0 };
	while (more) {
		if ((req = json_object_new_object()) == NULL ||
		    ctl_etcd_add_range_end(req, prefix) < 0 ||
		    json_object_object_add(req, "limit", etcd_i64_new(c->page)) < 0 ||
		    (out->rev != 0 &&
		    json_object_object_add(req, "revision", etcd_i64_new(out->rev)) < 0)) {
			rc = etcd_oom(c, req);
			break;
		}
		if (out->n == 0) {
			rc = ctl_etcd_add_b64(req, "key", prefix, ctl_etcd_key_len(prefix));
		} else {
			const struct ctl_etcd_kv *last = &out->kv[out->n - 1];

			/* the NUL past every decoded key makes "key\0" */
			rc = ctl_etcd_add_b64(req, "key", last->key, last->key_len + 1);
		}
		if (rc < 0) {
			rc = etcd_oom(c, req);
			break;
		}
		rc = etcd_range_page(c, req, out, &more);
		json_object_put(req);
		if (rc < 0)
			break;
	}
	if (rc < 0)
		ctl_etcd_kvs_free(out);
	return rc;
}

int
ctl_etcd_get(struct ctl_etcd *c, const char *key, struct ctl_etcd_kv *out, int64_t *rev)
{
	struct json_object *req, *resp, *arr;
	int rc;

	*out = (struct ctl_etcd_kv){ 0 };
	req = json_object_new_object();
	if ((rc = etcd_request(c, "/v3/kv/range", req, req != NULL &&
	    ctl_etcd_add_b64(req, "key", key, strlen(key)) == 0, &resp, rev)) < 0)
		return rc;
	if (!json_object_object_get_ex(resp, "kvs", &arr) ||
	    !json_object_is_type(arr, json_type_array) || json_object_array_length(arr) == 0)
		rc = ctl_etcd_fail(c, -ENOENT, "etcd: %s: no such key", key);
	else if (ctl_etcd_kv_parse(json_object_array_get_idx(arr, 0), out) < 0)
		rc = ctl_etcd_fail(c, -EPROTO, "etcd %s: %s: malformed value", c->ep[c->cur], key);
	json_object_put(resp);
	return rc;
}

int
ctl_etcd_delete(struct ctl_etcd *c, const char *key, bool prefix, int64_t *deleted,
    int64_t *rev)
{
	struct json_object *req, *resp;
	int rc;

	req = json_object_new_object();
	if ((rc = etcd_request(c, "/v3/kv/deleterange", req, req != NULL &&
	    ctl_etcd_add_b64(req, "key", key, prefix ? ctl_etcd_key_len(key) : strlen(key)) == 0 &&
	    (!prefix || ctl_etcd_add_range_end(req, key) == 0), &resp, rev)) < 0)
		return rc;
	if (deleted != NULL)
		*deleted = ctl_etcd_i64(resp, "deleted");
	json_object_put(resp);
	return 0;
}

/* A lease request: {field: n}; the reply's ID and TTL. */
static int
etcd_lease(struct ctl_etcd *c, const char *path, const char *field, int64_t n, int64_t *id,
    int64_t *ttl)
{
	struct json_object *req, *resp, *res;
	int rc;

	req = json_object_new_object();
	if ((rc = etcd_request(c, path, req, req != NULL &&
	    json_object_object_add(req, field, etcd_i64_new(n)) == 0, &resp, NULL)) < 0)
		return rc;
	/* keepalive is a stream on the gateway: its one reply comes as {"result": ...} */
	if (!json_object_object_get_ex(resp, "result", &res))
		res = resp;
	if (id != NULL)
		*id = ctl_etcd_i64(res, "ID");
	if (ttl != NULL)
		*ttl = ctl_etcd_i64(res, "TTL");
	json_object_put(resp);
	return 0;
}

int
ctl_etcd_lease_grant(struct ctl_etcd *c, int64_t ttl_s, int64_t *id)
{
	int rc;

	if ((rc = etcd_lease(c, "/v3/lease/grant", "TTL", ttl_s, id, NULL)) == 0 && *id == 0)
		rc = ctl_etcd_fail(c, -EPROTO, "etcd %s: a lease without an ID", c->ep[c->cur]);
	return rc;
}

/* An expired lease is no error on the wire: a reply whose TTL is 0 (jsonpb omits it). */
int
ctl_etcd_lease_keepalive(struct ctl_etcd *c, int64_t id, int64_t *ttl)
{
	int64_t got = 0;
	int rc;

	if ((rc = etcd_lease(c, "/v3/lease/keepalive", "ID", id, NULL, &got)) < 0)
		return rc;
	if (ttl != NULL)
		*ttl = got;
	return got > 0 ? 0 :
	    ctl_etcd_fail(c, -ENOENT, "etcd: lease %" PRIx64 " has expired", (uint64_t)id);
}

int
ctl_etcd_lease_revoke(struct ctl_etcd *c, int64_t id)
{
	return etcd_lease(c, "/v3/lease/revoke", "ID", id, NULL, NULL);
}

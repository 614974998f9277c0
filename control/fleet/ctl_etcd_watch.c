/*
 * A watch on the gateway: one long POST of a create_request, answered by a stream of JSON
 * objects, one a response ({"result": {...}} or {"error": {...}}), each cut wherever TCP and
 * libcurl cut it. The write callback feeds a json-c tokener that keeps its state between
 * chunks and hands back each object once it is complete.
 *
 * The stream carries only what was asked at its start: the gateway reads no later request
 * from the body, so a watch is cancelled by closing its connection (etcd then drops the
 * watcher), not by a cancel_request.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_base.h"
#include "ctl_etcd_int.h"

struct etcd_watch {
	struct ctl_etcd *c;
	const char *ep;
	struct json_tokener *tok;
	size_t fed;			/* bytes of the object being read, bounded */
	int64_t *next_rev;
	ctl_etcd_watch_fn *fn;
	void *arg;
	int rc;				/* nonzero: why the stream is being ended */
	int code;			/* the gRPC code of an error etcd sent */
	bool created;
};

/* A batch of events to the callback, then *next_rev past its last revision. */
static int
watch_events(struct etcd_watch *w, struct json_object *arr, int64_t rev)
{
	size_t n = json_object_array_length(arr), got = 0;
	struct ctl_etcd_event *ev;
	int rc = 0;

	if (n == 0)
		return 0;
	if ((ev = calloc(n, sizeof(*ev))) == NULL)
		return ctl_etcd_fail(w->c, -ENOMEM, "etcd: out of memory");
	for (; got < n; got++) {
		struct json_object *e = json_object_array_get_idx(arr, got), *t, *kv;

		if (!json_object_object_get_ex(e, "kv", &kv) ||
		    ctl_etcd_kv_parse(kv, &ev[got].kv) < 0) {
			rc = ctl_etcd_fail(w->c, -EPROTO, "etcd %s: malformed watch event", w->ep);
			goto out;
		}
		/* jsonpb omits the enum's default, PUT */
		ev[got].type = json_object_object_get_ex(e, "type", &t) &&
		    strcmp(json_object_get_string(t), "DELETE") == 0 ?
		    CTL_ETCD_DELETE : CTL_ETCD_PUT;
	}
	rc = w->fn(w->arg, ev, n, rev);
	if (ev[n - 1].kv.mod_rev >= *w->next_rev)
		*w->next_rev = ev[n - 1].kv.mod_rev + 1;
out:
	for (size_t i = 0; i < got; i++)
		ctl_etcd_kv_clear(&ev[i].kv);
	free(ev);
	return rc;
}

/* An error: in the stream {"error": {grpc_code, message}}, before it {error, code, message}. */
static int
watch_error(struct etcd_watch *w, struct json_object *o, struct json_object *e)
{
	struct json_object *m;
	const char *msg;

	if (json_object_is_type(e, json_type_object)) {
		w->code = (int)ctl_etcd_i64(e, "grpc_code");
		msg = json_object_object_get_ex(e, "message", &m) ? json_object_get_string(m) : "";
	} else {
		w->code = (int)ctl_etcd_i64(o, "code");
		msg = json_object_get_string(e);
	}
	return ctl_etcd_grpc_fail(w->c, w->ep, w->code, msg);
}

/*
 * etcd cancelled the watch; cancel_reason is a gRPC error as text ("rpc error: code =
 * Unauthenticated desc = etcdserver: invalid auth token"): a refused token (which a restart
 * of etcd forgets) is told apart so that the watch authenticates again.
 */
static int
watch_cancelled(struct etcd_watch *w, struct json_object *r)
{
	struct json_object *v;
	const char *why = json_object_object_get_ex(r, "cancel_reason", &v) ?
	    json_object_get_string(v) : "";
	int rc = -ECONNRESET;

	if (strstr(why, "code = Unauthenticated") != NULL) {
		w->code = 16;
		rc = -EACCES;
	} else if (strstr(why, "code = PermissionDenied") != NULL) {
		rc = -EACCES;
	} else if (strstr(why, "no leader") != NULL) {
		rc = -ENOTCONN;
	}
	return ctl_etcd_fail(w->c, rc, "etcd %s: watch cancelled by etcd: %s", w->ep, why);
}

/* One response; nonzero ends the stream with it. */
static int
watch_message(struct etcd_watch *w, struct json_object *o)
{
	struct json_object *r, *h, *v;
	int64_t rev, compact;

	if (json_object_object_get_ex(o, "error", &v))
		return watch_error(w, o, v);
	if (!json_object_object_get_ex(o, "result", &r) ||
	    !json_object_is_type(r, json_type_object))
		return ctl_etcd_fail(w->c, -EPROTO, "etcd %s: not a watch response", w->ep);
	rev = json_object_object_get_ex(r, "header", &h) ? ctl_etcd_i64(h, "revision") : 0;
	if ((compact = ctl_etcd_i64(r, "compact_revision")) > 0)
		return ctl_etcd_fail(w->c, -ESTALE,
		    "etcd %s: revision %" PRId64 " compacted, oldest kept %" PRId64, w->ep,
		    *w->next_rev, compact);
	if (json_object_object_get_ex(r, "canceled", &v) && json_object_get_boolean(v))
		return watch_cancelled(w, r);
	if (json_object_object_get_ex(r, "created", &v) && json_object_get_boolean(v) &&
	    !w->created) {
		w->created = true;
		return w->fn(w->arg, NULL, 0, rev);
	}
	if (json_object_object_get_ex(r, "events", &v) && json_object_is_type(v, json_type_array))
		return watch_events(w, v, rev);
	return 0;			/* a progress notification */
}

/* A piece of the stream: every object it completes, the rest kept in the tokener. */
static size_t
watch_write(char *p, size_t size, size_t n, void *arg)
{
	struct etcd_watch *w = arg;
	size_t len = size * n, off = 0;

	while (off < len) {
		int chunk = len - off > INT32_MAX ? INT32_MAX : (int)(len - off);
		struct json_object *o = json_tokener_parse_ex(w->tok, p + off, chunk);
		enum json_tokener_error e = json_tokener_get_error(w->tok);
		int rc;

		if (o == NULL) {
			if (e != json_tokener_continue) {
				w->rc = ctl_etcd_fail(w->c, -EPROTO, "etcd %s: watch stream: %s",
				    w->ep, json_tokener_error_desc(e));
				return 0;
			}
			if ((w->fed += (size_t)chunk) > CTL_ETCD_BODY_MAX) {
				w->rc = ctl_etcd_fail(w->c, -EMSGSIZE,
				    "etcd %s: watch response over %u bytes", w->ep,
				    CTL_ETCD_BODY_MAX);
				return 0;
			}
			off += (size_t)chunk;
			continue;
		}
		off += json_tokener_get_parse_end(w->tok);
		json_tokener_reset(w->tok);
		w->fed = 0;
		rc = watch_message(w, o);
		json_object_put(o);
		if (rc != 0) {
			w->rc = rc;
			return 0;	/* ends the transfer */
		}
	}
	return len;
}

static int
watch_body(const char *prefix, int64_t rev, char **out)
{
	struct json_object *req, *cr;
	int rc = -ENOMEM;

	*out = NULL;
	if ((req = json_object_new_object()) == NULL || (cr = json_object_new_object()) == NULL)
		goto out;
	if (json_object_object_add(req, "create_request", cr) < 0) {
		json_object_put(cr);
		goto out;
	}
	if (ctl_etcd_add_b64(cr, "key", prefix, ctl_etcd_key_len(prefix)) < 0 ||
	    ctl_etcd_add_range_end(cr, prefix) < 0 ||
	    json_object_object_add(cr, "start_revision", json_object_new_int64(rev)) < 0)
		goto out;
	if ((*out = strdup(json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN))) != NULL)
		rc = 0;
out:
	json_object_put(req);
	return rc;
}

/* One stream on endpoint i until it ends; *connected: libcurl sent the request. */
static int
watch_stream(struct etcd_watch *w, size_t i, const char *body, bool *connected)
{
	struct ctl_etcd *c = w->c;
	char url[512], cerr[CURL_ERROR_SIZE] = "";
	struct curl_slist *h = NULL;
	curl_off_t pre = 0;
	CURL *easy = NULL;
	CURLcode cc;
	int rc;

	*connected = false;
	w->ep = c->ep[i];
	w->rc = 0;
	w->code = 0;
	w->fed = 0;
	json_tokener_reset(w->tok);
	if ((size_t)snprintf(url, sizeof(url), "%s/v3/watch", c->ep[i]) >= sizeof(url))
		return ctl_etcd_fail(c, -EINVAL, "etcd %s: endpoint too long", c->ep[i]);
	if ((h = ctl_etcd_headers(c, true)) == NULL || (easy = curl_easy_init()) == NULL) {
		rc = ctl_etcd_fail(c, -ENOMEM, "etcd: out of memory");
		goto out;
	}
	ctl_etcd_easy_setup(c, easy);
	curl_easy_setopt(easy, CURLOPT_URL, url);
	curl_easy_setopt(easy, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, watch_write);
	curl_easy_setopt(easy, CURLOPT_WRITEDATA, w);
	curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, cerr);
	curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, (long)c->connect_ms);
	cc = curl_easy_perform(easy);
	curl_easy_getinfo(easy, CURLINFO_PRETRANSFER_TIME_T, &pre);
	*connected = pre > 0;
	if (w->rc != 0)
		rc = w->rc;
	else if (cc == CURLE_ABORTED_BY_CALLBACK)
		rc = ctl_etcd_fail(c, -ECANCELED, "etcd %s: watch cancelled", c->ep[i]);
	else if (cc == CURLE_OK)
		rc = ctl_etcd_fail(c, -ECONNRESET, "etcd %s: watch stream closed", c->ep[i]);
	else if (!*connected)
		rc = ctl_etcd_fail(c, -ECONNREFUSED, "etcd %s: %s", c->ep[i], cerr);
	else
		rc = ctl_etcd_fail(c, -ECONNRESET, "etcd %s: watch stream: %s", c->ep[i],
		    cerr[0] != '\0' ? cerr : curl_easy_strerror(cc));
out:
	if (easy != NULL)
		curl_easy_cleanup(easy);
	curl_slist_free_all(h);
	return rc;
}

/*
 * The endpoints in turn while none connects; once one has, its end is the watch's, and the
 * next watch starts at the next endpoint (a member that lost its leader ends streams).
 */
static int
watch_endpoints(struct etcd_watch *w, const char *prefix)
{
	struct ctl_etcd *c = w->c;
	int rc = -ECONNREFUSED;

	for (size_t k = 0; k < c->n_ep; k++) {
		size_t i = (c->cur + k) % c->n_ep;
		char *body;
		bool connected;

		if (watch_body(prefix, *w->next_rev, &body) < 0)
			return ctl_etcd_fail(c, -ENOMEM, "etcd: out of memory");
		rc = watch_stream(w, i, body, &connected);
		free(body);
		if (connected || rc == -ECANCELED) {
			c->cur = rc == -ECONNRESET || rc == -ENOTCONN ? (i + 1) % c->n_ep : i;
			return rc;
		}
	}
	return rc;
}

int
ctl_etcd_watch(struct ctl_etcd *c, const char *prefix, int64_t *next_rev,
    ctl_etcd_watch_fn *fn, void *arg)
{
	struct etcd_watch w = {
		.c = c, .next_rev = next_rev, .fn = fn, .arg = arg,
	};
	int rc;

	if (atomic_load(&c->cancel))
		return ctl_etcd_fail(c, -ECANCELED, "etcd: cancelled");
	if (c->user != NULL && c->token == NULL &&
	    (rc = ctl_etcd_authenticate(c, ctl_now_ms() + c->timeout_ms)) < 0)
		return rc;
	if ((w.tok = json_tokener_new()) == NULL)
		return ctl_etcd_fail(c, -ENOMEM, "etcd: out of memory");
	rc = watch_endpoints(&w, prefix);
	/* a token that expired or did not survive a restart: once more with a new one */
	if (rc == -EACCES && w.code == 16 && c->user != NULL &&
	    (rc = ctl_etcd_authenticate(c, ctl_now_ms() + c->timeout_ms)) == 0)
		rc = watch_endpoints(&w, prefix);
	json_tokener_free(w.tok);
	return rc;
}

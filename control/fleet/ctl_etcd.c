/*
 * The client and its one request: an endpoint at a time from the last that answered,
 * failing over while no endpoint has taken the request or one refused it for want of a
 * leader (it cannot have been applied), a new token once when etcd refuses the one it
 * holds, all within one deadline.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_base.h"
#include "ctl_etcd_int.h"

/* A reply being read; NUL-terminated past len so that the JSON parser may be given it. */
struct etcd_body {
	char *p;
	size_t len;
	size_t cap;
};

int
ctl_etcd_fail(struct ctl_etcd *c, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	return rc;
}

const char *
ctl_etcd_error(const struct ctl_etcd *c)
{
	return c->err;
}

unsigned int
ctl_etcd_auths(const struct ctl_etcd *c)
{
	return c->auths;
}

void
ctl_etcd_cancel(struct ctl_etcd *c)
{
	atomic_store(&c->cancel, true);
}

void
ctl_etcd_free(struct ctl_etcd *c)
{
	if (c == NULL)
		return;
	for (size_t i = 0; i < c->n_ep; i++)
		free(c->ep[i]);
	free(c->ep);
	free(c->user);
	free(c->password);
	free(c->token);
	if (c->easy != NULL)
		curl_easy_cleanup(c->easy);
	free(c);
}

struct ctl_etcd *
ctl_etcd_new(const struct ctl_etcd_opts *o)
{
	struct ctl_etcd *c;

	if (o->n_endpoints == 0) {
		errno = EINVAL;
		return NULL;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK ||
	    (c = calloc(1, sizeof(*c))) == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	c->timeout_ms = o->timeout_ms != 0 ? o->timeout_ms : CTL_ETCD_TIMEOUT_MS;
	c->connect_ms = o->connect_ms != 0 ? o->connect_ms : CTL_ETCD_CONNECT_MS;
	c->page = o->page != 0 ? o->page : CTL_ETCD_PAGE;
	atomic_init(&c->cancel, false);
	if ((c->ep = calloc(o->n_endpoints, sizeof(*c->ep))) == NULL)
		goto oom;
	for (; c->n_ep < o->n_endpoints; c->n_ep++)
		if ((c->ep[c->n_ep] = strdup(o->endpoints[c->n_ep])) == NULL)
			goto oom;
	if (o->user != NULL && ((c->user = strdup(o->user)) == NULL ||
	    (c->password = strdup(o->password != NULL ? o->password : "")) == NULL))
		goto oom;
	if ((c->easy = curl_easy_init()) == NULL)
		goto oom;
	ctl_etcd_easy_setup(c, c->easy);
	return c;
oom:
	ctl_etcd_free(c);
	errno = ENOMEM;
	return NULL;
}

struct curl_slist *
ctl_etcd_headers(const struct ctl_etcd *c, bool hasleader)
{
	struct curl_slist *h = NULL, *n;
	char auth[1024];

	if ((n = curl_slist_append(h, "Content-Type: application/json")) == NULL)
		goto oom;
	h = n;
	/* The gateway hands Grpc-Metadata-* headers to etcd as metadata: "hasleader: true". */
	if (hasleader) {
		if ((n = curl_slist_append(h, "Grpc-Metadata-Hasleader: true")) == NULL)
			goto oom;
		h = n;
	}
	if (c->token != NULL) {
		if ((size_t)snprintf(auth, sizeof(auth), "Authorization: %s", c->token) >=
		    sizeof(auth))
			goto oom;
		if ((n = curl_slist_append(h, auth)) == NULL)
			goto oom;
		h = n;
	}
	return h;
oom:
	curl_slist_free_all(h);
	return NULL;
}

/* libcurl's tick, at least once a second even on a silent connection: the cancel check. */
static int
etcd_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
    curl_off_t ulnow)
{
	struct ctl_etcd *c = arg;

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	return atomic_load(&c->cancel) ? 1 : 0;
}

void
ctl_etcd_easy_setup(struct ctl_etcd *c, CURL *easy)
{
	curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);	/* a thread: no SIGALRM */
	curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(easy, CURLOPT_POST, 1L);
	curl_easy_setopt(easy, CURLOPT_TCP_NODELAY, 1L);
	/* A peer that vanished without a FIN ends a silent watch within about 11 s. */
	curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(easy, CURLOPT_TCP_KEEPIDLE, 5L);
	curl_easy_setopt(easy, CURLOPT_TCP_KEEPINTVL, 2L);
	curl_easy_setopt(easy, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(easy, CURLOPT_XFERINFOFUNCTION, etcd_progress);
	curl_easy_setopt(easy, CURLOPT_XFERINFODATA, c);
}

static size_t
etcd_body_write(char *p, size_t size, size_t n, void *arg)
{
	struct etcd_body *b = arg;
	size_t len = size * n;

	if (len >= CTL_ETCD_BODY_MAX - b->len)
		return 0;
	if (b->len + len + 1 > b->cap) {
		size_t cap = b->cap != 0 ? b->cap : 4096;
		char *np;

		while (cap < b->len + len + 1)
			cap *= 2;
		if ((np = realloc(b->p, cap)) == NULL)
			return 0;
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, len);
	b->len += len;
	b->p[b->len] = '\0';
	return len;
}

/*
 * One exchange with endpoint i. *taken: the request may have reached etcd (libcurl got as
 * far as sending it), so it must not be sent to another endpoint.
 */
static int
etcd_attempt(struct ctl_etcd *c, size_t i, const char *path, const char *body, int64_t left_ms,
    struct etcd_body *out, long *status, bool *taken)
{
	char url[512], cerr[CURL_ERROR_SIZE] = "";
	struct curl_slist *h;
	curl_off_t pre = 0;
	CURLcode cc;

	*taken = false;
	if ((size_t)snprintf(url, sizeof(url), "%s%s", c->ep[i], path) >= sizeof(url))
		return ctl_etcd_fail(c, -EINVAL, "etcd %s: endpoint too long", c->ep[i]);
	if ((h = ctl_etcd_headers(c, true)) == NULL)
		return ctl_etcd_fail(c, -ENOMEM, "etcd: out of memory");
	out->len = 0;
	curl_easy_setopt(c->easy, CURLOPT_URL, url);
	curl_easy_setopt(c->easy, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c->easy, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c->easy, CURLOPT_WRITEFUNCTION, etcd_body_write);
	curl_easy_setopt(c->easy, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(c->easy, CURLOPT_ERRORBUFFER, cerr);
	curl_easy_setopt(c->easy, CURLOPT_TIMEOUT_MS, (long)left_ms);
	curl_easy_setopt(c->easy, CURLOPT_CONNECTTIMEOUT_MS,
	    (long)(left_ms < c->connect_ms ? left_ms : c->connect_ms));
	cc = curl_easy_perform(c->easy);
	curl_easy_setopt(c->easy, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(c->easy, CURLOPT_ERRORBUFFER, NULL);
	curl_slist_free_all(h);
	curl_easy_getinfo(c->easy, CURLINFO_PRETRANSFER_TIME_T, &pre);
	*taken = pre > 0;
	switch (cc) {
	case CURLE_OK:
		curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, status);
		return 0;
	case CURLE_ABORTED_BY_CALLBACK:
		return ctl_etcd_fail(c, -ECANCELED, "etcd %s: cancelled", c->ep[i]);
	case CURLE_OPERATION_TIMEDOUT:
		return ctl_etcd_fail(c, -ETIMEDOUT, "etcd %s: no answer within %u ms (%s)",
		    c->ep[i], c->timeout_ms, cerr);
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
		return ctl_etcd_fail(c, -ECONNREFUSED, "etcd %s: %s", c->ep[i], cerr);
	case CURLE_WRITE_ERROR:
		return ctl_etcd_fail(c, -EMSGSIZE, "etcd %s: reply too large or out of memory",
		    c->ep[i]);
	default:
		return ctl_etcd_fail(c, -ECONNRESET, "etcd %s: %s", c->ep[i],
		    cerr[0] != '\0' ? cerr : curl_easy_strerror(cc));
	}
}

/*
 * The endpoints in turn from the last that answered. One that took the request and then
 * failed ends the call (it may have been applied), and the next call starts at the next
 * endpoint: a member that accepts and does not answer may be cut off from quorum.
 */
static int
etcd_send(struct ctl_etcd *c, const char *path, const char *body, int64_t deadline_ms,
    struct etcd_body *out, long *status)
{
	int rc = -ECONNREFUSED;

	for (size_t k = 0; k < c->n_ep; k++) {
		size_t i = (c->cur + k) % c->n_ep;
		int64_t left = deadline_ms - ctl_now_ms();
		bool taken;

		if (left <= 0)
			return ctl_etcd_fail(c, -ETIMEDOUT,
			    "etcd: no endpoint answered within %u ms", c->timeout_ms);
		if ((rc = etcd_attempt(c, i, path, body, left, out, status, &taken)) == 0) {
			c->cur = i;
			return 0;
		}
		if (taken || rc == -ECANCELED) {
			c->cur = (i + 1) % c->n_ep;
			return rc;
		}
	}
	return rc;
}

int
ctl_etcd_grpc_fail(struct ctl_etcd *c, const char *ep, int code, const char *msg)
{
	int rc;

	switch (code) {
	case 3:		/* InvalidArgument, also a wrong password or no user */
		rc = strstr(msg, "authentication failed") != NULL ||
		    strstr(msg, "user name is empty") != NULL ? -EACCES : -EINVAL;
		break;
	case 4:		/* DeadlineExceeded */
		rc = -ETIMEDOUT;
		break;
	case 5:		/* NotFound */
		rc = -ENOENT;
		break;
	case 7:		/* PermissionDenied */
	case 16:	/* Unauthenticated */
		rc = -EACCES;
		break;
	case 8:		/* ResourceExhausted: a request over etcd's size limit */
		rc = -EMSGSIZE;
		break;
	case 9:		/* FailedPrecondition */
		rc = -EPERM;
		break;
	case 11:	/* OutOfRange: "required revision has been compacted" */
		rc = -ESTALE;
		break;
	case 14:	/* Unavailable: no leader, stopping */
		rc = -ENOTCONN;
		break;
	default:
		rc = -EIO;
		break;
	}
	return ctl_etcd_fail(c, rc, "etcd %s: %s", ep, msg);
}

/* The first JSON value of the reply, which must be an object. */
static int
etcd_parse(struct ctl_etcd *c, const struct etcd_body *b, long status, struct json_object **out)
{
	struct json_tokener *tok;
	struct json_object *o;

	if (b->len == 0 || b->len > INT32_MAX)
		return ctl_etcd_fail(c, -EPROTO, "etcd %s: HTTP %ld, %s reply", c->ep[c->cur],
		    status, b->len == 0 ? "empty" : "oversized");
	if ((tok = json_tokener_new()) == NULL)
		return ctl_etcd_fail(c, -ENOMEM, "etcd: out of memory");
	o = json_tokener_parse_ex(tok, b->p, (int)b->len);
	json_tokener_free(tok);
	if (o == NULL || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return ctl_etcd_fail(c, -EPROTO, "etcd %s: HTTP %ld, not an etcd reply",
		    c->ep[c->cur], status);
	}
	*out = o;
	return 0;
}

/* A reply that is not 200: the gateway's {"error","code","message"}. */
static int
etcd_reply_error(struct ctl_etcd *c, struct json_object *o, long status, int *code)
{
	struct json_object *v;
	const char *msg = NULL;

	*code = json_object_object_get_ex(o, "code", &v) ? json_object_get_int(v) : -1;
	if (json_object_object_get_ex(o, "message", &v) ||
	    json_object_object_get_ex(o, "error", &v))
		msg = json_object_get_string(v);
	if (*code < 0 || msg == NULL)
		return ctl_etcd_fail(c, -EPROTO, "etcd %s: HTTP %ld without an error",
		    c->ep[c->cur], status);
	return ctl_etcd_grpc_fail(c, c->ep[c->cur], *code, msg);
}

/*
 * Sends req and parses the reply; a reply that is not 200 becomes -errno and *code. With
 * hasleader, a member that knows it has no leader refuses before doing anything ("no
 * leader"), so the request goes on to the next member instead of waiting out the timeout.
 */
static int
etcd_exchange(struct ctl_etcd *c, const char *path, const char *body, int64_t deadline_ms,
    struct json_object **resp, int *code)
{
	struct etcd_body b = { 0 };
	struct json_object *o = NULL;
	long status = 0;
	int rc = -ECONNREFUSED;

	for (size_t tries = 0; tries < c->n_ep; tries++) {
		*code = 0;
		if ((rc = etcd_send(c, path, body, deadline_ms, &b, &status)) < 0 ||
		    (rc = etcd_parse(c, &b, status, &o)) < 0)
			break;
		if (status == 200) {
			*resp = o;
			break;
		}
		rc = etcd_reply_error(c, o, status, code);
		json_object_put(o);
		if (*code != 14 || strstr(c->err, "no leader") == NULL)
			break;
		c->cur = (c->cur + 1) % c->n_ep;
	}
	free(b.p);
	return rc;
}

int
ctl_etcd_authenticate(struct ctl_etcd *c, int64_t deadline_ms)
{
	struct json_object *req, *resp = NULL, *tok;
	int rc, code;

	free(c->token);
	c->token = NULL;
	if ((req = json_object_new_object()) == NULL ||
	    json_object_object_add(req, "name", json_object_new_string(c->user)) < 0 ||
	    json_object_object_add(req, "password", json_object_new_string(c->password)) < 0) {
		json_object_put(req);
		return ctl_etcd_fail(c, -ENOMEM, "etcd: out of memory");
	}
	rc = etcd_exchange(c, "/v3/auth/authenticate",
	    json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN), deadline_ms, &resp, &code);
	json_object_put(req);
	if (rc < 0)
		return rc;
	if (!json_object_object_get_ex(resp, "token", &tok) ||
	    !json_object_is_type(tok, json_type_string))
		rc = ctl_etcd_fail(c, -EPROTO, "etcd %s: authenticate without a token",
		    c->ep[c->cur]);
	else if ((c->token = strdup(json_object_get_string(tok))) == NULL)
		rc = ctl_etcd_fail(c, -ENOMEM, "etcd: out of memory");
	else
		c->auths++;
	json_object_put(resp);
	return rc;
}

int
ctl_etcd_call(struct ctl_etcd *c, const char *path, struct json_object *req,
    struct json_object **resp)
{
	int64_t deadline = ctl_now_ms() + c->timeout_ms;
	const char *body;
	int rc, code;

	if (atomic_load(&c->cancel))
		return ctl_etcd_fail(c, -ECANCELED, "etcd: cancelled");
	if ((body = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN)) == NULL)
		return ctl_etcd_fail(c, -ENOMEM, "etcd: out of memory");
	if (c->user != NULL && c->token == NULL && (rc = ctl_etcd_authenticate(c, deadline)) < 0)
		return rc;
	rc = etcd_exchange(c, path, body, deadline, resp, &code);
	/* Unauthenticated: the token expired (simple tokens live 5 min) or etcd restarted. */
	if (rc < 0 && code == 16 && c->user != NULL) {
		if ((rc = ctl_etcd_authenticate(c, deadline)) < 0)
			return rc;
		rc = etcd_exchange(c, path, body, deadline, resp, &code);
	}
	return rc;
}

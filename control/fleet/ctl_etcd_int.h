/*
 * What the client's files share: the client itself, one request with its failover and
 * re-authentication, and the JSON pieces of etcd's messages.
 */
#ifndef CTL_ETCD_INT_H
#define CTL_ETCD_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "ctl_etcd.h"

/* A reply larger than this is refused: etcd's own limit on a request is 1.5 MiB by default. */
#define CTL_ETCD_BODY_MAX	(64u << 20)

struct ctl_etcd {
	char **ep;
	size_t n_ep;
	size_t cur;			/* the endpoint that answered last */
	char *user;
	char *password;
	char *token;			/* NULL: none yet, or etcd refused it */
	unsigned int timeout_ms;
	unsigned int connect_ms;
	unsigned int page;
	unsigned int auths;
	CURL *easy;			/* kept: its connection stays alive between requests */
	atomic_bool cancel;
	char err[256];
};

/* Sets c's message and returns rc (a -errno). */
int ctl_etcd_fail(struct ctl_etcd *c, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The headers a request carries: JSON, the token when there is one, hasleader if asked. */
struct curl_slist *ctl_etcd_headers(const struct ctl_etcd *c, bool hasleader);

/* Options every transfer of c shares: timeouts, keepalive, the cancel check. */
void ctl_etcd_easy_setup(struct ctl_etcd *c, CURL *easy);

/* A gateway error ({"error","code","message"} or a stream's) as -errno, with c's message. */
int ctl_etcd_grpc_fail(struct ctl_etcd *c, const char *ep, int code, const char *msg);

/* Obtains a token by c's credentials, before deadline_ms (ctl_now_ms()). */
int ctl_etcd_authenticate(struct ctl_etcd *c, int64_t deadline_ms);

/*
 * POSTs req to path and parses the reply into *resp (the caller puts it), trying the
 * endpoints in turn from the last good one while none has taken the request, and once more
 * with a new token if etcd refused the token. All within c->timeout_ms.
 */
int ctl_etcd_call(struct ctl_etcd *c, const char *path, struct json_object *req,
    struct json_object **resp);

/* o[field] as int64 (the gateway sends them as strings); 0 when absent or not a number. */
int64_t ctl_etcd_i64(struct json_object *o, const char *field);

/* Adds field = base64(p, n) to o; -ENOMEM. */
int ctl_etcd_add_b64(struct json_object *o, const char *field, const void *p, size_t n);

/* The range_end of a prefix: the prefix with its last byte below 0xff plus one. */
int ctl_etcd_add_range_end(struct json_object *o, const char *prefix);

/* The bytes of a prefix's first key: "" is "\0", all keys (etcd takes no empty key). */
size_t ctl_etcd_key_len(const char *prefix);

/* An etcd KeyValue object into kv (cleared first); -EPROTO when malformed. */
int ctl_etcd_kv_parse(struct json_object *o, struct ctl_etcd_kv *kv);

/* base64 (RFC 4648 s4, padded): encoded length, encode, strict decode (-EPROTO). */
size_t ctl_etcd_b64_len(size_t n);
void ctl_etcd_b64_encode(const uint8_t *p, size_t n, char *out);
int ctl_etcd_b64_decode(const char *s, size_t len, uint8_t *out, size_t *out_len);

#endif

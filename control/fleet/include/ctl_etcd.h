#ifndef CTL_ETCD_H
#define CTL_ETCD_H
/*
 * A client of etcd 3.4's /v3 JSON gateway (gRPC-gateway over HTTP/1.1: keys and values are
 * base64 in JSON, 64-bit integers are strings) on libcurl's easy interface and json-c.
 *
 * Threading: every call blocks for up to its timeout, so it runs in a thread of its own and
 * never in the daemon's main loop; the fleet agent posts results to the loop over its queue.
 * A thread rather than curl_multi on the loop's poll because a call is a sequence
 * (authenticate, send, authenticate again when the token is refused and resend, fail over
 * to the next endpoint on a connect error, page through a long range at one revision,
 * resume a watch): in a thread that is a few lines of straight code, on curl_multi every
 * step would be a state of a machine threaded through callbacks. The loop's latency then
 * does not depend on etcd by construction rather than by the care taken in every step.
 *
 * A struct ctl_etcd belongs to one thread at a time; ctl_etcd_cancel() is the one call
 * safe from any thread. A watch holds its thread, so a process that watches and writes
 * keeps two clients.
 *
 * Every int function returns 0 or -errno; on failure ctl_etcd_error() says why, naming the
 * endpoint and etcd's message ("etcd http://127.0.0.1:2379: etcdserver: permission
 * denied"). -EACCES: refused by etcd's auth; -ENOENT: no such key or lease; -ETIMEDOUT: no
 * answer within the timeout (a put that cannot reach quorum ends so); -ENOTCONN: every
 * member asked knows it has no leader (requests carry hasleader, so such a member refuses
 * at once and the next is asked); -ECONNREFUSED: no endpoint accepted a connection;
 * -ESTALE: the revision asked for was compacted; -ECANCELED: ctl_etcd_cancel() was called;
 * -EPROTO: a reply that is not etcd's.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CTL_ETCD_TIMEOUT_MS	2000	/* a whole call, all endpoints tried included */
#define CTL_ETCD_CONNECT_MS	500	/* one endpoint's TCP connect */
#define CTL_ETCD_PAGE		1000	/* keys a range request asks for at a time */

struct ctl_etcd_opts {
	const char *const *endpoints;	/* "http://127.0.0.1:2379", ...; tried in turn */
	size_t n_endpoints;
	const char *user;		/* NULL: etcd without auth */
	const char *password;
	unsigned int timeout_ms;	/* 0: CTL_ETCD_TIMEOUT_MS */
	unsigned int connect_ms;	/* 0: CTL_ETCD_CONNECT_MS */
	unsigned int page;		/* 0: CTL_ETCD_PAGE */
};

/* A key and its value, decoded; both NUL-terminated past their length, owned by the kv. */
struct ctl_etcd_kv {
	char *key;
	size_t key_len;
	char *value;
	size_t value_len;
	int64_t create_rev;
	int64_t mod_rev;
	int64_t version;
	int64_t lease;			/* 0: none */
};

/* The keys under a prefix, all at revision rev, sorted by key. */
struct ctl_etcd_kvs {
	struct ctl_etcd_kv *kv;
	size_t n;
	int64_t rev;
};

enum ctl_etcd_ev_type {
	CTL_ETCD_PUT,
	CTL_ETCD_DELETE,		/* kv.value is empty, kv.mod_rev the deletion's */
};

struct ctl_etcd_event {
	enum ctl_etcd_ev_type type;
	struct ctl_etcd_kv kv;
};

/*
 * Called by ctl_etcd_watch() once with n == 0 when the watch is in place (the agent's
 * "connected"), then with each batch of events, in revision order; ev and what it points
 * to live until the callback returns. rev is the store's revision when etcd sent the batch.
 * A nonzero return ends the watch, which returns it.
 */
typedef int ctl_etcd_watch_fn(void *arg, const struct ctl_etcd_event *ev, size_t n,
    int64_t rev);

/*
 * A client of the endpoints and credentials in o (copied). Connects lazily: no call here
 * talks to etcd. It initialises libcurl (curl_global_init), so the first one is made before
 * the threads that use them start. Returns NULL with errno EINVAL (no endpoint) or ENOMEM.
 */
struct ctl_etcd *ctl_etcd_new(const struct ctl_etcd_opts *o);
void ctl_etcd_free(struct ctl_etcd *c);

/* Why the last call failed; valid until the next call on c. */
const char *ctl_etcd_error(const struct ctl_etcd *c);

/* Tokens obtained so far: one at the first call, one more each time etcd refused one. */
unsigned int ctl_etcd_auths(const struct ctl_etcd *c);

/*
 * Ends whatever c is doing and fails every later call with -ECANCELED: for shutdown, from
 * any thread. A blocked call notices within about a second (libcurl's progress tick).
 */
void ctl_etcd_cancel(struct ctl_etcd *c);

/* Sets key to len bytes of val, under lease (0: none). *rev (may be NULL): the put's. */
int ctl_etcd_put(struct ctl_etcd *c, const char *key, const void *val, size_t len,
    int64_t lease, int64_t *rev);

/* key's value into *out (release with ctl_etcd_kv_clear()); -ENOENT when absent. */
int ctl_etcd_get(struct ctl_etcd *c, const char *key, struct ctl_etcd_kv *out, int64_t *rev);

/*
 * Every key starting with prefix ("" for all), paged CTL_ETCD_PAGE at a time but all at
 * the revision of the first page, so the list is one snapshot to watch on from
 * out->rev + 1. Release with ctl_etcd_kvs_free().
 */
int ctl_etcd_range(struct ctl_etcd *c, const char *prefix, struct ctl_etcd_kvs *out);

/* Deletes key, or every key under it when prefix; *deleted and *rev may be NULL. */
int ctl_etcd_delete(struct ctl_etcd *c, const char *key, bool prefix, int64_t *deleted,
    int64_t *rev);

/* A lease of ttl_s seconds into *id. */
int ctl_etcd_lease_grant(struct ctl_etcd *c, int64_t ttl_s, int64_t *id);

/* Renews lease id once; *ttl (may be NULL): seconds granted. -ENOENT: it has expired. */
int ctl_etcd_lease_keepalive(struct ctl_etcd *c, int64_t id, int64_t *ttl);

/* Ends lease id and deletes its keys; -ENOENT when it had already ended. */
int ctl_etcd_lease_revoke(struct ctl_etcd *c, int64_t id);

/*
 * Watches every key under prefix from revision *next_rev, calling fn as described above,
 * until the stream ends. It asks etcd to end the stream when its member loses the leader
 * (the hasleader metadata), so a member cut off from quorum is not silence. *next_rev is
 * moved past every batch delivered, so calling again resumes without missing or repeating
 * an event. Returns fn's nonzero value; -ECANCELED after ctl_etcd_cancel(); -ESTALE when
 * *next_rev was compacted (list again with ctl_etcd_range(), watch from its rev + 1);
 * otherwise the stream's end: -ECONNRESET (closed), -ENOTCONN (no leader), -ECONNREFUSED...
 * The caller waits a little and calls again.
 */
int ctl_etcd_watch(struct ctl_etcd *c, const char *prefix, int64_t *next_rev,
    ctl_etcd_watch_fn *fn, void *arg);

void ctl_etcd_kv_clear(struct ctl_etcd_kv *kv);
void ctl_etcd_kvs_free(struct ctl_etcd_kvs *kvs);

#endif

/*
 * namegatectl's side of the control socket (protocol in ctl_sock.h): one connection per
 * request, one JSON line back. json-c parses the reply; no DPDK.
 */
#ifndef CTL_CLIENT_H
#define CTL_CLIENT_H

#include <stddef.h>

#define CTL_CLIENT_TIMEOUT_MS	30000	/* a reload may compile a large policy first */
#define CTL_CLIENT_REPLY_MAX	(256u << 20)	/* bindings of a million-entry table fit */

struct json_object;

struct ctl_reply {
	char *text;			/* the reply as received, newline dropped; NUL-terminated */
	size_t len;
	struct json_object *json;	/* text parsed */
	const char *error;		/* the daemon's "error", or NULL; aliases json */
};

/*
 * Sends {"cmd":cmd[,"vm":vm][,"host":host]} (vm, host may be NULL) to the daemon at path
 * and waits up to timeout_ms for the reply. Returns 0 with *r filled, also when the daemon
 * answered with an error (r->error), or -errno with a one-line reason in err (errlen
 * bytes) that says plainly when namegate is not running: -ENOENT (no socket) or
 * -ECONNREFUSED (nobody listening). Free *r with ctl_reply_free() after a 0 return.
 */
int ctl_client_call(const char *path, const char *cmd, const char *vm, const char *host,
    int timeout_ms, struct ctl_reply *r, char *err, size_t errlen);

/*
 * The same with any string members: kv holds key, value pairs and ends with a NULL key
 * ({"cmd", "grant", "vm", "agent1", ..., NULL}); a NULL value leaves its key out.
 */
int ctl_client_request(const char *path, const char *const *kv, int timeout_ms,
    struct ctl_reply *r, char *err, size_t errlen);

/* Frees what ctl_client_call() filled in; zeroes *r. */
void ctl_reply_free(struct ctl_reply *r);

#endif /* CTL_CLIENT_H */

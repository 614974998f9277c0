/*
 * Control socket server: one non-blocking listener and up to CTL_SOCK_CLIENTS_MAX clients,
 * each a small state machine (read one request line, then write one reply, then close)
 * with a deadline, all multiplexed by one poll(2) per ctl_sock_poll() call. Nothing here
 * blocks: a client that stalls costs a slot until its deadline, never the event loop.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <linux/sockios.h>

#include "ctl_sock.h"

#define CTL_REQ_DEPTH	4	/* a request is one flat object */
#define CTL_DRAIN_READS	16	/* of 4 KiB, before closing a client */

enum ctl_cmd {
	CTL_CMD_STATUS,
	CTL_CMD_STATS,
	CTL_CMD_BINDINGS,
	CTL_CMD_FLOWS,
	CTL_CMD_RELOAD,
	CTL_CMD_CHECK,
	CTL_CMD_SUGGEST,
	CTL_CMD_GRANT,
	CTL_CMD_GRANTS,
	CTL_CMD_REVOKE,
	CTL_CMD_PENDING,
	CTL_CMD_APPROVE,
	CTL_CMD_DENY,
	CTL_CMD_MAX
};

#define CTL_ARG_VM	0x1	/* "vm" accepted */
#define CTL_ARG_VM_REQ	0x2	/* "vm" required */
#define CTL_ARG_HOST	0x4	/* "host" required */
#define CTL_ARG_FOR	0x8	/* "for" required, "reason" accepted */
#define CTL_ARG_ID	0x10	/* "id" required */
#define CTL_ARG_FOR_OPT	0x20	/* "for" accepted, not required */

static const struct {
	const char *name;
	unsigned int args;
} ctl_cmds[CTL_CMD_MAX] = {
	[CTL_CMD_STATUS] = { "status", 0 },
	[CTL_CMD_STATS] = { "stats", CTL_ARG_VM },
	[CTL_CMD_BINDINGS] = { "bindings", CTL_ARG_VM | CTL_ARG_VM_REQ },
	[CTL_CMD_FLOWS] = { "flows", CTL_ARG_VM | CTL_ARG_VM_REQ },
	[CTL_CMD_RELOAD] = { "reload", 0 },
	[CTL_CMD_CHECK] = { "check", CTL_ARG_VM | CTL_ARG_VM_REQ | CTL_ARG_HOST },
	[CTL_CMD_SUGGEST] = { "suggest", CTL_ARG_VM | CTL_ARG_VM_REQ },
	[CTL_CMD_GRANT] = { "grant", CTL_ARG_VM | CTL_ARG_VM_REQ | CTL_ARG_HOST | CTL_ARG_FOR },
	[CTL_CMD_GRANTS] = { "grants", CTL_ARG_VM },
	[CTL_CMD_REVOKE] = { "revoke", CTL_ARG_ID },
	[CTL_CMD_PENDING] = { "pending", CTL_ARG_VM },
	[CTL_CMD_APPROVE] = { "approve", CTL_ARG_ID | CTL_ARG_FOR_OPT },
	[CTL_CMD_DENY] = { "deny", CTL_ARG_ID },
};

/* A request's string members; NULL when absent. */
struct ctl_args {
	const char *vm, *host, *dur, *reason, *id;
};

enum ctl_conn_state {
	CTL_CONN_READ,		/* collecting the request line */
	CTL_CONN_WRITE,		/* sending resp */
};

struct ctl_conn {
	int fd;
	enum ctl_conn_state state;
	bool is_error;		/* resp is an error reply (counted as such) */
	int64_t deadline;	/* CLOCK_MONOTONIC ms */
	size_t len;		/* bytes in req */
	char req[CTL_SOCK_REQ_MAX];
	char *resp;		/* owned; one line, newline included */
	size_t resp_len, resp_off;
	int outq;		/* reply bytes the client had not read when sending stalled */
};

struct ctl_sock {
	int lfd;
	char *path;
	dev_t dev;		/* what we bound at path, so close removes only that */
	ino_t ino;
	const struct ctl_sock_ops *ops;
	void *arg;
	int timeout_ms;
	size_t nconns;
	struct ctl_conn conns[CTL_SOCK_CLIENTS_MAX];
	struct pollfd pfd[CTL_SOCK_CLIENTS_MAX + 1 + CTL_SOCK_WAIT_FDS];	/* clients, listener, the caller's */
	struct ctl_sock_counters cnt;
};

static int64_t
ctl_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void __attribute__((format(printf, 3, 4)))
ctl_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* mkdir -p for the directory part of path; only the directories we create get mode. */
static int
ctl_mkdir_parents(const char *path, mode_t mode)
{
	char *dir, *p;
	struct stat st;
	int rc = 0;

	if ((dir = strdup(path)) == NULL)
		return -errno;
	if ((p = strrchr(dir, '/')) == NULL || p == dir)
		goto out;
	*p = '\0';
	if (stat(dir, &st) == 0) {
		rc = S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
		goto out;
	}
	for (p = dir + 1; ; p++) {
		bool last = *p == '\0';

		if (*p != '/' && !last)
			continue;
		*p = '\0';
		if (mkdir(dir, mode) == 0) {
			/* mkdir honours the umask; the mode is the contract. */
			if (chmod(dir, mode) < 0) {
				rc = -errno;
				goto out;
			}
		} else if (errno != EEXIST) {
			rc = -errno;
			goto out;
		}
		if (last)
			break;
		*p = '/';
	}
out:
	free(dir);
	return rc;
}

static int
ctl_sun_set(struct sockaddr_un *sun, const char *path)
{
	size_t n = strlen(path);

	if (n == 0 || n >= sizeof(sun->sun_path))
		return -ENAMETOOLONG;
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	memcpy(sun->sun_path, path, n + 1);
	return 0;
}

/*
 * Is a daemon listening on path? A refused connection means a socket left by one that
 * died; a full backlog (EAGAIN) still means someone is there.
 */
static bool
ctl_sock_live(const struct sockaddr_un *sun)
{
	int fd, rc;

	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0)
		return false;
	rc = connect(fd, (const struct sockaddr *)sun, sizeof(*sun));
	rc = rc == 0 || errno == EAGAIN || errno == EINPROGRESS;
	close(fd);
	return rc;
}

struct ctl_sock *
ctl_sock_open(const char *path, const struct ctl_sock_ops *ops, void *arg, int timeout_ms,
    char *err, size_t errlen)
{
	struct sockaddr_un sun, tmp_sun;
	struct ctl_sock *s = NULL;
	char tmp[sizeof(sun.sun_path) + 32];
	bool bound = false;
	struct stat st;
	int rc;

	if (ctl_sun_set(&sun, path) < 0) {
		ctl_err(err, errlen, "%s: path too long for a UNIX socket", path);
		errno = ENAMETOOLONG;
		return NULL;
	}
	/*
	 * Bound under a temporary name, chmod'ed, then renamed over path: the socket never
	 * appears at path with the umask's mode, and a stale socket is replaced atomically.
	 */
	snprintf(tmp, sizeof(tmp), "%s.%ld", path, (long)getpid());
	if (ctl_sun_set(&tmp_sun, tmp) < 0) {
		ctl_err(err, errlen, "%s: path too long for a UNIX socket", path);
		errno = ENAMETOOLONG;
		return NULL;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL) {
		rc = -errno;
		ctl_err(err, errlen, "%s: %s", path, strerror(-rc));
		goto fail;
	}
	s->lfd = -1;
	if ((s->path = strdup(path)) == NULL) {
		rc = -errno;
		ctl_err(err, errlen, "%s: %s", path, strerror(-rc));
		goto fail;
	}
	s->ops = ops;
	s->arg = arg;
	s->timeout_ms = timeout_ms > 0 ? timeout_ms : CTL_SOCK_TIMEOUT_MS;
	if ((rc = ctl_mkdir_parents(path, CTL_SOCK_DIR_MODE)) < 0) {
		ctl_err(err, errlen, "%s: cannot create its directory: %s", path, strerror(-rc));
		goto fail;
	}
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			rc = -EEXIST;
			ctl_err(err, errlen, "%s: exists and is not a socket", path);
			goto fail;
		}
		if (ctl_sock_live(&sun)) {
			rc = -EADDRINUSE;
			ctl_err(err, errlen, "%s: another namegate is listening there", path);
			goto fail;
		}
	}
	if ((s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0) {
		rc = -errno;
		ctl_err(err, errlen, "%s: socket: %s", path, strerror(-rc));
		goto fail;
	}
	unlink(tmp);		/* left by a crashed daemon that had our pid */
	if (bind(s->lfd, (struct sockaddr *)&tmp_sun, sizeof(tmp_sun)) < 0) {
		rc = -errno;
		ctl_err(err, errlen, "%s: bind: %s", tmp, strerror(-rc));
		goto fail;
	}
	bound = true;
	if (chmod(tmp, CTL_SOCK_MODE) < 0 || listen(s->lfd, CTL_SOCK_CLIENTS_MAX) < 0 ||
	    rename(tmp, path) < 0 || stat(path, &st) < 0) {
		rc = -errno;
		ctl_err(err, errlen, "%s: %s", path, strerror(-rc));
		goto fail;
	}
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	return s;
fail:
	if (bound)
		unlink(tmp);
	if (s != NULL) {
		if (s->lfd >= 0)
			close(s->lfd);
		free(s->path);
		free(s);
	}
	errno = -rc;
	return NULL;
}

static void
ctl_conn_drop(struct ctl_sock *s, size_t i)
{
	struct ctl_conn *c = &s->conns[i];

	close(c->fd);
	free(c->resp);
	/* The last one moves into the hole; ctl_sock_poll walks downwards because of it. */
	if (i != s->nconns - 1)
		*c = s->conns[s->nconns - 1];
	s->nconns--;
}

/* Takes ownership of the NUL-terminated text in body and appends the newline. */
static void
ctl_conn_reply(struct ctl_conn *c, char *body, size_t len, bool is_error)
{
	body[len] = '\n';	/* the caller left room */
	c->resp = body;
	c->resp_len = len + 1;
	c->resp_off = 0;
	c->is_error = is_error;
	c->state = CTL_CONN_WRITE;
}

/* {"error":msg}; false when even that cannot be allocated. */
static bool
ctl_conn_error(struct ctl_conn *c, const char *msg)
{
	struct json_object *o;
	const char *text;
	size_t len;
	char *body;

	if ((o = json_object_new_object()) == NULL)
		return false;
	if (json_object_object_add(o, "error", json_object_new_string(msg)) < 0 ||
	    (text = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE, &len)) == NULL ||
	    (body = malloc(len + 1)) == NULL) {
		json_object_put(o);
		return false;
	}
	memcpy(body, text, len);
	json_object_put(o);
	ctl_conn_reply(c, body, len, true);
	return true;
}

static bool __attribute__((format(printf, 2, 3)))
ctl_conn_errorf(struct ctl_conn *c, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return ctl_conn_error(c, msg);
}

/* The callback's return value; *missing when the ops table has none for cmd. */
static int
ctl_call(const struct ctl_sock *s, enum ctl_cmd cmd, const struct ctl_args *a, FILE *out,
    bool *missing)
{
	const struct ctl_sock_ops *o = s->ops;
	const char *vm = a->vm, *host = a->host;

	*missing = false;
	switch (cmd) {
	case CTL_CMD_STATUS:
		if (o->status != NULL)
			return o->status(out, s->arg);
		break;
	case CTL_CMD_STATS:
		if (o->stats != NULL)
			return o->stats(out, vm, s->arg);
		break;
	case CTL_CMD_BINDINGS:
		if (o->bindings != NULL)
			return o->bindings(out, vm, s->arg);
		break;
	case CTL_CMD_FLOWS:
		if (o->flows != NULL)
			return o->flows(out, vm, s->arg);
		break;
	case CTL_CMD_RELOAD:
		if (o->reload != NULL)
			return o->reload(out, s->arg);
		break;
	case CTL_CMD_CHECK:
		if (o->check != NULL)
			return o->check(out, vm, host, s->arg);
		break;
	case CTL_CMD_SUGGEST:
		if (o->suggest != NULL)
			return o->suggest(out, vm, s->arg);
		break;
	case CTL_CMD_GRANT:
		if (o->grant != NULL) {
			struct ctl_grant_req r = { .vm = vm, .host = host, .dur = a->dur,
				.reason = a->reason };

			return o->grant(out, &r, s->arg);
		}
		break;
	case CTL_CMD_GRANTS:
		if (o->grants != NULL)
			return o->grants(out, vm, s->arg);
		break;
	case CTL_CMD_REVOKE:
		if (o->revoke != NULL)
			return o->revoke(out, a->id, s->arg);
		break;
	case CTL_CMD_PENDING:
		if (o->pending != NULL)
			return o->pending(out, vm, s->arg);
		break;
	case CTL_CMD_APPROVE:
		if (o->approve != NULL)
			return o->approve(out, a->id, a->dur, s->arg);
		break;
	case CTL_CMD_DENY:
		if (o->deny != NULL)
			return o->deny(out, a->id, s->arg);
		break;
	case CTL_CMD_MAX:
		break;
	}
	*missing = true;
	return 0;
}

/*
 * Runs the callback and turns what it wrote into the reply: re-serialised on one line
 * when it is one JSON value, so clients can rely on "one line, then EOF".
 */
static bool
ctl_conn_run(struct ctl_sock *s, struct ctl_conn *c, enum ctl_cmd cmd, const struct ctl_args *a)
{
	struct json_tokener *tok = NULL;
	struct json_object *val = NULL;
	const char *name = ctl_cmds[cmd].name, *text;
	char *buf = NULL, *body;
	size_t len = 0, n;
	bool ok = false, missing;
	FILE *out;
	int rc;

	if ((out = open_memstream(&buf, &len)) == NULL)
		return ctl_conn_error(c, "out of memory");
	rc = ctl_call(s, cmd, a, out, &missing);
	if (fclose(out) != 0 || buf == NULL) {
		free(buf);
		return ctl_conn_error(c, "out of memory");
	}
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' ' || buf[len - 1] == '\r' ||
	    buf[len - 1] == '\t'))
		buf[--len] = '\0';
	if (missing) {
		ok = ctl_conn_errorf(c, "%s is not supported by this daemon", name);
		goto out;
	}
	if (rc < 0) {
		ok = ctl_conn_error(c, len > 0 && strlen(buf) == len ? buf : strerror(-rc));
		goto out;
	}
	if (rc > 0) {
		ok = ctl_conn_errorf(c, "internal: the %s callback returned %d", name, rc);
		goto out;
	}
	if (len == 0 || len > INT_MAX || strlen(buf) != len) {
		ok = ctl_conn_errorf(c, "internal: the %s reply is %s", name,
		    len == 0 ? "empty" : len > INT_MAX ? "too large" : "not text");
		goto out;
	}
	if ((tok = json_tokener_new()) == NULL) {
		ok = ctl_conn_error(c, "out of memory");
		goto out;
	}
	val = json_tokener_parse_ex(tok, buf, (int)len);
	if (val == NULL || json_tokener_get_parse_end(tok) != len) {
		enum json_tokener_error e = json_tokener_get_error(tok);

		ok = ctl_conn_errorf(c, "internal: the %s reply is not one JSON value: %s", name,
		    val != NULL ? "text after the value" : e == json_tokener_continue ?
		    "incomplete JSON" : json_tokener_error_desc(e));
		goto out;
	}
	if ((text = json_object_to_json_string_length(val, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE, &n)) == NULL || (body = malloc(n + 1)) == NULL) {
		ok = ctl_conn_error(c, "out of memory");
		goto out;
	}
	memcpy(body, text, n);
	ctl_conn_reply(c, body, n, false);
	ok = true;
out:
	if (val != NULL)
		json_object_put(val);
	if (tok != NULL)
		json_tokener_free(tok);
	free(buf);
	return ok;
}

/* A string member, or NULL with why set when it is absent or not a clean string. */
static const char *
ctl_req_str(struct json_object *v, const char *key, char *why, size_t whylen)
{
	const char *str;

	if (!json_object_is_type(v, json_type_string)) {
		snprintf(why, whylen, "\"%s\" must be a string", key);
		return NULL;
	}
	str = json_object_get_string(v);
	if ((size_t)json_object_get_string_len(v) != strlen(str) || *str == '\0') {
		snprintf(why, whylen, "\"%s\" must be a non-empty string without NUL", key);
		return NULL;
	}
	return str;
}

/*
 * Parses the request line (without its newline) and dispatches it; false only when no
 * reply could be built at all (out of memory).
 */
static bool
ctl_conn_request(struct ctl_sock *s, struct ctl_conn *c, const char *line, size_t len)
{
	struct ctl_args a = { 0 };
	const char *cmdname = NULL;
	struct json_tokener *tok = NULL;
	struct json_object *req = NULL;
	enum ctl_cmd cmd = CTL_CMD_MAX;
	char why[160] = "";
	bool ok;

	while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
		len--;
	if (memchr(line, '\0', len) != NULL) {
		snprintf(why, sizeof(why), "NUL byte in the request");
		goto bad;
	}
	if ((tok = json_tokener_new_ex(CTL_REQ_DEPTH)) == NULL)
		return ctl_conn_error(c, "out of memory");
	req = json_tokener_parse_ex(tok, line, (int)len);
	if (req == NULL) {
		enum json_tokener_error e = json_tokener_get_error(tok);

		snprintf(why, sizeof(why), "%s", e == json_tokener_continue ?
		    "incomplete JSON" : json_tokener_error_desc(e));
		goto bad;
	}
	if (json_tokener_get_parse_end(tok) != len) {
		snprintf(why, sizeof(why), "text after the JSON object");
		goto bad;
	}
	if (!json_object_is_type(req, json_type_object)) {
		snprintf(why, sizeof(why), "the request must be a JSON object");
		goto bad;
	}
	json_object_object_foreach(req, key, val) {
		if (strcmp(key, "cmd") == 0) {
			if ((cmdname = ctl_req_str(val, key, why, sizeof(why))) == NULL)
				goto bad;
		} else if (strcmp(key, "vm") == 0) {
			if ((a.vm = ctl_req_str(val, key, why, sizeof(why))) == NULL)
				goto bad;
		} else if (strcmp(key, "host") == 0) {
			if ((a.host = ctl_req_str(val, key, why, sizeof(why))) == NULL)
				goto bad;
		} else if (strcmp(key, "for") == 0) {
			if ((a.dur = ctl_req_str(val, key, why, sizeof(why))) == NULL)
				goto bad;
		} else if (strcmp(key, "reason") == 0) {
			if ((a.reason = ctl_req_str(val, key, why, sizeof(why))) == NULL)
				goto bad;
		} else if (strcmp(key, "id") == 0) {
			if ((a.id = ctl_req_str(val, key, why, sizeof(why))) == NULL)
				goto bad;
		} else {
			snprintf(why, sizeof(why), "unknown key \"%.64s\"", key);
			goto bad;
		}
	}
	if (cmdname == NULL) {
		snprintf(why, sizeof(why), "no \"cmd\"");
		goto bad;
	}
	for (cmd = 0; cmd < CTL_CMD_MAX; cmd++)
		if (strcmp(ctl_cmds[cmd].name, cmdname) == 0)
			break;
	if (cmd == CTL_CMD_MAX) {
		ok = ctl_conn_errorf(c, "unknown command \"%.64s\"", cmdname);
		goto out;
	}
	if (a.vm != NULL && !(ctl_cmds[cmd].args & CTL_ARG_VM)) {
		snprintf(why, sizeof(why), "%s takes no \"vm\"", cmdname);
		goto bad;
	}
	if (a.vm == NULL && (ctl_cmds[cmd].args & CTL_ARG_VM_REQ)) {
		snprintf(why, sizeof(why), "%s needs \"vm\"", cmdname);
		goto bad;
	}
	if ((a.host == NULL) != !(ctl_cmds[cmd].args & CTL_ARG_HOST)) {
		snprintf(why, sizeof(why), "%s %s \"host\"", cmdname,
		    a.host == NULL ? "needs" : "takes no");
		goto bad;
	}
	if (!(a.dur != NULL && (ctl_cmds[cmd].args & CTL_ARG_FOR_OPT)) &&
	    (a.dur == NULL) != !(ctl_cmds[cmd].args & CTL_ARG_FOR)) {
		snprintf(why, sizeof(why), "%s %s \"for\"", cmdname,
		    a.dur == NULL ? "needs" : "takes no");
		goto bad;
	}
	if (a.reason != NULL && !(ctl_cmds[cmd].args & CTL_ARG_FOR)) {
		snprintf(why, sizeof(why), "%s takes no \"reason\"", cmdname);
		goto bad;
	}
	if ((a.id == NULL) != !(ctl_cmds[cmd].args & CTL_ARG_ID)) {
		snprintf(why, sizeof(why), "%s %s \"id\"", cmdname,
		    a.id == NULL ? "needs" : "takes no");
		goto bad;
	}
	ok = ctl_conn_run(s, c, cmd, &a);
	goto out;
bad:
	ok = ctl_conn_errorf(c, "bad request: %s", why);
out:
	if (req != NULL)
		json_object_put(req);
	if (tok != NULL)
		json_tokener_free(tok);
	return ok;
}

static int ctl_conn_outq(const struct ctl_conn *c);

/*
 * Sends what the socket takes. Returns 1 when the reply is complete, 0 to wait for
 * POLLOUT, -1 when the client is gone.
 */
static int
ctl_conn_write(struct ctl_sock *s, struct ctl_conn *c)
{
	while (c->resp_off < c->resp_len) {
		ssize_t n = send(c->fd, c->resp + c->resp_off, c->resp_len - c->resp_off,
		    MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				c->outq = ctl_conn_outq(c);
				return 0;
			}
			return -1;
		}
		c->resp_off += (size_t)n;
		/* A slow reader is fine as long as it keeps reading. */
		c->deadline = ctl_now_ms() + s->timeout_ms;
	}
	return 1;
}

/* Bytes sent to the client that it has not read yet, or -1. */
static int
ctl_conn_outq(const struct ctl_conn *c)
{
	int n;

	return ioctl(c->fd, SIOCOUTQ, &n) == 0 ? n : -1;
}

/* Reads what arrived. Returns as ctl_conn_write(), 1 meaning a reply is now queued. */
static int
ctl_conn_read(struct ctl_sock *s, struct ctl_conn *c)
{
	char *nl;

	for (;;) {
		size_t room = sizeof(c->req) - c->len;
		ssize_t n;

		if (room == 0) {
			/* The request must fit in req, newline included. */
			s->cnt.oversize++;
			if (!ctl_conn_errorf(c, "bad request: longer than %d bytes",
			    CTL_SOCK_REQ_MAX))
				return -1;
			break;
		}
		n = recv(c->fd, c->req + c->len, room, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return -1;
		}
		if (n == 0) {
			/* EOF ends the request as a newline would; nothing at all: gone. */
			if (c->len == 0)
				return -1;
			if (!ctl_conn_request(s, c, c->req, c->len))
				return -1;
			break;
		}
		nl = memchr(c->req + c->len, '\n', (size_t)n);
		c->len += (size_t)n;
		if (nl != NULL) {
			/* Anything after the newline is ignored: one request per connection. */
			if (!ctl_conn_request(s, c, c->req, (size_t)(nl - c->req)))
				return -1;
			break;
		}
	}
	c->deadline = ctl_now_ms() + s->timeout_ms;
	return 1;
}

/*
 * Closing a UNIX socket with unread bytes resets the peer, which can then lose the reply
 * it has not read yet; so what an oversized or chatty client sent is read away first.
 */
static void
ctl_conn_drain(int fd)
{
	char buf[4096];

	for (int i = 0; i < CTL_DRAIN_READS; i++)
		if (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) <= 0)
			break;
}

/* Moves c along after poll said it is ready; returns 1 when its reply completed. */
static int
ctl_conn_step(struct ctl_sock *s, size_t i, short revents)
{
	struct ctl_conn *c = &s->conns[i];
	int rc;

	if (c->state == CTL_CONN_READ) {
		if (!(revents & (POLLIN | POLLHUP | POLLERR)))
			return 0;
		if ((rc = ctl_conn_read(s, c)) <= 0)
			goto done;
	}
	rc = ctl_conn_write(s, c);
done:
	if (rc == 0)
		return 0;
	if (rc < 0) {
		s->cnt.aborted++;
	} else {
		if (c->is_error)
			s->cnt.errors++;
		else
			s->cnt.replied++;
		ctl_conn_drain(c->fd);
	}
	ctl_conn_drop(s, i);
	return rc > 0;
}

static void
ctl_sock_accept(struct ctl_sock *s)
{
	while (s->nconns < CTL_SOCK_CLIENTS_MAX) {
		struct ctl_conn *c;
		int fd;

		fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return;		/* EAGAIN, or out of descriptors: the backlog waits */
		}
		s->cnt.accepted++;
		c = &s->conns[s->nconns++];
		c->fd = fd;
		c->state = CTL_CONN_READ;
		c->is_error = false;
		c->deadline = ctl_now_ms() + s->timeout_ms;
		c->len = 0;
		c->resp = NULL;
		c->resp_len = c->resp_off = 0;
		c->outq = 0;
	}
}

/* One turn; also waits for the nextra fds to be readable, and says which in ready[]. */
static int
ctl_sock_turn(struct ctl_sock *s, int timeout_ms, const int *extra, size_t nextra, bool *ready)
{
	int64_t now = ctl_now_ms();
	int wait = timeout_ms > 0 ? timeout_ms : 0;
	size_t nfds = 0, nconns = s->nconns, first_extra;
	int done = 0, rc;

	for (size_t i = 0; i < nconns; i++) {
		int64_t left = s->conns[i].deadline - now;

		if (left < wait)
			wait = left > 0 ? (int)left : 0;
		s->pfd[i] = (struct pollfd){ .fd = s->conns[i].fd,
		    .events = s->conns[i].state == CTL_CONN_READ ? POLLIN : POLLOUT };
	}
	nfds = nconns;
	/* Full: leave the listener alone and let new clients wait in its backlog. */
	if (nconns < CTL_SOCK_CLIENTS_MAX)
		s->pfd[nfds++] = (struct pollfd){ .fd = s->lfd, .events = POLLIN };
	first_extra = nfds;
	for (size_t i = 0; i < nextra; i++)	/* a negative fd is ignored by poll(2) */
		s->pfd[nfds++] = (struct pollfd){ .fd = extra[i], .events = POLLIN };
	if ((rc = poll(s->pfd, nfds, wait)) < 0)
		return errno == EINTR ? 0 : -errno;
	for (size_t i = 0; i < nextra; i++)
		ready[i] = (s->pfd[first_extra + i].revents & POLLIN) != 0;
	nfds = first_extra;	/* the loops below know the clients and the listener only */
	/* Downwards: ctl_conn_drop() fills slot i from the end, which is already done. */
	for (size_t i = nconns; i-- > 0; )
		if (s->pfd[i].revents != 0)
			done += ctl_conn_step(s, i, s->pfd[i].revents);
	if (nfds > nconns && (s->pfd[nconns].revents & POLLIN)) {
		size_t first = s->nconns;

		ctl_sock_accept(s);
		/* The request is usually there already; answer it without another turn. */
		for (size_t i = s->nconns; i-- > first; )
			done += ctl_conn_step(s, i, POLLIN);
	}
	now = ctl_now_ms();
	for (size_t i = s->nconns; i-- > 0; ) {
		struct ctl_conn *c = &s->conns[i];
		int q;

		if (c->deadline > now)
			continue;
		/*
		 * A UNIX socket polls writable again only once most of its buffer has been
		 * read, so a client reading slowly but steadily shows its progress here.
		 */
		if (c->state == CTL_CONN_WRITE && (q = ctl_conn_outq(c)) >= 0 && q < c->outq) {
			c->outq = q;
			c->deadline = now + s->timeout_ms;
			continue;
		}
		s->cnt.timeouts++;
		ctl_conn_drop(s, i);
	}
	return done;
}

int
ctl_sock_poll(struct ctl_sock *s, int timeout_ms)
{
	return ctl_sock_turn(s, timeout_ms, NULL, 0, NULL);
}

int
ctl_sock_wait(struct ctl_sock *s, int timeout_ms, const int *fds, size_t nfds, bool *ready)
{
	if (nfds > CTL_SOCK_WAIT_FDS)
		return -EINVAL;
	for (size_t i = 0; i < nfds; i++)
		ready[i] = false;
	return ctl_sock_turn(s, timeout_ms, fds, nfds, ready);
}

void
ctl_sock_counters(const struct ctl_sock *s, struct ctl_sock_counters *out)
{
	*out = s->cnt;
}

void
ctl_sock_close(struct ctl_sock *s)
{
	struct stat st;

	if (s == NULL)
		return;
	while (s->nconns > 0)
		ctl_conn_drop(s, s->nconns - 1);
	close(s->lfd);
	/* A newer daemon may have taken the path over; its socket is not ours to remove. */
	if (stat(s->path, &st) == 0 && st.st_dev == s->dev && st.st_ino == s->ino)
		unlink(s->path);
	free(s->path);
	free(s);
}

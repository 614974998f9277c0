/*
 * Control socket client: connect, send one request line, read to EOF, parse. A blocking
 * socket whose timeouts are reset to what is left of one overall deadline, so a stuck
 * daemon costs at most timeout_ms.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <json-c/json.h>

#include "ctl_base.h"
#include "ctl_client.h"

/* Arms SO_RCVTIMEO and SO_SNDTIMEO with what is left; false when nothing is. */
static bool
cc_arm(int fd, int64_t deadline)
{
	int64_t left = deadline - ctl_now_ms();
	struct timeval tv;

	if (left <= 0)
		return false;
	tv.tv_sec = left / 1000;
	tv.tv_usec = (left % 1000) * 1000;
	return setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0 &&
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) == 0;
}

/* The request line, newline included; NULL when out of memory. */
static char *
cc_request(const char *const *kv, size_t *len)
{
	struct json_object *o;
	const char *text;
	char *line = NULL;
	size_t n;

	if ((o = json_object_new_object()) == NULL)
		return NULL;
	for (; kv[0] != NULL; kv += 2)
		if (kv[1] != NULL &&
		    json_object_object_add(o, kv[0], json_object_new_string(kv[1])) < 0)
			goto out;
	text = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE, &n);
	if (text == NULL || (line = malloc(n + 2)) == NULL)
		goto out;
	memcpy(line, text, n);
	line[n] = '\n';
	line[n + 1] = '\0';
	*len = n + 1;
out:
	json_object_put(o);
	return line;
}

static int
cc_connect(int fd, const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int rc;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		ctl_err(err, errlen, "%s: path too long for a UNIX socket", path);
		return -ENAMETOOLONG;
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0)
		return 0;
	rc = -errno;
	switch (rc) {
	case -ENOENT:
		ctl_err(err, errlen, "namegate is not running (no control socket at %s)", path);
		break;
	case -ECONNREFUSED:
		ctl_err(err, errlen, "namegate is not running (nothing listens on %s)", path);
		break;
	case -EACCES:
	case -EPERM:
		ctl_err(err, errlen, "%s: permission denied (the socket is for root and its "
		    "group: control_socket_group, or control_socket_readonly_group for the "
		    "read-only one)", path);
		break;
	case -EAGAIN:
	case -ETIMEDOUT:
		ctl_err(err, errlen, "%s: namegate accepts no connection (busy?)", path);
		break;
	default:
		ctl_err(err, errlen, "%s: %s", path, strerror(-rc));
		break;
	}
	return rc;
}

int
ctl_client_call(const char *path, const char *cmd, const char *vm, const char *host,
    int timeout_ms, struct ctl_reply *r, char *err, size_t errlen)
{
	const char *kv[] = { "cmd", cmd, "vm", vm, "host", host, NULL };

	return ctl_client_request(path, kv, timeout_ms, r, err, errlen);
}

int
ctl_client_request(const char *path, const char *const *kv, int timeout_ms,
    struct ctl_reply *r, char *err, size_t errlen)
{
	int64_t deadline = ctl_now_ms() + (timeout_ms > 0 ? timeout_ms : CTL_CLIENT_TIMEOUT_MS);
	struct json_tokener *tok = NULL;
	size_t reqlen = 0, off, cap = 0;
	char *req = NULL, *buf = NULL;
	int fd, rc;

	memset(r, 0, sizeof(*r));
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) {
		rc = -errno;
		ctl_err(err, errlen, "socket: %s", strerror(-rc));
		return rc;
	}
	if ((req = cc_request(kv, &reqlen)) == NULL) {
		rc = -ENOMEM;
		ctl_err(err, errlen, "out of memory");
		goto out;
	}
	if (!cc_arm(fd, deadline)) {
		rc = -errno;
		ctl_err(err, errlen, "setsockopt: %s", strerror(-rc));
		goto out;
	}
	if ((rc = cc_connect(fd, path, err, errlen)) < 0)
		goto out;
	for (off = 0; off < reqlen; ) {
		ssize_t n = send(fd, req + off, reqlen - off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			ctl_err(err, errlen, "%s: sending the request: %s", path, strerror(-rc));
			goto out;
		}
		off += (size_t)n;
	}
	/* The server reads to a newline or EOF; saying EOF too costs nothing. */
	shutdown(fd, SHUT_WR);
	for (off = 0; ; ) {
		ssize_t n;

		if (cap - off < 4096) {
			char *nb;

			cap = cap == 0 ? 16384 : cap * 2;
			if (cap > CTL_CLIENT_REPLY_MAX + 1) {
				rc = -EMSGSIZE;
				ctl_err(err, errlen, "%s: the reply is longer than %u bytes", path,
				    CTL_CLIENT_REPLY_MAX);
				goto out;
			}
			if ((nb = realloc(buf, cap)) == NULL) {
				rc = -ENOMEM;
				ctl_err(err, errlen, "out of memory");
				goto out;
			}
			buf = nb;
		}
		if (!cc_arm(fd, deadline)) {
			errno = EAGAIN;
			n = -1;
		} else {
			n = recv(fd, buf + off, cap - off - 1, 0);
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			if (rc == -EAGAIN || rc == -EWOULDBLOCK)
				ctl_err(err, errlen, "%s: no reply from namegate within %d ms",
				    path, timeout_ms > 0 ? timeout_ms : CTL_CLIENT_TIMEOUT_MS);
			else
				ctl_err(err, errlen, "%s: reading the reply: %s", path,
				    strerror(-rc));
			goto out;
		}
		if (n == 0)
			break;
		off += (size_t)n;
	}
	while (off > 0 && (buf[off - 1] == '\n' || buf[off - 1] == '\r'))
		off--;
	if (off == 0) {
		rc = -EPROTO;
		ctl_err(err, errlen, "%s: namegate closed the connection without a reply", path);
		goto out;
	}
	buf[off] = '\0';
	if ((tok = json_tokener_new()) == NULL) {
		rc = -ENOMEM;
		ctl_err(err, errlen, "out of memory");
		goto out;
	}
	r->json = off <= INT_MAX ? json_tokener_parse_ex(tok, buf, (int)off) : NULL;
	if (r->json == NULL || json_tokener_get_parse_end(tok) != off) {
		rc = -EPROTO;
		ctl_err(err, errlen, "%s: the reply is not JSON", path);
		goto out;
	}
	if (json_object_is_type(r->json, json_type_object)) {
		struct json_object *e;

		if (json_object_object_get_ex(r->json, "error", &e))
			r->error = json_object_get_string(e);
	}
	r->text = buf;
	r->len = off;
	buf = NULL;
	rc = 0;
out:
	if (rc < 0 && r->json != NULL) {
		json_object_put(r->json);
		r->json = NULL;
	}
	if (tok != NULL)
		json_tokener_free(tok);
	free(buf);
	free(req);
	close(fd);
	return rc;
}

void
ctl_reply_free(struct ctl_reply *r)
{
	if (r->json != NULL)
		json_object_put(r->json);
	free(r->text);
	memset(r, 0, sizeof(*r));
}

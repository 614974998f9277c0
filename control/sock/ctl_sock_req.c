/*
 * A control socket request: one line of flat JSON, checked against the command table
 * (which members each command takes and needs), handed to the daemon's callback, and its
 * output or error made the client's reply.
 */
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "ctl_sock_int.h"

#define CTL_REQ_DEPTH	4	/* a request is one flat object */

int
ctl_sock_reply_json(FILE *out, const char *key, struct json_object *value)
{
	struct json_object *o = value;

	if (value == NULL)
		return -ENOMEM;
	if (key != NULL && ((o = json_object_new_object()) == NULL ||
	    json_object_object_add(o, key, value) < 0)) {
		json_object_put(value);
		json_object_put(o);
		return -ENOMEM;
	}
	fputs(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE), out);
	json_object_put(o);
	return 0;
}

/* Takes ownership of the NUL-terminated text in body and appends the newline. */
void
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
bool
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

bool
ctl_conn_errorf(struct ctl_conn *c, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return ctl_conn_error(c, msg);
}

/*
 * What a read-only socket serves: commands that only look. An allowlist, so a command
 * added later stays refused there until someone decides it only reads.
 */
static const char *const ctl_read_cmds[] = {
	"status", "stats", "bindings", "flows", "events", "check", "suggest", "grants",
	"pending", "ha",
};

bool
ctl_sock_cmd_reads(const char *name)
{
	for (size_t i = 0; i < sizeof(ctl_read_cmds) / sizeof(ctl_read_cmds[0]); i++)
		if (strcmp(ctl_read_cmds[i], name) == 0)
			return true;
	return false;
}

void
ctl_sock_user_name(uint32_t uid, char *out, size_t len)
{
	struct passwd pw, *res = NULL;
	char buf[4096];

	if (getpwuid_r((uid_t)uid, &pw, buf, sizeof(buf), &res) == 0 && res != NULL &&
	    strlen(pw.pw_name) <= CTL_SOCK_USER_MAX && pw.pw_name[0] != '\0')
		snprintf(out, len, "%s", pw.pw_name);
	else
		snprintf(out, len, "%u", uid);
}

/* The caller's user name into p->user, once. */
static void
ctl_peer_name(struct ctl_peer *p)
{
	if (p->user[0] == '\0')
		ctl_sock_user_name(p->uid, p->user, sizeof(p->user));
}

static const struct ctl_served *
ctl_served(const struct ctl_sock *s, const char *name)
{
	for (size_t i = 0; i < s->nserved; i++)
		if (strcmp(s->served[i].cmd->name, name) == 0)
			return &s->served[i];
	return NULL;
}

int
ctl_sock_serve(struct ctl_sock *s, const struct ctl_cmd *cmds, size_t n, void *arg)
{
	if (n > CTL_SOCK_CMDS_MAX - s->nserved)
		return -ENOSPC;
	for (size_t i = 0; i < n; i++)
		if (ctl_served(s, cmds[i].name) != NULL)
			return -EEXIST;
	for (size_t i = 0; i < n; i++)
		s->served[s->nserved++] = (struct ctl_served){ .cmd = &cmds[i], .arg = arg };
	return 0;
}

/*
 * Runs the callback and turns what it wrote into the reply: re-serialised on one line
 * when it is one JSON value, so clients can rely on "one line, then EOF".
 */
static bool
ctl_conn_run(struct ctl_conn *c, const struct ctl_served *sv, const struct ctl_req *a)
{
	struct json_tokener *tok = NULL;
	struct json_object *val = NULL;
	const char *name = sv->cmd->name, *text;
	char *buf = NULL, *body;
	size_t len = 0, n;
	bool ok = false;
	FILE *out;
	int rc;

	if ((out = open_memstream(&buf, &len)) == NULL)
		return ctl_conn_error(c, "out of memory");
	rc = sv->cmd->fn(out, a, sv->arg);
	if (fclose(out) != 0 || buf == NULL) {
		free(buf);
		return ctl_conn_error(c, "out of memory");
	}
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' ' || buf[len - 1] == '\r' ||
	    buf[len - 1] == '\t'))
		buf[--len] = '\0';
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
bool
ctl_conn_request(struct ctl_sock *s, struct ctl_conn *c, const char *line, size_t len)
{
	const struct ctl_served *sv;
	struct ctl_req a = { 0 };
	unsigned int args;
	const char *cmdname = NULL;
	struct json_tokener *tok = NULL;
	struct json_object *req = NULL;
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
	if ((sv = ctl_served(s, cmdname)) == NULL) {
		ok = ctl_conn_errorf(c, "unknown command \"%.64s\"", cmdname);
		goto out;
	}
	if (!ctl_sock_cmd_reads(cmdname)) {
		if (c->readonly) {
			ok = ctl_conn_errorf(c, "this socket is read-only: %s needs the "
			    "read-write control socket", cmdname);
			goto out;
		}
		ctl_peer_name(&c->peer);	/* it is recorded with what it changes */
	}
	args = sv->cmd->args;
	if (a.vm != NULL && !(args & CTL_ARG_VM)) {
		snprintf(why, sizeof(why), "%s takes no \"vm\"", cmdname);
		goto bad;
	}
	if (a.vm == NULL && (args & CTL_ARG_VM_REQ)) {
		snprintf(why, sizeof(why), "%s needs \"vm\"", cmdname);
		goto bad;
	}
	if ((a.host == NULL) != !(args & CTL_ARG_HOST)) {
		snprintf(why, sizeof(why), "%s %s \"host\"", cmdname,
		    a.host == NULL ? "needs" : "takes no");
		goto bad;
	}
	if (!(a.dur != NULL && (args & CTL_ARG_FOR_OPT)) &&
	    (a.dur == NULL) != !(args & CTL_ARG_FOR)) {
		snprintf(why, sizeof(why), "%s %s \"for\"", cmdname,
		    a.dur == NULL ? "needs" : "takes no");
		goto bad;
	}
	if (a.reason != NULL && !(args & CTL_ARG_FOR)) {
		snprintf(why, sizeof(why), "%s takes no \"reason\"", cmdname);
		goto bad;
	}
	if ((a.id == NULL) != !(args & CTL_ARG_ID)) {
		snprintf(why, sizeof(why), "%s %s \"id\"", cmdname,
		    a.id == NULL ? "needs" : "takes no");
		goto bad;
	}
	a.peer = &c->peer;
	ok = ctl_conn_run(c, sv, &a);
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

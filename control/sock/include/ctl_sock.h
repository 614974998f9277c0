/*
 * Control socket (SPEC s6): the daemon side of what namegatectl talks to. A UNIX stream
 * socket, non-blocking, many clients at once, driven from the control event loop by
 * ctl_sock_poll(); the loop owns a struct ctl_sock (not thread-safe). No DPDK.
 *
 * Protocol: one connection per request. The client sends one line of JSON, at most
 * CTL_SOCK_REQ_MAX bytes with its newline (or ends it by shutting down its write side):
 *
 *   {"cmd":"status"}                    {"cmd":"reload"}
 *   {"cmd":"stats"}  {"cmd":"stats","vm":"agent1"}
 *   {"cmd":"bindings","vm":"agent1"}    {"cmd":"flows","vm":"agent1"}
 *   {"cmd":"check","vm":"agent1","host":"pypi.org:443"}
 *   {"cmd":"suggest","vm":"agent1"}
 *   {"cmd":"grant","vm":"agent1","host":"pypi.org:443","for":"30m","reason":"pip"}
 *   {"cmd":"grants"}  {"cmd":"grants","vm":"agent1"}   {"cmd":"revoke","id":"3"}
 *   {"cmd":"pending"}  {"cmd":"pending","vm":"agent1"}
 *   {"cmd":"approve","id":"7"}  {"cmd":"approve","id":"7","for":"30m"}  {"cmd":"deny","id":"7"}
 *
 * A read-only listener (ctl_sock_listen()) answers only the read commands; anything else
 * gets {"error":"this socket is read-only: CMD needs the read-write control socket"},
 * its callback never called.
 *
 * The server answers with one JSON document on one line, then closes. Success is whatever
 * the command's callback wrote (re-serialised on one line); failure is {"error":"text"}.
 * Unknown commands, unknown or mistyped keys, a missing "vm"/"host", malformed JSON and
 * oversized requests get an error reply. A client that has not sent its whole request
 * within the timeout, or stops reading its reply for that long, is dropped without one.
 *
 * The socket knows no command: each concern serves its own with ctl_sock_serve(), one
 * line of its table a command (name, the members it takes, its callback), so a command
 * is added where it is served. The member checks below are the protocol's, made here.
 *
 * Callbacks write one JSON value to out (an open_memstream FILE) and return 0. On failure
 * they return -errno; then whatever they wrote to out is the error's text (plain text, not
 * JSON; a trailing newline is dropped), or strerror() of the code if they wrote nothing:
 *
 *	fprintf(out, "unknown VM '%s'", vm);
 *	return -ENOENT;
 *
 * A callback that returns 0 but writes something that is not exactly one JSON value gets
 * {"error":"internal: ..."} sent in its place. A command nothing serves is unknown.
 * The request's members are NUL-terminated and valid only during the call.
 *
 * The shapes namegatectl expects (counters are unsigned 64-bit integers; "vm" is the VM's
 * configured name; keys not listed are ignored by namegatectl, so more may be added):
 *
 * status:
 *   {"version":"0.1.0","pid":1234,"generation":3,"config":"/etc/namegate/namegate.yaml",
 *    "vms":4,"workers":2,"uptime":3725,"events":"/var/log/namegate/events.jsonl",
 *    "metrics":"127.0.0.1:9477","ports":{"vm":"net_af_packet0,iface=ng-vm",
 *    "uplink":"net_af_packet1,iface=ng-up"}}
 *   uptime in seconds; "events" is "" when no event log is written, else an absolute
 *   path: namegatectl events opens it itself, from its own working directory.
 *
 * stats (vm NULL: every VM in configuration order; else only that VM, -ENOENT if unknown):
 *   {"vms":[{"vm":"agent1","mode":"enforce",
 *            "egress":{"allowed":{"packets":N,"bytes":N},"blocked":{"packets":N,"bytes":N},
 *                      "would_block":{"packets":N,"bytes":N}},
 *            "ingress":{"packets":N,"bytes":N},
 *            "blocked":{"spoofed":N,"no_binding":N,"sni_denied":N,"not_tls":N,"no_sni":N,
 *                       "dns_denied":N,"quic":N,"unsolicited":N,"flow_limit":N,"rebind":N},
 *            "dns":{"allowed":N,"blocked":N},"bindings":N,"flows":N}],
 *    "ports":{"vm":{"rx":N,"tx":N},"uplink":{"rx":N,"tx":N},"slow":{"rx":N,"tx":N}},
 *    "generation":N}
 *   "mode" is "enforce" or "audit"; "blocked" holds the SPEC s6 reason labels of
 *   namegate_vm_blocked_total (zeros may be left out). "ports" counts packets.
 *
 * bindings (addresses the VM may reach now):
 *   {"vm":"agent1","bindings":[{"name":"pypi.org","addr":"203.0.113.10","ttl":123}]}
 *   ttl: seconds left; addr: inet_ntop() text, IPv4 or IPv6.
 *
 * flows:
 *   {"vm":"agent1","flows":[{"proto":"tcp","peer":"203.0.113.10:443","vm_port":40000,
 *    "state":"established","age":12,"verdict":"allowed"}]}
 *   peer is "v4:port" or "[v6]:port"; age in seconds; verdict "allowed" or "would_block".
 *
 * reload (the SPEC s5 sequence; the running generation stays on any failure):
 *   {"ok":true,"generation":4}     optionally "warnings":["ng.yaml:7:9: warning: ..."]
 *   A rejected file is a failure: write the file:line:col messages (one per line) to out
 *   and return -EINVAL; namegatectl prints them and exits 1.
 *
 * check (pol_explain() against the running generation):
 *   {"verdict":"allow","line":"allow pypi.org:443 for vm1: policies.dev.allow[0] ..."}
 *   verdict "allow" or "block" (pol_explain() 0 or 1); line without its newline. When
 *   pol_explain() returns 2, write its err text to out and return -EINVAL (unknown VM,
 *   bad host); namegatectl prints that text and exits 2, as the offline form does.
 *
 * suggest (what an audit-mode VM was refused, as allow patterns, sorted, no duplicates):
 *   {"vm":"agent1","policy":"python","allow":["files.pythonhosted.org","pypi.org:443"]}
 *   "policy" (the VM's policy name) is optional; namegatectl names the YAML block after it.
 *
 * grant (every member is untrusted text: the callback validates VM, pattern, duration and
 * reason, and writes a one-line reason and returns -EINVAL for anything it refuses):
 *   {"id":3,"vm":"agent1","host":"pypi.org:443","created":"2026-12-01T13:35:00Z",
 *    "until":"2026-12-01T14:05:00Z","expires":1764597900,"left":1800,"reason":"pip"}
 *   until/created in UTC; expires in UTC seconds; left: seconds to go; reason "" if none.
 *
 * grants (vm NULL: every VM's; -ENOENT for an unknown VM): {"grants":[ grant as above ]},
 *   in the order made.
 *
 * revoke (id: decimal text; -EINVAL when it is not one, -ENOENT when no live grant has it):
 *   {"revoked": grant as above}
 *
 * pending (queries waiting for approval, oldest first; -ENOENT for an unknown VM):
 *   {"pending":[{"id":7,"vm":"agent1","name":"pypi.org","type":1,"type_name":"A",
 *                "first_seen":"2026-12-01T13:35:00Z","age":2,"left":6}]}
 *   left: seconds until approval.timeout answers it REFUSED.
 *
 * approve (id: decimal text; "for" a duration, default 1h): grants the request's name to
 *   its VM and lets the held query go on; -ENOENT when no request waits under id:
 *   {"approved":{"id":7,"vm":"agent1","name":"pypi.org"},"grant":3}   (the grant's id)
 *
 * deny: answers the held query REFUSED (EDE 15, "namegate: denied by operator"):
 *   {"denied":{"id":7,"vm":"agent1","name":"pypi.org"}}
 */
#ifndef CTL_SOCK_H
#define CTL_SOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CTL_SOCK_REQ_MAX	4096	/* request line, newline included */
#define CTL_SOCK_CLIENTS_MAX	64	/* served at once; more wait in the listen backlog */
#define CTL_SOCK_TIMEOUT_MS	5000	/* default: to send a request, or between reply reads */
/*
 * A parent directory we create: search only for others, so the socket's own mode and group
 * say who may connect (a group member could not reach a socket under a 0750 root directory).
 */
#define CTL_SOCK_DIR_MODE	0711
#define CTL_SOCK_MODE		0660	/* root and the socket's group may use it */
#define CTL_SOCK_LISTENERS_MAX	2	/* the read-write socket and a read-only one */
#define CTL_SOCK_USER_MAX	64	/* bytes of a caller's user name */
#define CTL_SOCK_GROUP_NONE	UINT32_MAX	/* a socket file keeps root's group */

/* The members a command takes (struct ctl_cmd's args); any other is a bad request. */
#define CTL_ARG_VM	0x1	/* "vm" accepted */
#define CTL_ARG_VM_REQ	0x2	/* "vm" required */
#define CTL_ARG_HOST	0x4	/* "host" required */
#define CTL_ARG_FOR	0x8	/* "for" required, "reason" accepted */
#define CTL_ARG_ID	0x10	/* "id" required */
#define CTL_ARG_FOR_OPT	0x20	/* "for" accepted, not required */

/*
 * Who sent a request: the kernel's word for the client process when it connected
 * (SO_PEERCRED), not anything the client says. user is its user name (getpwuid_r), or the
 * uid in decimal when it has none; it is looked up only for commands that change
 * something ("" for the read commands), since a name service may answer slowly and the
 * lookup runs in the event loop.
 */
struct ctl_peer {
	uint32_t uid, gid;
	int32_t pid;
	char user[CTL_SOCK_USER_MAX + 1];
};

/* uid's user name (its passwd entry's), else the uid in decimal, into out. */
void ctl_sock_user_name(uint32_t uid, char *out, size_t len);

/* A request's string members, untrusted text; NULL when absent. peer is never NULL. */
struct ctl_req {
	const char *vm, *host, *dur, *reason, *id;
	const struct ctl_peer *peer;
};

typedef int ctl_cmd_fn(FILE *out, const struct ctl_req *req, void *arg);

/* One command: a line of its concern's table. */
struct ctl_cmd {
	const char *name;
	unsigned int args;	/* CTL_ARG_* */
	ctl_cmd_fn *fn;
};

#define CTL_SOCK_CMDS_MAX	32	/* commands one socket serves */

struct json_object;

/*
 * A callback's reply: value to out on one line, or {key: value} when key is not NULL;
 * value is freed either way (NULL: -ENOMEM). 0 or -ENOMEM.
 */
int ctl_sock_reply_json(FILE *out, const char *key, struct json_object *value);

/* What happened to clients since ctl_sock_open(), for metrics and tests. */
struct ctl_sock_counters {
	uint64_t accepted;	/* connections */
	uint64_t replied;	/* success replies written in full */
	uint64_t errors;	/* error replies written in full (bad request, callback failure) */
	uint64_t timeouts;	/* dropped: request or reply reading too slow */
	uint64_t oversize;	/* requests longer than CTL_SOCK_REQ_MAX (also in errors) */
	uint64_t aborted;	/* dropped: the client went away or a socket error */
};

struct ctl_sock;

/*
 * Listens on path: creates its missing parent directories (CTL_SOCK_DIR_MODE),
 * replaces a stale socket there (one nothing listens on), and gives the socket
 * CTL_SOCK_MODE before it appears under path, so it is never reachable with looser
 * permissions. Refuses (EADDRINUSE) when a daemon already listens on path, and (EEXIST)
 * when path is something other than a socket; path and ".PID" must fit in sun_path (108
 * bytes with the NUL), or ENAMETOOLONG. timeout_ms <= 0 means CTL_SOCK_TIMEOUT_MS.
 * Returns the socket, serving no command yet, or NULL with errno set and a one-line
 * reason in err (errlen bytes, may be 0). Free with ctl_sock_close().
 */
struct ctl_sock *ctl_sock_open(const char *path, int timeout_ms, char *err, size_t errlen);

/*
 * Listens on path too, as ctl_sock_open() does, with the socket file's group gid
 * (CTL_SOCK_GROUP_NONE: root's) so that group's members may connect. A read-only listener serves
 * only the read commands (ctl_sock_cmd_reads()); any other request on it gets the error
 * "this socket is read-only: ...". 0, or -errno with a one-line reason in err;
 * -ENOSPC past CTL_SOCK_LISTENERS_MAX.
 */
int ctl_sock_listen(struct ctl_sock *s, const char *path, uint32_t gid, bool readonly,
    char *err, size_t errlen);

/*
 * Gives the socket ctl_sock_open() made the group gid (mode stays CTL_SOCK_MODE). 0, or
 * -errno with a one-line reason in err.
 */
int ctl_sock_chgrp(struct ctl_sock *s, uint32_t gid, char *err, size_t errlen);

/*
 * Whether a read-only listener serves the command called name: an allowlist of the
 * commands that only read (status, stats, bindings, flows, events, check, suggest,
 * grants, pending, ha), so a command added later is refused there until it is listed.
 */
bool ctl_sock_cmd_reads(const char *name);

/*
 * Serve the n commands of cmds, each called with arg; cmds and arg are kept, not copied:
 * they must outlive the socket. 0, -EEXIST when a name is served already, -ENOSPC past
 * CTL_SOCK_CMDS_MAX; nothing of cmds is served then.
 */
int ctl_sock_serve(struct ctl_sock *s, const struct ctl_cmd *cmds, size_t n, void *arg);

/*
 * One turn of the event loop: waits at most timeout_ms (0: not at all, never forever) for
 * connections, requests and writable clients, serves what is ready (callbacks run here),
 * and drops clients past their deadline. Returns the number of replies completed, 0 when
 * interrupted by a signal, or -errno when poll(2) fails.
 */
int ctl_sock_poll(struct ctl_sock *s, int timeout_ms);

#define CTL_SOCK_WAIT_FDS	4	/* the caller's descriptors ctl_sock_wait() takes at most */

/*
 * The sleep half of ctl_sock_poll(), which also wakes when one of the caller's nfds
 * descriptors (an eventfd, a queue's interrupt fd; negative ones are ignored) is
 * readable, and sets ready[i] for those that are; none is read. It serves nothing: the
 * loop does its own work first (the workers' records), then ctl_sock_serve_ready(). So a
 * loop with more to wait for still sleeps in one poll(2), and every callback runs after
 * the loop's turn. 0 (also when interrupted by a signal), -errno when poll(2) fails,
 * -EINVAL for more than CTL_SOCK_WAIT_FDS.
 */
int ctl_sock_wait(struct ctl_sock *s, int timeout_ms, const int *fds, size_t nfds,
    bool *ready);

/* Serve what the last ctl_sock_wait() found ready (callbacks run here): replies completed. */
int ctl_sock_serve_ready(struct ctl_sock *s);

/* Copies the counters. */
void ctl_sock_counters(const struct ctl_sock *s, struct ctl_sock_counters *out);

/*
 * Drops every client without a reply, closes the listeners and removes each one's path if
 * it is still the socket we created. NULL is a no-op.
 */
void ctl_sock_close(struct ctl_sock *s);

#endif /* CTL_SOCK_H */

/*
 * The control socket's insides, shared by its two halves: ctl_sock.c (the listener and
 * each client's state machine) and ctl_sock_req.c (a request line parsed, checked and
 * handed to the daemon's callbacks, and the reply it makes).
 */
#ifndef CTL_SOCK_INT_H
#define CTL_SOCK_INT_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ctl_sock.h"

/* A command served, with the argument its concern gave. */
struct ctl_served {
	const struct ctl_cmd *cmd;
	void *arg;
};

enum ctl_conn_state {
	CTL_CONN_READ,		/* collecting the request line */
	CTL_CONN_WRITE,		/* sending resp */
};

/* One socket path clients connect to. */
struct ctl_listener {
	int fd;
	char *path;
	dev_t dev;		/* what we bound at path, so close removes only that */
	ino_t ino;
	bool readonly;		/* serves only ctl_sock_cmd_reads() */
};

struct ctl_conn {
	int fd;
	bool readonly;		/* came through a read-only listener */
	struct ctl_peer peer;	/* its user name filled in for a command that writes */
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
	struct ctl_listener lis[CTL_SOCK_LISTENERS_MAX];
	size_t nlis;
	struct ctl_served served[CTL_SOCK_CMDS_MAX];
	size_t nserved;
	int timeout_ms;
	size_t nconns;
	bool polled;		/* pfd holds a poll's answer ctl_sock_run() has not served */
	bool polled_listener;	/* and the listeners were in it, after the clients */
	struct ctl_conn conns[CTL_SOCK_CLIENTS_MAX];
	/* clients, listeners, the caller's */
	struct pollfd pfd[CTL_SOCK_CLIENTS_MAX + CTL_SOCK_LISTENERS_MAX + CTL_SOCK_WAIT_FDS];
	struct ctl_sock_counters cnt;
};

/* Takes ownership of the NUL-terminated text in body (room left for a newline). */
void ctl_conn_reply(struct ctl_conn *c, char *body, size_t len, bool is_error);

/* {"error":msg}; false when even that cannot be allocated. */
bool ctl_conn_error(struct ctl_conn *c, const char *msg);
bool ctl_conn_errorf(struct ctl_conn *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * The request line of c (len bytes, no newline) parsed and run: c gets its reply. false
 * when not even an error reply could be made (the client is dropped).
 */
bool ctl_conn_request(struct ctl_sock *s, struct ctl_conn *c, const char *line, size_t len);

/* Close l: its socket, and its file while it is still the one l made (ctl_sock_listen.c). */
void ctl_listener_close(struct ctl_listener *l);

#endif

/*
 * The control socket test fixture (ctl_sock_fixture.c): a server thread, raw and client
 * calls. Each call fails the running cmocka test on a transport error.
 */
#ifndef CTL_SOCK_FIXTURE_H
#define CTL_SOCK_FIXTURE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl_sock.h"

#define TIMEOUT_MS	300	/* the server's client timeout in these tests */
#define IO_MS		20000	/* the test's own patience (valgrind is slow) */
#define STR_LEN(s)	s, sizeof(s) - 1	/* a literal and its length without the NUL */

struct srv {
	char dir[64];
	char path[128];
	char ro_path[128];	/* the read-only listener's, or "" */
	struct ctl_sock *s;
	pthread_t th;
	atomic_bool stop;
	struct ctl_sock_counters cnt;	/* at stop */
};

/* Listens in a new directory under /tmp and serves the n commands of cmds from a thread. */
void srv_start_cmds(struct srv *v, const struct ctl_cmd *cmds, size_t n);
#define srv_start_table(v, cmds) srv_start_cmds((v), (cmds), sizeof(cmds) / sizeof((cmds)[0]))
/* The same, with a read-only listener at v->ro_path too (ctl_sock_listen(), group gid). */
void srv_start_ro(struct srv *v, const struct ctl_cmd *cmds, size_t n, uint32_t gid);
/* Stops the thread, keeps the counters in v->cnt, closes, checks the path is gone. */
void srv_stop(struct srv *v);
int64_t now_ms(void);
int raw_connect(const char *path);
void raw_send(int fd, const void *buf, size_t len);
/* Everything until EOF, NUL-terminated (free it); *lenp may be NULL. */
char *raw_read_all(int fd, size_t *lenp);
/* One raw exchange: bytes out, write side shut if asked, the whole reply back. */
char *raw_call(const char *path, const void *req, size_t len, bool shut);
/* The raw reply to req (a string) must be want. */
void expect_raw(const char *path, const char *req, const char *want);
/* Through namegatectl's client: the reply text, or the error text prefixed "E:". */
void expect_call(const char *path, const char *cmd, const char *vm, const char *host,
    const char *want);

#endif

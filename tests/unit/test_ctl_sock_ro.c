/*
 * Who may do what on the control socket: a read-only listener serves the read commands
 * only (an allowlist), every callback sees its client's SO_PEERCRED, and a listener's
 * socket file gets the group it was given.
 */
#include <errno.h>
#include <pwd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ctl_client.h"
#include "ctl_sock_fixture.h"

static atomic_int writes;	/* write callbacks run */
static char seen[160];		/* the last write callback's peer, "uid pid user" */

static int
op_read(FILE *out, const struct ctl_req *req, void *arg)
{
	(void)arg;
	/* reads are not looked up in the name service */
	fprintf(out, "{\"uid\":%u,\"pid\":%d,\"user\":\"%s\"}", req->peer->uid, req->peer->pid,
	    req->peer->user);
	return 0;
}

static int
op_write(FILE *out, const struct ctl_req *req, void *arg)
{
	(void)arg;
	atomic_fetch_add(&writes, 1);
	snprintf(seen, sizeof(seen), "%u %d %s", req->peer->uid, req->peer->pid, req->peer->user);
	fputs("{\"ok\":true}", out);
	return 0;
}

static const struct ctl_cmd ops[] = {
	{ "status", 0, op_read },
	{ "stats", CTL_ARG_VM, op_read },
	{ "grants", CTL_ARG_VM, op_read },
	{ "reload", 0, op_write },
	{ "grant", CTL_ARG_VM | CTL_ARG_VM_REQ | CTL_ARG_HOST | CTL_ARG_FOR, op_write },
	{ "revoke", CTL_ARG_ID, op_write },
	{ "frobnicate", 0, op_write },	/* a command added later, in no list */
};

/* The read commands, and only they, are on the allowlist. */
static void
test_allowlist(void **state)
{
	static const char *const reads[] = { "status", "stats", "bindings", "flows", "events",
		"check", "suggest", "grants", "pending" };
	static const char *const others[] = { "grant", "revoke", "approve", "deny", "reload",
		"frobnicate", "", "Status", "status ", "grants2" };

	(void)state;
	for (size_t i = 0; i < sizeof(reads) / sizeof(reads[0]); i++)
		assert_true(ctl_sock_cmd_reads(reads[i]));
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
		assert_false(ctl_sock_cmd_reads(others[i]));
}

static const char *
my_name(void)
{
	struct passwd *pw = getpwuid(getuid());
	static char uid[16];

	if (pw != NULL)
		return pw->pw_name;
	snprintf(uid, sizeof(uid), "%u", (unsigned int)getuid());
	return uid;
}

/* Reads on the read-only socket; writes refused there, the callback never run. */
static void
test_readonly(void **state)
{
	const char *grant[] = { "cmd", "grant", "vm", "a", "host", "b", "for", "1h", NULL };
	const char *revoke[] = { "cmd", "revoke", "id", "3", NULL };
	const char *reload[] = { "cmd", "reload", NULL };
	const char *later[] = { "cmd", "frobnicate", NULL };
	const char *const *refused[] = { grant, revoke, reload, later };
	char want[160], err[256];
	struct ctl_reply r;
	struct srv v;

	(void)state;
	srv_start_ro(&v, ops, sizeof(ops) / sizeof(ops[0]), CTL_SOCK_GROUP_NONE);
	snprintf(want, sizeof(want), "{\"uid\":%u,\"pid\":%d,\"user\":\"\"}",
	    (unsigned int)getuid(), (int)getpid());
	expect_call(v.ro_path, "status", NULL, NULL, want);
	expect_call(v.ro_path, "stats", "vm1", NULL, want);
	expect_call(v.ro_path, "grants", NULL, NULL, want);
	atomic_store(&writes, 0);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		assert_int_equal(ctl_client_request(v.ro_path, refused[i], IO_MS, &r, err,
		    sizeof(err)), 0);
		assert_non_null(r.error);
		snprintf(want, sizeof(want), "this socket is read-only: %s needs the read-write "
		    "control socket", refused[i][1]);
		assert_string_equal(r.error, want);
		ctl_reply_free(&r);
	}
	assert_int_equal(atomic_load(&writes), 0);
	/* The read-write socket serves them, and names the caller with its user. */
	expect_call(v.path, "reload", NULL, NULL, "{\"ok\":true}");
	assert_int_equal(atomic_load(&writes), 1);
	snprintf(want, sizeof(want), "%u %d %s", (unsigned int)getuid(), (int)getpid(),
	    my_name());
	assert_string_equal(seen, want);
	assert_int_equal(ctl_client_request(v.path, grant, IO_MS, &r, err, sizeof(err)), 0);
	assert_null(r.error);
	ctl_reply_free(&r);
	assert_int_equal(atomic_load(&writes), 2);
	srv_stop(&v);
}

static struct stat
stat_of(const char *path)
{
	struct stat st;

	assert_int_equal(lstat(path, &st), 0);
	return st;
}

/* Each socket file gets its group, mode 0660; a bad group leaves no socket behind. */
static void
test_groups(void **state)
{
	gid_t other = getgid() == 65534 ? 100 : 65534;
	char err[256], path[200];
	struct ctl_sock *s;
	struct srv v;

	(void)state;
	if (geteuid() != 0)
		skip();		/* chown to a group we are not in needs root */
	srv_start_ro(&v, ops, sizeof(ops) / sizeof(ops[0]), other);
	assert_int_equal(stat_of(v.ro_path).st_gid, other);
	assert_int_equal(stat_of(v.ro_path).st_mode & 07777, 0660);
	assert_int_equal(stat_of(v.path).st_gid, getgid());
	srv_stop(&v);

	strcpy(v.dir, "/tmp/test_ctl_sock.XXXXXX");
	assert_non_null(mkdtemp(v.dir));
	snprintf(path, sizeof(path), "%s/rw.sock", v.dir);
	assert_non_null(s = ctl_sock_open(path, 0, err, sizeof(err)));
	assert_int_equal(ctl_sock_chgrp(s, other, err, sizeof(err)), 0);
	assert_int_equal(stat_of(path).st_gid, other);
	assert_int_equal(stat_of(path).st_mode & 07777, 0660);
	/* a third listener: no room */
	snprintf(path, sizeof(path), "%s/ro.sock", v.dir);
	assert_int_equal(ctl_sock_listen(s, path, CTL_SOCK_GROUP_NONE, true, err, sizeof(err)),
	    0);
	snprintf(path, sizeof(path), "%s/third.sock", v.dir);
	assert_int_equal(ctl_sock_listen(s, path, CTL_SOCK_GROUP_NONE, true, err, sizeof(err)),
	    -ENOSPC);
	assert_int_equal(access(path, F_OK), -1);
	ctl_sock_close(s);
	snprintf(path, sizeof(path), "%s/rw.sock", v.dir);
	assert_int_equal(access(path, F_OK), -1);
	snprintf(path, sizeof(path), "%s/ro.sock", v.dir);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(rmdir(v.dir), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_allowlist),
		cmocka_unit_test(test_readonly),
		cmocka_unit_test(test_groups),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

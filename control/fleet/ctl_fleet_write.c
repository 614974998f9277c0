/*
 * The writer thread: this gateway's status, rewritten when it changes and every
 * CTL_FLEET_HEARTBEAT_MS (its "seen" tells the fleet it is alive), and the queued writes
 * (revocations made on this box, its requests waiting for approval), each in order and
 * retried until the store has it. A gateway's credentials may
 * write only these (and pending requests): never a grant.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl_fleet_int.h"
#include "policy/load.h"

/* One queued write: a put under a lease of its own, or a delete (already gone is done). */
static int
fwr_op(struct ctl_fleet *f, const struct ctl_fleet_op *op)
{
	int64_t lease = 0;
	int rc;

	if (op->val == NULL) {
		rc = ctl_etcd_delete(f->write_etcd, op->key, false, NULL, NULL);
		return rc == -ENOENT ? 0 : rc;
	}
	if (op->ttl > 0 && (rc = ctl_etcd_lease_grant(f->write_etcd, op->ttl, &lease)) != 0)
		return rc;
	return ctl_etcd_put(f->write_etcd, op->key, op->val, strlen(op->val), lease, NULL);
}

static int
fwr_status(struct ctl_fleet *f, struct ctl_fleet_status *s)
{
	char key[CTL_FLEET_KEY_MAX], *val;
	int rc;

	s->seen = time(NULL);
	ctl_fleet_key(key, f->boot->fleet_prefix, "status/", f->boot->fleet_gateway);
	if ((val = ctl_fleet_status_encode(s)) == NULL)
		return -ENOMEM;
	rc = ctl_etcd_put(f->write_etcd, key, val, strlen(val), 0, NULL);
	free(val);
	return rc;
}

static void
fwr_result(struct ctl_fleet *f, int rc, const char *what)
{
	bool was;

	pthread_mutex_lock(&f->sh.lock);
	was = f->sh.writing;
	f->sh.writing = rc == 0;
	pthread_mutex_unlock(&f->sh.lock);
	if (rc != 0 && was)
		fprintf(stderr, "namegate: fleet: %s: %s\n", what, ctl_etcd_error(f->write_etcd));
	if (was != (rc == 0))
		f->wake();
}

void *
ctl_fleet_write_main(void *arg)
{
	struct ctl_fleet *f = arg;
	uint64_t written = 0;
	struct timespec last = { 0 };

	pthread_mutex_lock(&f->sh.lock);
	while (!f->sh.stop) {
		struct ctl_fleet_status s;
		struct ctl_fleet_op op;
		bool write = f->sh.nops > 0, due;
		uint64_t ver = f->sh.status_ver;
		struct timespec now;
		int rc;

		clock_gettime(CLOCK_MONOTONIC, &now);
		due = (now.tv_sec - last.tv_sec) * 1000 + (now.tv_nsec - last.tv_nsec) / 1000000 >=
		    CTL_FLEET_HEARTBEAT_MS;
		if (!write && ver == written && !due) {
			ctl_fleet_nap(f, CTL_FLEET_HEARTBEAT_MS / 4);
			continue;
		}
		s = f->sh.status;
		s.connected = f->sh.watching && f->sh.writing;
		if (write)		/* the first stays queued until it is written */
			op = f->sh.ops[0];
		pthread_mutex_unlock(&f->sh.lock);
		if (write) {
			rc = fwr_op(f, &op);
			fwr_result(f, rc, "a write waits for the store");
			pthread_mutex_lock(&f->sh.lock);
			if (rc == 0) {
				free(f->sh.ops[0].val);
				memmove(&f->sh.ops[0], &f->sh.ops[1], --f->sh.nops * sizeof(op));
			}
		} else {
			rc = fwr_status(f, &s);
			fwr_result(f, rc, "status not written");
			pthread_mutex_lock(&f->sh.lock);
			if (rc == 0)
				written = ver;
			last = now;
		}
		if (rc != 0 && !f->sh.stop)
			ctl_fleet_nap(f, CTL_FLEET_RETRY_MS);
	}
	pthread_mutex_unlock(&f->sh.lock);
	return NULL;
}

/*
 * The etcd client (control/fleet/ctl_etcd) driven from the command line, so that
 * test_etcd.py can check each call against etcdctl on a real etcd:
 *
 *   etcd_probe -e EP[,EP..] [-u USER:PASS] [-t MS] [-p PAGE] CMD ARGS
 *     put KEY VALUE|@FILE [LEASE]	rev=R ms=T
 *     get KEY				len=N fnv=H mod_rev=R lease=L value=V ms=T
 *     range PREFIX			rev=R n=N ms=T, then KEY=VALUE lines
 *     del KEY [prefix]			deleted=N rev=R ms=T
 *     grant TTL | keepalive ID | revoke ID	lease=ID / ttl=N / revoked
 *     expiry KEY TTL			puts KEY under a TTL lease, polls: expired_ms=T
 *     reauth KEY SECONDS		put, sleep, put: auths=N
 *     puts KEY N			N puts on one kept-alive connection: p50_us=T
 *     watch PREFIX REV COUNT [CANCEL_MS]	resumes after errors, relists on compaction
 *
 * A failure prints "rc=NAME ms=T err=MESSAGE" and exits 1. Values print raw: the tests'
 * small values are text; large ones are checked by length and FNV-1a.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl_base.h"
#include "ctl_etcd.h"

static int64_t t0;

static uint64_t
fnv1a(const char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)p[i]) * 0x100000001b3ull;
	return h;
}

static int
fail(struct ctl_etcd *c, int rc)
{
	printf("rc=%s ms=%" PRId64 " err=%s\n", strerrorname_np(-rc), ctl_now_ms() - t0,
	    ctl_etcd_error(c));
	return 1;
}

static char *
read_value(const char *arg, size_t *len)
{
	FILE *f;
	char *buf;
	long n;

	if (arg[0] != '@') {
		*len = strlen(arg);
		return strdup(arg);
	}
	if ((f = fopen(arg + 1, "rb")) == NULL || fseek(f, 0, SEEK_END) != 0 ||
	    (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
	    (buf = malloc((size_t)n + 1)) == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		perror(arg + 1);
		exit(2);
	}
	fclose(f);
	*len = (size_t)n;
	return buf;
}

struct probe_watch {
	long want;
	long seen;
};

static int
probe_event(void *arg, const struct ctl_etcd_event *ev, size_t n, int64_t rev)
{
	struct probe_watch *pw = arg;

	if (n == 0)
		printf("created rev=%" PRId64 " ms=%" PRId64 "\n", rev, ctl_now_ms() - t0);
	for (size_t i = 0; i < n; i++)
		printf("ev %s %s rev=%" PRId64 " len=%zu fnv=%016" PRIx64 " ms=%" PRId64 "\n",
		    ev[i].type == CTL_ETCD_PUT ? "PUT" : "DELETE", ev[i].kv.key, ev[i].kv.mod_rev,
		    ev[i].kv.value_len, fnv1a(ev[i].kv.value, ev[i].kv.value_len),
		    ctl_now_ms() - t0);
	fflush(stdout);
	pw->seen += (long)n;
	return pw->seen >= pw->want ? 1 : 0;
}

static long cancel_after_ms;
static int64_t cancel_at;

/* Cancels from another thread, as the agent's shutdown does. */
static void *
probe_canceller(void *arg)
{
	struct ctl_etcd *c = arg;

	usleep((useconds_t)cancel_after_ms * 1000);
	cancel_at = ctl_now_ms();
	ctl_etcd_cancel(c);
	return NULL;
}

/* The fleet agent's loop in small: list again after compaction, resume after an error. */
static int
probe_watch(struct ctl_etcd *c, const char *prefix, int64_t rev, long count, long cancel_ms)
{
	struct probe_watch pw = { .want = count };
	pthread_t th;
	int rc;

	if ((cancel_after_ms = cancel_ms) > 0)
		pthread_create(&th, NULL, probe_canceller, c);
	for (;;) {
		rc = ctl_etcd_watch(c, prefix, &rev, probe_event, &pw);
		if (rc == 1) {
			printf("done next_rev=%" PRId64 "\n", rev);
			return 0;
		}
		if (rc == -ECANCELED) {
			printf("cancelled after_cancel_ms=%" PRId64 "\n", ctl_now_ms() - cancel_at);
			if (cancel_ms > 0)
				pthread_join(th, NULL);
			return 0;
		}
		if (rc == -ESTALE) {
			struct ctl_etcd_kvs kvs;

			printf("compacted err=%s\n", ctl_etcd_error(c));
			if ((rc = ctl_etcd_range(c, prefix, &kvs)) < 0)
				return fail(c, rc);
			printf("relist rev=%" PRId64 " n=%zu\n", kvs.rev, kvs.n);
			rev = kvs.rev + 1;
			ctl_etcd_kvs_free(&kvs);
		} else {
			printf("down rc=%s next_rev=%" PRId64 " err=%s\n", strerrorname_np(-rc),
			    rev, ctl_etcd_error(c));
			fflush(stdout);
			sleep(1);
		}
		fflush(stdout);
	}
}

static int
probe_expiry(struct ctl_etcd *c, const char *key, int64_t ttl)
{
	struct ctl_etcd_kv kv;
	int64_t id, start;
	int rc;

	if ((rc = ctl_etcd_lease_grant(c, ttl, &id)) < 0 ||
	    (rc = ctl_etcd_put(c, key, "x", 1, id, NULL)) < 0)
		return fail(c, rc);
	start = ctl_now_ms();
	for (int i = 0; i < 600; i++) {
		if ((rc = ctl_etcd_get(c, key, &kv, NULL)) == -ENOENT) {
			printf("expired_ms=%" PRId64 "\n", ctl_now_ms() - start);
			return 0;
		}
		if (rc < 0)
			return fail(c, rc);
		ctl_etcd_kv_clear(&kv);
		usleep(50 * 1000);
	}
	printf("never expired\n");
	return 1;
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* N puts of 1..N in a row, the first (which authenticates and connects) not counted. */
static int
probe_puts(struct ctl_etcd *c, const char *key, long n)
{
	struct timespec a, b;
	int64_t *us;
	char v[24];
	int rc;

	if (n < 2 || (us = calloc((size_t)n, sizeof(*us))) == NULL)
		return 2;
	for (long i = 0; i < n; i++) {
		int len = snprintf(v, sizeof(v), "%ld", i + 1);

		clock_gettime(CLOCK_MONOTONIC, &a);
		if ((rc = ctl_etcd_put(c, key, v, (size_t)len, 0, NULL)) < 0) {
			free(us);
			return fail(c, rc);
		}
		clock_gettime(CLOCK_MONOTONIC, &b);
		us[i] = (b.tv_sec - a.tv_sec) * 1000000 + (b.tv_nsec - a.tv_nsec) / 1000;
	}
	qsort(us + 1, (size_t)n - 1, sizeof(*us), cmp_i64);
	printf("p50_us=%" PRId64 " max_us=%" PRId64 " first_us=%" PRId64 "\n", us[1 + (n - 1) / 2],
	    us[n - 1], us[0]);
	free(us);
	return 0;
}

static int
probe_cmd(struct ctl_etcd *c, int argc, char **argv)
{
	const char *cmd = argv[0];
	int64_t rev = 0, n = 0;
	int rc = -EINVAL;

	t0 = ctl_now_ms();
	if (strcmp(cmd, "put") == 0 && argc >= 3) {
		size_t len;
		char *v = read_value(argv[2], &len);

		rc = ctl_etcd_put(c, argv[1], v, len, argc > 3 ? strtoll(argv[3], NULL, 10) : 0,
		    &rev);
		free(v);
		if (rc == 0)
			printf("rev=%" PRId64 " ms=%" PRId64 "\n", rev, ctl_now_ms() - t0);
	} else if (strcmp(cmd, "get") == 0 && argc == 2) {
		struct ctl_etcd_kv kv;

		if ((rc = ctl_etcd_get(c, argv[1], &kv, &rev)) == 0) {
			printf("len=%zu fnv=%016" PRIx64 " mod_rev=%" PRId64 " lease=%" PRId64
			    " ms=%" PRId64 " value=%s\n", kv.value_len,
			    fnv1a(kv.value, kv.value_len), kv.mod_rev, kv.lease, ctl_now_ms() - t0,
			    kv.value);
			ctl_etcd_kv_clear(&kv);
		}
	} else if (strcmp(cmd, "range") == 0 && argc == 2) {
		struct ctl_etcd_kvs kvs;

		if ((rc = ctl_etcd_range(c, argv[1], &kvs)) == 0) {
			printf("rev=%" PRId64 " n=%zu ms=%" PRId64 "\n", kvs.rev, kvs.n,
			    ctl_now_ms() - t0);
			for (size_t i = 0; i < kvs.n; i++)
				printf("%s=%s\n", kvs.kv[i].key, kvs.kv[i].value);
			ctl_etcd_kvs_free(&kvs);
		}
	} else if (strcmp(cmd, "del") == 0 && argc >= 2) {
		rc = ctl_etcd_delete(c, argv[1], argc > 2 && strcmp(argv[2], "prefix") == 0, &n,
		    &rev);
		if (rc == 0)
			printf("deleted=%" PRId64 " rev=%" PRId64 " ms=%" PRId64 "\n", n, rev,
			    ctl_now_ms() - t0);
	} else if (strcmp(cmd, "grant") == 0 && argc == 2) {
		if ((rc = ctl_etcd_lease_grant(c, strtoll(argv[1], NULL, 10), &n)) == 0)
			printf("lease=%" PRId64 " ms=%" PRId64 "\n", n, ctl_now_ms() - t0);
	} else if (strcmp(cmd, "keepalive") == 0 && argc == 2) {
		if ((rc = ctl_etcd_lease_keepalive(c, strtoll(argv[1], NULL, 10), &n)) == 0)
			printf("ttl=%" PRId64 " ms=%" PRId64 "\n", n, ctl_now_ms() - t0);
	} else if (strcmp(cmd, "revoke") == 0 && argc == 2) {
		if ((rc = ctl_etcd_lease_revoke(c, strtoll(argv[1], NULL, 10))) == 0)
			printf("revoked ms=%" PRId64 "\n", ctl_now_ms() - t0);
	} else if (strcmp(cmd, "expiry") == 0 && argc == 3) {
		return probe_expiry(c, argv[1], strtoll(argv[2], NULL, 10));
	} else if (strcmp(cmd, "reauth") == 0 && argc == 3) {
		if ((rc = ctl_etcd_put(c, argv[1], "1", 1, 0, NULL)) == 0) {
			sleep((unsigned int)atoi(argv[2]));
			t0 = ctl_now_ms();
			rc = ctl_etcd_put(c, argv[1], "2", 1, 0, NULL);
		}
		if (rc == 0)
			printf("auths=%u ms=%" PRId64 "\n", ctl_etcd_auths(c), ctl_now_ms() - t0);
	} else if (strcmp(cmd, "puts") == 0 && argc == 3) {
		return probe_puts(c, argv[1], atol(argv[2]));
	} else if (strcmp(cmd, "watch") == 0 && argc >= 4) {
		return probe_watch(c, argv[1], strtoll(argv[2], NULL, 10), atol(argv[3]),
		    argc > 4 ? atol(argv[4]) : 0);
	} else {
		fprintf(stderr, "etcd_probe: %s: unknown command or wrong arguments\n", cmd);
		return 2;
	}
	return rc < 0 ? fail(c, rc) : 0;
}

int
main(int argc, char **argv)
{
	struct ctl_etcd_opts o = { 0 };
	const char *eps[8];
	char *user = NULL, *pass = NULL, *tok;
	struct ctl_etcd *c;
	int opt, rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "e:u:t:p:")) != -1) {
		switch (opt) {
		case 'e':
			for (tok = strtok(optarg, ","); tok != NULL && o.n_endpoints < 8;
			    tok = strtok(NULL, ","))
				eps[o.n_endpoints++] = tok;
			break;
		case 'u':
			user = optarg;
			if ((pass = strchr(optarg, ':')) != NULL)
				*pass++ = '\0';
			break;
		case 't':
			o.timeout_ms = (unsigned int)atoi(optarg);
			break;
		case 'p':
			o.page = (unsigned int)atoi(optarg);
			break;
		default:
			return 2;
		}
	}
	if (optind >= argc || o.n_endpoints == 0) {
		fprintf(stderr, "usage: etcd_probe -e EP[,EP..] [-u USER:PASS] CMD ARGS\n");
		return 2;
	}
	o.endpoints = eps;
	o.user = user;
	o.password = pass;
	if ((c = ctl_etcd_new(&o)) == NULL) {
		perror("etcd_probe");
		return 2;
	}
	rc = probe_cmd(c, argc - optind, argv + optind);
	ctl_etcd_free(c);
	return rc;
}

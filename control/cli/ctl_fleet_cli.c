/*
 * namegatectl and the fleet's store (issue 27). A grant, a bundle and (from a management
 * host) a revocation are written to etcd by namegatectl itself, with the operator's own
 * credentials: a gateway's may not write grants, so a box's daemon never writes one for
 * its caller. Where the store is comes from --fleet FILE (a namegate.yaml with a fleet:
 * section, for a host without a daemon) or else from the daemon's status; who writes from
 * NAMEGATE_FLEET_USER and NAMEGATE_FLEET_PASSWORD_FILE.
 *
 *   grant VM HOST[:PORT] --for D [--reason T] [--json]   (a box in a fleet)
 *   revoke ID                                            (with --fleet: in the store)
 *   approve GATEWAY/ID [--for D], deny GATEWAY/ID         a request on another gateway
 *   publish FILE                                         FILE and FILE.minisig
 *
 * What the fleet shows (fleet, pending) is ctl_fleet_view.c's.
 */
#include <errno.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "ctl_bundle.h"
#include "ctl_cli.h"
#include "ctl_client.h"
#include "ctl_etcd.h"
#include "ctl_fleet_rec.h"
#include "ctl_grants.h"
#include "policy/load.h"

#define CTL_FLEET_LEASE_SLACK	60	/* seconds a record outlives what it says */

void
ctl_fleet_where_free(struct ctl_fleet_where *w)
{
	for (size_t i = 0; i < w->nep; i++)
		free(w->ep[i]);
	free(w->ep);
	free(w->name);
	free(w->prefix);
	memset(w, 0, sizeof(*w));
}

static int
ctl_fleet_where_set(struct ctl_fleet_where *w, const char *name, const char *prefix,
    const char *const *ep, size_t nep)
{
	w->name = strdup(name);
	w->prefix = strdup(prefix);
	w->ep = calloc(nep + 1, sizeof(w->ep[0]));
	for (size_t i = 0; w->ep != NULL && i < nep; i++)
		if ((w->ep[w->nep++] = strdup(ep[i])) == NULL)
			break;
	if (w->name == NULL || w->prefix == NULL || w->ep == NULL || w->nep != nep ||
	    (nep > 0 && w->ep[nep - 1] == NULL)) {
		fputs("namegatectl: out of memory\n", stderr);
		return CTL_EXIT_ERROR;
	}
	return -1;
}

/*
 * The store of --fleet FILE, else of the daemon's fleet. Returns -1 with *w filled, 0
 * with *w empty when neither names a store, or the exit status after saying why.
 */
int
ctl_fleet_where_find(const struct ctl_opts *o, struct ctl_fleet_where *w)
{
	struct json_object *f, *eps;
	const char *ep[POL_FLEET_ENDPOINTS_MAX];
	struct ctl_reply r;
	char err[512];
	size_t n = 0;
	int rc;

	memset(w, 0, sizeof(*w));
	if (o->fleet != NULL) {
		struct pol_config *cfg = ctl_config_load(o->fleet);

		if (cfg == NULL)
			return CTL_EXIT_ERROR;
		if (cfg->nfleet_endpoints == 0) {
			fprintf(stderr, "namegatectl: %s: no fleet.endpoints\n", o->fleet);
			pol_config_free(cfg);
			return CTL_EXIT_ERROR;
		}
		rc = ctl_fleet_where_set(w, cfg->fleet_name, cfg->fleet_prefix,
		    (const char *const *)cfg->fleet_endpoints, cfg->nfleet_endpoints);
		pol_config_free(cfg);
		return rc;
	}
	{
		const char *kv[] = { "cmd", "status", NULL };

		if (ctl_client_request(o->socket, kv, 0, &r, err, sizeof(err)) < 0 ||
		    r.error != NULL) {
			fprintf(stderr, "namegatectl: %s\n", r.error != NULL ? r.error : err);
			if (r.error != NULL)
				ctl_reply_free(&r);
			return CTL_EXIT_ERROR;
		}
	}
	if (!json_object_object_get_ex(r.json, "fleet", &f) ||
	    !json_object_object_get_ex(f, "endpoints", &eps) ||
	    !json_object_is_type(eps, json_type_array) || json_object_array_length(eps) == 0) {
		ctl_reply_free(&r);
		return 0;
	}
	for (size_t i = 0; i < json_object_array_length(eps) && n < POL_FLEET_ENDPOINTS_MAX; i++)
		ep[n++] = json_object_get_string(json_object_array_get_idx(eps, i));
	rc = ctl_fleet_where_set(w, ctl_json_str(f, "name"), ctl_json_str(f, "prefix"), ep, n);
	ctl_reply_free(&r);
	return rc;
}

struct ctl_etcd *
ctl_fleet_client(const struct ctl_fleet_where *w)
{
	const char *user = getenv("NAMEGATE_FLEET_USER");
	const char *pwfile = getenv("NAMEGATE_FLEET_PASSWORD_FILE");
	struct ctl_etcd_opts opts = { .endpoints = (const char *const *)w->ep,
		.n_endpoints = w->nep };
	struct ctl_etcd *c;
	char *pw = NULL;
	size_t len;

	if (user != NULL && *user != '\0') {
		if (pwfile == NULL || ctl_bundle_read(pwfile, 1024, &pw, &len) != 0) {
			fprintf(stderr, "namegatectl: NAMEGATE_FLEET_USER needs "
			    "NAMEGATE_FLEET_PASSWORD_FILE, a file holding the password\n");
			return NULL;
		}
		pw[strcspn(pw, "\r\n")] = '\0';
		opts.user = user;
		opts.password = pw;
	}
	c = ctl_etcd_new(&opts);
	if (pw != NULL) {
		explicit_bzero(pw, strlen(pw));
		free(pw);
	}
	if (c == NULL)
		fprintf(stderr, "namegatectl: etcd client: %s\n", strerror(errno));
	return c;
}

/* Who runs namegatectl: uid, user name, the host's short name. */
static void
ctl_fleet_me(struct ctl_fleet_grant *fg)
{
	struct passwd *pw = getpwuid(getuid());
	char host[256] = "";

	fg->g.uid = getuid();
	snprintf(fg->g.user, sizeof(fg->g.user), "%s", pw != NULL ? pw->pw_name : "?");
	if (fg->g.user[0] == '\0' || fg->g.user[0] == '?')
		snprintf(fg->g.user, sizeof(fg->g.user), "%" PRId64, fg->g.uid);
	gethostname(host, sizeof(host) - 1);
	host[strcspn(host, ".")] = '\0';
	snprintf(fg->origin, sizeof(fg->origin), "%s", pol_fleet_word_ok(host, strlen(host)) ?
	    host : "unknown");
}

static int64_t
ctl_fleet_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Writes grant fg (filled but for its maker and times) for secs: 0 with its id in *rev, or
 * the exit status after saying why.
 */
static int
ctl_fleet_put_grant(const struct ctl_fleet_where *w, struct ctl_fleet_grant *fg, uint32_t secs,
    int64_t *rev)
{
	char why[256], key[CTL_FLEET_KEY_MAX], tail[CTL_FLEET_GRANT_KEY_LEN + 1];
	struct ctl_etcd *c;
	int64_t lease = 0;
	uint64_t rnd;
	char *val;
	int rc;

	ctl_fleet_me(fg);
	fg->put_ms = ctl_fleet_ms();
	fg->g.created = fg->put_ms / 1000;
	fg->g.expires = fg->g.created + secs;
	/* checked as every gateway will check it: a record they refuse is never written */
	if ((val = ctl_fleet_grant_encode(fg)) == NULL ||
	    ctl_fleet_grant_decode(val, strlen(val), 1, fg, why, sizeof(why)) != 0) {
		fprintf(stderr, "namegatectl: grant: %s\n", val == NULL ? "out of memory" : why);
		free(val);
		return CTL_EXIT_ERROR;
	}
	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd) || (c = ctl_fleet_client(w)) == NULL) {
		free(val);
		return CTL_EXIT_ERROR;
	}
	snprintf(tail, sizeof(tail), "%016" PRIx64, rnd);
	ctl_fleet_key(key, w->prefix, "grants/", tail);
	if ((rc = ctl_etcd_lease_grant(c, (int64_t)secs + CTL_FLEET_LEASE_SLACK, &lease)) == 0)
		rc = ctl_etcd_put(c, key, val, strlen(val), lease, rev);
	free(val);
	if (rc != 0)
		fprintf(stderr, "namegatectl: grant not made: fleet %s's store: %s\n", w->name,
		    ctl_etcd_error(c));
	ctl_etcd_free(c);
	return rc != 0 ? CTL_EXIT_ERROR : 0;
}

int
ctl_fleet_grant(const struct ctl_fleet_where *w, const struct ctl_args *a)
{
	struct ctl_fleet_grant fg = { 0 };
	char why[256], until[32];
	int64_t rev = 0;
	uint32_t secs = 0;
	int rc;

	if (ctl_duration_parse(a->dur, &secs, why, sizeof(why)) < 0 ||
	    (size_t)snprintf(fg.g.vm, sizeof(fg.g.vm), "%s", a->pos[0]) >= sizeof(fg.g.vm) ||
	    (size_t)snprintf(fg.g.host, sizeof(fg.g.host), "%s", a->pos[1]) >= sizeof(fg.g.host) ||
	    (size_t)snprintf(fg.g.reason, sizeof(fg.g.reason), "%s", a->reason != NULL ?
	    a->reason : "") >= sizeof(fg.g.reason)) {
		fprintf(stderr, "namegatectl: grant: %s\n", secs == 0 ? why :
		    "VM, host or reason too long");
		return CTL_EXIT_ERROR;
	}
	if ((rc = ctl_fleet_put_grant(w, &fg, secs, &rev)) != 0)
		return rc;
	ctl_grant_time(fg.g.expires, until, sizeof(until));
	if (a->json)
		printf("{\"id\":%" PRId64 ",\"vm\":\"%s\",\"host\":\"%s\",\"expires\":%" PRId64
		    ",\"fleet\":\"%s\"}\n", rev, fg.g.vm, fg.g.host, fg.g.expires, w->name);
	else
		printf("grant %" PRId64 ": %s may reach %s until %s (in fleet %s's store: every "
		    "gateway of %s applies it)\n", rev, fg.g.vm, fg.g.host, until, w->name,
		    fg.g.vm);
	return CTL_EXIT_OK;
}

/* revoke ID with --fleet: a revocation record every gateway obeys. */
int
ctl_fleet_revoke(const struct ctl_fleet_where *w, const char *id_text)
{
	struct ctl_fleet_grant me = { 0 };
	char key[CTL_FLEET_KEY_MAX], *val;
	struct ctl_etcd *c;
	uint64_t id;
	int64_t lease = 0;
	int rc;

	if (ctl_fleet_id_parse(id_text, strlen(id_text), &id) != 0) {
		fprintf(stderr, "namegatectl: bad grant id \"%.32s\"\n", id_text);
		return CTL_EXIT_ERROR;
	}
	ctl_fleet_me(&me);
	ctl_fleet_key(key, w->prefix, "revoked/", id_text);
	if ((val = ctl_fleet_revoked_encode(id, me.g.user, me.g.uid, me.origin,
	    ctl_fleet_ms() / 1000)) == NULL || (c = ctl_fleet_client(w)) == NULL) {
		free(val);
		return CTL_EXIT_ERROR;
	}
	/* a grant lives at most 30 days: so long, its revocation */
	if ((rc = ctl_etcd_lease_grant(c, CTL_GRANT_SECONDS_MAX + CTL_FLEET_LEASE_SLACK,
	    &lease)) == 0)
		rc = ctl_etcd_put(c, key, val, strlen(val), lease, NULL);
	free(val);
	if (rc != 0)
		fprintf(stderr, "namegatectl: revoke not written: %s\n", ctl_etcd_error(c));
	else
		printf("grant %" PRIu64 " revoked in fleet %s's store\n", id, w->name);
	ctl_etcd_free(c);
	return rc != 0 ? CTL_EXIT_ERROR : CTL_EXIT_OK;
}

int
ctl_cmd_publish(const struct ctl_opts *o, int argc, char **argv)
{
	static const char usage[] = "publish FILE   (FILE.minisig beside it)";
	struct ctl_fleet_where w;
	struct ctl_bundle_sig sig;
	struct ctl_bundle_meta meta;
	char *file = NULL, *sigtext = NULL, sigpath[4096], why[256], key[CTL_FLEET_KEY_MAX];
	char *val = NULL;
	size_t flen, slen;
	struct ctl_args a;
	struct ctl_etcd *c = NULL;
	int rc;

	if ((rc = ctl_args_parse(argc, argv, 0, 1, 1, usage, &a)) >= 0)
		return rc;
	/* cut short, FILE.minisig would name another file */
	if ((size_t)snprintf(sigpath, sizeof(sigpath), "%s.minisig", a.pos[0]) >= sizeof(sigpath)) {
		fprintf(stderr, "namegatectl: publish: %s.minisig: %s\n", a.pos[0],
		    strerror(ENAMETOOLONG));
		rc = CTL_EXIT_ERROR;
		goto out;
	}
	if (ctl_bundle_read(a.pos[0], CTL_BUNDLE_FILE_MAX, &file, &flen) != 0 ||
	    ctl_bundle_read(sigpath, CTL_BUNDLE_SIG_FILE_MAX, &sigtext, &slen) != 0 ||
	    ctl_bundle_sig_parse(sigtext, slen, &sig, why, sizeof(why)) != 0 ||
	    ctl_bundle_comment_parse(sig.comment, sig.comment_len, &meta, why,
	    sizeof(why)) != 0) {
		fprintf(stderr, "namegatectl: publish: %s and its .minisig: %s\n", a.pos[0],
		    file == NULL || sigtext == NULL ? "cannot be read" : why);
		rc = CTL_EXIT_ERROR;
		goto out;
	}
	if ((rc = ctl_fleet_where_find(o, &w)) >= 0) {
		if (rc == 0)
			fputs("namegatectl: publish: no fleet store (--fleet FILE)\n", stderr);
		rc = CTL_EXIT_ERROR;
		goto out;
	}
	ctl_fleet_key(key, w.prefix, "bundles/", meta.shard);
	rc = CTL_EXIT_ERROR;
	if ((val = ctl_fleet_bundle_encode(file, flen, sigtext, slen, ctl_fleet_ms())) != NULL &&
	    (c = ctl_fleet_client(&w)) != NULL) {
		if (ctl_etcd_put(c, key, val, strlen(val), 0, NULL) != 0)
			fprintf(stderr, "namegatectl: publish: %s\n", ctl_etcd_error(c));
		else {
			printf("bundle serial %" PRIu64 " for shard %s published in fleet %s's "
			    "store (each gateway verifies it)\n", meta.serial, meta.shard, w.name);
			rc = CTL_EXIT_OK;
		}
	}
	ctl_etcd_free(c);
	ctl_fleet_where_free(&w);
out:
	free(val);
	free(file);
	free(sigtext);
	return rc;
}

/* The request GW/ID's record in the store into *p: -1, or the exit status after why. */
static int
ctl_fleet_request(const struct ctl_fleet_where *w, const char *gwid, struct ctl_fleet_pending *p)
{
	char key[CTL_FLEET_KEY_MAX], gw[POL_FLEET_WORD_MAX + 1], why[256];
	struct ctl_etcd_kv kv = { 0 };
	struct ctl_etcd *c;
	uint64_t id;
	int rc;

	if (ctl_fleet_gw_id_parse(gwid, strlen(gwid), gw, sizeof(gw), &id) != 0) {
		fprintf(stderr, "namegatectl: bad request \"%.64s\" (GATEWAY/ID, from "
		    "namegatectl pending)\n", gwid);
		return CTL_EXIT_ERROR;
	}
	ctl_fleet_key(key, w->prefix, "pending/", gwid);
	if ((c = ctl_fleet_client(w)) == NULL)
		return CTL_EXIT_ERROR;
	if ((rc = ctl_etcd_get(c, key, &kv, NULL)) != 0)
		fprintf(stderr, "namegatectl: request %s: %s\n", gwid, rc == -ENOENT ?
		    "nothing waits under it" : ctl_etcd_error(c));
	else if ((rc = ctl_fleet_pending_decode(kv.value, kv.value_len, p, why,
	    sizeof(why))) != 0)
		fprintf(stderr, "namegatectl: request %s: %s\n", gwid, why);
	ctl_etcd_kv_clear(&kv);
	ctl_etcd_free(c);
	return rc != 0 ? CTL_EXIT_ERROR : -1;
}

int
ctl_fleet_decide(const struct ctl_opts *o, const struct ctl_args *a, const char *cmd)
{
	struct ctl_fleet_where w;
	struct ctl_fleet_pending p;
	struct ctl_fleet_grant fg = { 0 };
	struct ctl_fleet_grant me = { 0 };
	char why[256], key[CTL_FLEET_KEY_MAX], *val;
	const char *dur = a->dur != NULL ? a->dur : "1h";
	struct ctl_etcd *c;
	uint32_t secs = 0;
	int64_t rev = 0, lease = 0, now;
	int rc;

	if ((rc = ctl_fleet_where_find(o, &w)) >= 0) {
		if (rc == 0)
			fputs("namegatectl: GATEWAY/ID names a request in a fleet, and this "
			    "gateway has no fleet store (--fleet FILE)\n", stderr);
		return CTL_EXIT_ERROR;
	}
	if ((rc = ctl_fleet_request(&w, a->pos[0], &p)) >= 0)
		goto out;
	rc = CTL_EXIT_ERROR;
	if (strcmp(cmd, "approve") == 0) {
		/* an approval is a grant of the name: the held query goes on when it is applied */
		if (ctl_duration_parse(dur, &secs, why, sizeof(why)) < 0) {
			fprintf(stderr, "namegatectl: approve: %s\n", why);
			goto out;
		}
		snprintf(fg.g.vm, sizeof(fg.g.vm), "%s", p.vm);
		snprintf(fg.g.host, sizeof(fg.g.host), "%s", p.name);
		snprintf(fg.g.reason, sizeof(fg.g.reason), "approved request %s", a->pos[0]);
		if ((rc = ctl_fleet_put_grant(&w, &fg, secs, &rev)) != 0)
			goto out;
		printf("request %s approved: %s may resolve and reach %s (grant %" PRId64 ", in "
		    "fleet %s's store)\n", a->pos[0], p.vm, p.name, rev, w.name);
		goto out;
	}
	ctl_fleet_me(&me);
	ctl_fleet_key(key, w.prefix, "decisions/", a->pos[0]);
	if ((val = ctl_fleet_decision_encode("deny", p.name, me.g.user, me.g.uid,
	    ctl_fleet_ms() / 1000)) == NULL || (c = ctl_fleet_client(&w)) == NULL) {
		free(val);
		goto out;
	}
	/* the request waits at most approval.timeout: the decision need not outlive that */
	now = ctl_fleet_ms() / 1000;
	if (ctl_etcd_lease_grant(c, CTL_FLEET_LEASE_SLACK + (p.expires > now ? p.expires - now :
	    0), &lease) == 0 &&
	    ctl_etcd_put(c, key, val, strlen(val), lease, NULL) == 0) {
		printf("request %s denied: %s is told REFUSED for %s (through fleet %s's store)\n",
		    a->pos[0], p.vm, p.name, w.name);
		rc = CTL_EXIT_OK;
	} else {
		fprintf(stderr, "namegatectl: deny not written: %s\n", ctl_etcd_error(c));
	}
	free(val);
	ctl_etcd_free(c);
out:
	ctl_fleet_where_free(&w);
	return rc;
}


/*
 * A stand-in for the namegate daemon's control plane, for testing namegatectl: the real
 * control socket (ctl_sock) and policy loader, canned counters instead of a dataplane.
 *
 *   fake_daemon -s SOCKET -c CONFIG [-e EVENTS] [-l FLOW_LOG] [-t TIMEOUT_MS] [-f HA_FIFO]
 *
 * ha is the real HA concern (control/ha) on HA_FIFO, its workers' heartbeat always fresh;
 * without -f, the real reply of a namegate that is not one of a pair.
 *
 * check and reload do what the daemon's callbacks are meant to do (pol_explain() against
 * the running generation; load, keep the old generation on errors), so the test can hold
 * the online and offline forms of check to the same output. stats, bindings, flows and
 * suggest answer from the tables below for agent1 and build-runner-long; any other VM is
 * unknown. grant, grants and revoke use the real grant table (control/grants/ctl_grants.c: its
 * checks, its state file CONFIG.grants.json), and check sees the grants, as the daemon's
 * does. status names the flow log only with -l, as a daemon without flow_log leaves it out.
 * Prints "ready" once the socket listens; exits 0 on SIGTERM or SIGINT.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "ctl_grants.h"
#include "ctl_ha.h"
#include "ctl_sock.h"
#include "policy/load.h"

struct fake {
	const char *config;
	const char *events;
	const char *flow_log;
	struct pol_config *cfg;
	uint64_t generation;
	struct ctl_grants *grants;
};

static int64_t
fake_now(void)
{
	return (int64_t)time(NULL);
}

static volatile sig_atomic_t fake_stop;

static void
fake_sig(int sig)
{
	(void)sig;
	fake_stop = 1;
}

/* s as a JSON string literal. */
static void
fake_str(FILE *out, const char *s)
{
	struct json_object *o = json_object_new_string(s);

	fputs(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE), out);
	json_object_put(o);
}

static bool
fake_known(FILE *out, const char *vm)
{
	if (strcmp(vm, "agent1") == 0 || strcmp(vm, "build-runner-long") == 0)
		return true;
	fprintf(out, "unknown VM '%s'", vm);
	return false;
}

static int
fake_status(FILE *out, const struct ctl_req *req __attribute__((unused)), void *arg)
{
	struct fake *f = arg;

	fprintf(out, "{\"version\":\"0.1.0\",\"pid\":%ld,\"generation\":%" PRIu64 ",\"config\":",
	    (long)getpid(), f->generation);
	fake_str(out, f->config);
	fprintf(out, ",\"vms\":%zu,\"workers\":%u,\"uptime\":93784,\"events\":", f->cfg->nvms,
	    f->cfg->workers);
	fake_str(out, f->events != NULL ? f->events : "");
	fputs(",\"metrics\":\"127.0.0.1:9477\",\"ports\":{\"vm\":", out);
	fake_str(out, f->cfg->vm_port);
	fputs(",\"uplink\":", out);
	fake_str(out, f->cfg->uplink_port);
	fputc('}', out);
	if (f->flow_log != NULL) {
		fputs(",\"flow_log\":", out);
		fake_str(out, f->flow_log);
	}
	fputc('}', out);
	return 0;
}

/* Widths differ on purpose, so the table's alignment shows. */
static const char *const fake_vm_stats[] = {
	"{\"vm\":\"agent1\",\"mode\":\"enforce\","
	"\"egress\":{\"allowed\":{\"packets\":1523,\"bytes\":2048576},"
	"\"blocked\":{\"packets\":17,\"bytes\":1088},\"would_block\":{\"packets\":0,\"bytes\":0}},"
	"\"ingress\":{\"packets\":1490,\"bytes\":9120345},"
	"\"blocked\":{\"spoofed\":0,\"no_binding\":5,\"sni_denied\":9,\"dns_denied\":3,\"quic\":0},"
	"\"dns\":{\"allowed\":120,\"blocked\":3},\"bindings\":12,\"flows\":4}",
	"{\"vm\":\"build-runner-long\",\"mode\":\"audit\","
	"\"egress\":{\"allowed\":{\"packets\":3,\"bytes\":180},"
	"\"blocked\":{\"packets\":0,\"bytes\":0},\"would_block\":{\"packets\":42,\"bytes\":2520}},"
	"\"ingress\":{\"packets\":3,\"bytes\":180},"
	"\"blocked\":{\"no_binding\":40,\"sni_denied\":2,\"not_tls\":2,\"quic\":1},"
	"\"dns\":{\"allowed\":7,\"blocked\":0},\"bindings\":0,\"flows\":0}",
};

static int
fake_stats(FILE *out, const struct ctl_req *req, void *arg)
{
	const char *vm = req->vm;
	struct fake *f = arg;

	if (vm != NULL && !fake_known(out, vm))
		return -ENOENT;
	fputs("{\"vms\":[", out);
	if (vm == NULL)
		fprintf(out, "%s,%s", fake_vm_stats[0], fake_vm_stats[1]);
	else
		fputs(fake_vm_stats[strcmp(vm, "agent1") == 0 ? 0 : 1], out);
	fprintf(out, "],\"ports\":{\"vm\":{\"rx\":1600,\"tx\":1500},\"uplink\":{\"rx\":1500,"
	    "\"tx\":1540},\"slow\":{\"rx\":2,\"tx\":2}},\"generation\":%" PRIu64 "}",
	    f->generation);
	return 0;
}

static int
fake_bindings(FILE *out, const struct ctl_req *req, void *arg)
{
	const char *vm = req->vm;
	(void)arg;
	if (!fake_known(out, vm))
		return -ENOENT;
	fprintf(out, "{\"vm\":\"%s\",\"bindings\":[", vm);
	if (strcmp(vm, "agent1") == 0)
		fputs("{\"name\":\"pypi.org\",\"addr\":\"151.101.64.223\",\"ttl\":3599,"
		    "\"ports\":[443,80]},"
		    "{\"name\":\"files.pythonhosted.org\",\"addr\":\"151.101.0.223\",\"ttl\":290,"
		    "\"ports\":\"any\"},"
		    "{\"name\":\"pypi.org\",\"addr\":\"2a04:4e42::223\",\"ttl\":3599}", out);
	else
		fputs("{\"name\":\"Upload.PyPI.org\",\"addr\":\"151.101.0.224\",\"ttl\":60}",
		    out);
	fputs("]}", out);
	return 0;
}

static int
fake_flows(FILE *out, const struct ctl_req *req, void *arg)
{
	const char *vm = req->vm;
	(void)arg;
	if (!fake_known(out, vm))
		return -ENOENT;
	fprintf(out, "{\"vm\":\"%s\",\"flows\":[", vm);
	if (strcmp(vm, "agent1") == 0)
		fputs("{\"proto\":\"tcp\",\"peer\":\"151.101.64.223:443\",\"vm_port\":40312,"
		    "\"state\":\"established\",\"age\":12,\"verdict\":\"allowed\"},"
		    "{\"proto\":\"udp\",\"peer\":\"10.77.0.1:53\",\"vm_port\":5353,"
		    "\"state\":\"open\",\"age\":1,\"verdict\":\"allowed\"},"
		    "{\"proto\":\"tcp\",\"peer\":\"[2a04:4e42::223]:443\",\"vm_port\":40400,"
		    "\"state\":\"syn_sent\",\"age\":3601,\"verdict\":\"allowed\"}", out);
	fputs("]}", out);
	return 0;
}

/* SPEC s5: parse and validate first; the running generation stays on any error. */
static int
fake_reload(FILE *out, const struct ctl_req *req __attribute__((unused)), void *arg)
{
	struct pol_errs errs = { 0 };
	struct fake *f = arg;
	struct pol_config *next;

	if ((next = pol_load_file(f->config, &errs)) == NULL) {
		if (errs.n == 0 && errs.dropped == 0)
			fprintf(out, "%s: out of memory", f->config);
		pol_errs_print(out, &errs);
		pol_errs_free(&errs);
		return -EINVAL;
	}
	pol_config_free(f->cfg);
	f->cfg = next;
	f->generation++;
	fprintf(out, "{\"ok\":true,\"generation\":%" PRIu64 "}", f->generation);
	return 0;
}

/* What the daemon's check callback does: pol_explain(), its line or its error text. */
static int
fake_check(FILE *out, const struct ctl_req *req, void *arg)
{
	const char *vm = req->vm, *host = req->host;
	struct fake *f = arg;
	char *line = NULL, *err = NULL;
	size_t linelen = 0, errlen = 0;
	struct ctl_overlay ov;
	FILE *lf, *ef;
	int rc;

	if (ctl_grants_expire(f->grants, fake_now(), NULL, NULL) > 0)
		ctl_grants_save(f->grants, NULL, 0);
	if (ctl_overlay_build(f->grants, f->cfg, fake_now(), &ov) < 0)
		return -ENOMEM;
	if ((lf = open_memstream(&line, &linelen)) == NULL) {
		ctl_overlay_free(&ov);
		return -ENOMEM;
	}
	if ((ef = open_memstream(&err, &errlen)) == NULL) {
		fclose(lf);
		free(line);
		ctl_overlay_free(&ov);
		return -ENOMEM;
	}
	rc = pol_explain(&ov.view, vm, host, lf, ef);
	fclose(lf);
	fclose(ef);
	ctl_overlay_free(&ov);
	if (rc == 0 || rc == 1) {
		if (linelen > 0 && line[linelen - 1] == '\n')
			line[--linelen] = '\0';
		fprintf(out, "{\"verdict\":\"%s\",\"line\":", rc == 0 ? "allow" : "block");
		fake_str(out, line);
		fputc('}', out);
		rc = 0;
	} else {
		fputs(err, out);
		rc = -EINVAL;
	}
	free(line);
	free(err);
	return rc;
}

static int
fake_suggest(FILE *out, const struct ctl_req *req, void *arg)
{
	const char *vm = req->vm;
	(void)arg;
	if (!fake_known(out, vm))
		return -ENOENT;
	if (strcmp(vm, "agent1") == 0)
		fputs("{\"vm\":\"agent1\",\"allow\":[]}", out);
	else
		fputs("{\"vm\":\"build-runner-long\",\"policy\":\"sandbox\",\"allow\":["
		    "\"*.githubusercontent.com\",\"files.pythonhosted.org\",\"github.com:22\","
		    "\"pypi.org\",\"[2001:db8::1]:443\"]}", out);
	return 0;
}

static void
fake_grant_json(FILE *out, const struct ctl_grant *g)
{
	char until[32];

	ctl_grant_time(g->expires, until, sizeof(until));
	fprintf(out, "{\"id\":%" PRIu64 ",\"vm\":", g->id);
	fake_str(out, g->vm);
	fputs(",\"host\":", out);
	fake_str(out, g->host);
	fprintf(out, ",\"until\":\"%s\",\"expires\":%" PRId64 ",\"left\":%" PRId64
	    ",\"reason\":", until, g->expires, g->expires - fake_now());
	fake_str(out, g->reason);
	if (g->uid >= 0) {
		fprintf(out, ",\"uid\":%" PRId64 ",\"user\":", g->uid);
		fake_str(out, g->user);
	}
	fputc('}', out);
}

static int
fake_grant(FILE *out, const struct ctl_req *req, void *arg)
{
	const struct ctl_req *r = req;
	struct fake *f = arg;
	struct ctl_grant g;
	char why[512];
	int rc;

	if ((rc = ctl_grants_add(f->grants, f->cfg, r->vm, r->host, r->dur, r->reason,
	    fake_now(), &g, why, sizeof(why))) < 0 ||
	    (rc = ctl_grants_set_maker(f->grants, g.id, r->peer->uid, r->peer->user, &g)) < 0 ||
	    (rc = ctl_grants_save(f->grants, why, sizeof(why))) < 0) {
		fputs(why, out);
		return rc;
	}
	fake_grant_json(out, &g);
	return 0;
}

static int
fake_grants(FILE *out, const struct ctl_req *req, void *arg)
{
	const char *vm = req->vm;
	struct fake *f = arg;
	const char *sep = "";

	if (vm != NULL && pol_config_vm(f->cfg, vm) == NULL) {
		fprintf(out, "unknown VM '%s'", vm);
		return -ENOENT;
	}
	ctl_grants_expire(f->grants, fake_now(), NULL, NULL);
	fputs("{\"grants\":[", out);
	for (size_t i = 0; i < ctl_grants_count(f->grants); i++) {
		const struct ctl_grant *g = ctl_grants_at(f->grants, i);

		if (vm != NULL && strcmp(vm, g->vm) != 0)
			continue;
		fputs(sep, out);
		fake_grant_json(out, g);
		sep = ",";
	}
	fputs("]}", out);
	return 0;
}

static int
fake_revoke(FILE *out, const struct ctl_req *req, void *arg)
{
	const char *id = req->id;
	struct fake *f = arg;
	struct ctl_grant g;

	if (strspn(id, "0123456789") != strlen(id) ||
	    ctl_grants_revoke(f->grants, strtoull(id, NULL, 10), &g) < 0) {
		fprintf(out, "no live grant %s", id);
		return -ENOENT;
	}
	ctl_grants_save(f->grants, NULL, 0);
	fputs("{\"revoked\":", out);
	fake_grant_json(out, &g);
	fputc('}', out);
	return 0;
}

/* The fake's workers always just beat. */
static int64_t
fake_beat(void *arg)
{
	(void)arg;
	return 5;
}

static void
fake_role(enum ctl_ha_role role, void *arg)
{
	(void)role;
	(void)arg;
}

/* -f FIFO: the real HA concern on it; without, the real "not a pair" reply. */
static int
fake_ha(struct ctl_sock *s, const char *fifo, struct ctl_ha **ha, char *err, size_t len)
{
	struct ctl_ha_conf conf = { .fifo = fifo, .heartbeat_ms = 1000, .on_role = fake_role,
		.beat = fake_beat };

	if (fifo == NULL)
		return ctl_ha_serve_absent(s);
	if ((*ha = ctl_ha_start(&conf, NULL, err, len)) == NULL)
		return -1;
	return ctl_ha_serve(*ha, s);
}

static const struct ctl_cmd fake_ops[] = {
	{ "status", 0, fake_status },
	{ "stats", CTL_ARG_VM, fake_stats },
	{ "bindings", CTL_ARG_VM | CTL_ARG_VM_REQ, fake_bindings },
	{ "flows", CTL_ARG_VM | CTL_ARG_VM_REQ, fake_flows },
	{ "reload", 0, fake_reload },
	{ "check", CTL_ARG_VM | CTL_ARG_VM_REQ | CTL_ARG_HOST, fake_check },
	{ "suggest", CTL_ARG_VM | CTL_ARG_VM_REQ, fake_suggest },
	{ "grant", CTL_ARG_VM | CTL_ARG_VM_REQ | CTL_ARG_HOST | CTL_ARG_FOR, fake_grant },
	{ "grants", CTL_ARG_VM, fake_grants },
	{ "revoke", CTL_ARG_ID, fake_revoke },
};

int
main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = fake_sig };
	struct pol_errs errs = { 0 };
	struct fake f = { .generation = 1 };
	const char *path = NULL, *fifo = NULL;
	struct ctl_ha *ha = NULL;
	struct ctl_sock *s;
	int ch, timeout = 0;
	char err[256];

	while ((ch = getopt(argc, argv, "s:c:e:l:t:f:")) != -1) {
		switch (ch) {
		case 's':
			path = optarg;
			break;
		case 'c':
			f.config = optarg;
			break;
		case 'e':
			f.events = optarg;
			break;
		case 'l':
			f.flow_log = optarg;
			break;
		case 't':
			timeout = atoi(optarg);
			break;
		case 'f':
			fifo = optarg;
			break;
		default:
			goto usage;
		}
	}
	if (path == NULL || f.config == NULL || optind != argc)
		goto usage;
	if ((f.cfg = pol_load_file(f.config, &errs)) == NULL) {
		pol_errs_print(stderr, &errs);
		pol_errs_free(&errs);
		return 1;
	}
	snprintf(err, sizeof(err), "%s.grants.json", f.config);
	if ((f.grants = ctl_grants_new(err)) == NULL ||
	    ctl_grants_load(f.grants, err, sizeof(err)) < 0) {
		fprintf(stderr, "fake_daemon: grants: %s\n", f.grants ? err : strerror(errno));
		return 1;
	}
	if ((s = ctl_sock_open(path, timeout, err, sizeof(err))) == NULL ||
	    ctl_sock_serve(s, fake_ops, sizeof(fake_ops) / sizeof(fake_ops[0]), &f) != 0 ||
	    fake_ha(s, fifo, &ha, err, sizeof(err)) != 0) {
		fprintf(stderr, "fake_daemon: %s\n", err);
		pol_config_free(f.cfg);
		return 1;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	puts("ready");
	fflush(stdout);
	while (!fake_stop) {
		int rc = ctl_sock_poll(s, 100);

		if (rc < 0) {
			fprintf(stderr, "fake_daemon: poll: %s\n", strerror(-rc));
			break;
		}
	}
	ctl_sock_close(s);
	ctl_ha_stop(ha);
	ctl_grants_free(f.grants);
	pol_config_free(f.cfg);
	return 0;
usage:
	fputs("usage: fake_daemon -s SOCKET -c CONFIG [-e EVENTS] [-l FLOW_LOG] "
	    "[-t TIMEOUT_MS] [-f HA_FIFO]\n", stderr);
	return 2;
}

/*
 * namegate: command line (SPEC s3), the offline --check, and the daemon. EAL options
 * are split from ours, so --check runs without EAL (no hugepages, no devices, no root)
 * and the daemon can hand eal[] to rte_eal_init().
 *
 *   namegate -c FILE [--check [--bundle BUNDLE]] [--eal EAL options...]
 *   namegate [EAL options] -- -c FILE [--check]      the DPDK convention
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <rte_version.h>

#include "ctl_bundle.h"
#include "dp_eal.h"
#include "dp_run.h"
#include "policy/load.h"

struct ng_opts {
	const char *config;
	bool check;
	const char *bundle;	/* --check --bundle: a signed policy bundle to judge */
	char **eal;		/* EAL arguments from the command line, aliases argv */
	int neal;
};

static void
ng_usage(FILE *out)
{
	fputs("usage: namegate -c FILE [--check [--bundle BUNDLE]] [--eal EAL-OPTIONS...]\n"
	    "       namegate [EAL-OPTIONS] -- -c FILE [--check]\n"
	    "  -c, --config FILE  the configuration (YAML, see namegate.yaml(5))\n"
	    "      --check        validate FILE, print the compiled policy, EAL's memory against\n"
	    "                     what the tables need, and warnings; exit 0 or 1\n"
	    "      --bundle BUNDLE\n"
	    "                     with --check: would this gateway accept the signed policy\n"
	    "                     bundle BUNDLE (and BUNDLE.minisig)? exit 0 or 1\n"
	    "      --eal ...      the rest of the line goes to DPDK's EAL\n"
	    "  -V, --version      print versions and exit\n"
	    "See namegate(8).\n", out);
}

/*
 * Split argv. With "--", what comes before it is EAL's (so EAL's own -c coremask is never
 * taken for our -c). Returns 0, 1 to exit successfully (help, version), or -1.
 */
static int
ng_parse_args(int argc, char **argv, struct ng_opts *o)
{
	int first = 1;

	*o = (struct ng_opts){ 0 };
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			o->eal = argv + 1;
			o->neal = i - 1;
			first = i + 1;
			break;
		}
	}
	for (int i = first; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "-c") == 0 || strcmp(a, "--config") == 0) {
			if (++i == argc) {
				fprintf(stderr, "namegate: %s needs a file\n", a);
				return -1;
			}
			o->config = argv[i];
		} else if (strncmp(a, "--config=", 9) == 0) {
			o->config = a + 9;
		} else if (strcmp(a, "--check") == 0) {
			o->check = true;
		} else if (strcmp(a, "--bundle") == 0) {
			if (++i == argc) {
				fprintf(stderr, "namegate: %s needs a file\n", a);
				return -1;
			}
			o->bundle = argv[i];
		} else if (strcmp(a, "--eal") == 0) {
			if (o->eal != NULL) {
				fputs("namegate: EAL options both before -- and after --eal\n",
				    stderr);
				return -1;
			}
			o->eal = argv + i + 1;
			o->neal = argc - i - 1;
			break;
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			ng_usage(stdout);
			return 1;
		} else if (strcmp(a, "-V") == 0 || strcmp(a, "--version") == 0) {
			printf("namegate %s (%s)\n", NAMEGATE_VERSION, rte_version());
			return 1;
		} else {
			fprintf(stderr, "namegate: unknown option '%s'\n", a);
			ng_usage(stderr);
			return -1;
		}
	}
	if (o->config == NULL) {
		fputs("namegate: -c FILE is required\n", stderr);
		ng_usage(stderr);
		return -1;
	}
	if (o->bundle != NULL && !o->check) {
		fputs("namegate: --bundle goes with --check\n", stderr);
		return -1;
	}
	return 0;
}

/*
 * --check: the same loader the daemon uses, the EAL plan it would start with (a file whose
 * tables cannot fit is refused), then the summary and broad-host warnings.
 */
static int
ng_check(const struct ng_opts *o)
{
	struct pol_errs errs = { 0 };
	struct pol_config *cfg;
	struct dp_eal plan;
	size_t nwarn;

	if ((cfg = pol_load_file(o->config, &errs)) == NULL) {
		if (errs.n == 0 && errs.dropped == 0)
			fprintf(stderr, "%s: out of memory\n", o->config);
		pol_errs_print(stderr, &errs);
		pol_errs_free(&errs);
		return 1;
	}
	if (o->bundle != NULL) {	/* the bundle's verdict, not the file's summary */
		int rc = ctl_bundle_check_file(cfg, o->bundle, time(NULL), stdout);

		pol_config_free(cfg);
		return rc;
	}
	if (dp_eal_plan(cfg, o->eal, o->neal, &plan, stderr) != 0 ||
	    dp_eal_check(cfg, &plan, &errs) != 0) {
		dp_eal_print(&plan, stderr);
		pol_errs_print(stderr, &errs);
		pol_errs_free(&errs);
		pol_config_free(cfg);
		return 1;
	}
	pol_config_summary(cfg, stdout);
	dp_eal_print(&plan, stdout);
	nwarn = pol_warn_print(cfg, stdout);
	printf("%zu warning%s\n", nwarn, nwarn == 1 ? "" : "s");
	pol_config_free(cfg);
	return 0;
}

/* The daemon refuses to start on any invalid configuration: it fails closed. */
static int
ng_daemon(const struct ng_opts *o)
{
	struct pol_errs errs = { 0 };
	struct pol_config *cfg;
	int rc;

	if ((cfg = pol_load_file(o->config, &errs)) == NULL) {
		if (errs.n == 0 && errs.dropped == 0)
			fprintf(stderr, "%s: out of memory\n", o->config);
		pol_errs_print(stderr, &errs);
		pol_errs_free(&errs);
		fputs("namegate: not started: the configuration has errors\n", stderr);
		return 1;
	}
	rc = dp_run(&cfg, o->eal, o->neal);
	pol_config_free(cfg);
	return rc;
}

int
main(int argc, char **argv)
{
	struct ng_opts o;
	int rc;

	if ((rc = ng_parse_args(argc, argv, &o)) != 0)
		return rc > 0 ? 0 : 2;
	if (o.check)
		return ng_check(&o);
	return ng_daemon(&o);
}

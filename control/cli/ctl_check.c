/*
 * namegatectl check [-c FILE] VM HOST[:PORT]. With -c the decision is computed offline
 * from the file, by the same loader and matcher the daemon runs, so it predicts what the
 * dataplane does; without, the daemon answers from its running generation, with the same
 * line and exit status.
 */
#include <getopt.h>
#include <stdio.h>

#include "ctl_cli.h"
#include "policy/load.h"

int
ctl_cmd_check(const struct ctl_opts *o, int argc, char **argv)
{
	struct pol_errs errs = { 0 };
	struct pol_config *cfg;
	const char *file = NULL;
	int ch, rc;

	optind = 1;
	while ((ch = getopt(argc, argv, "c:h")) != -1) {
		switch (ch) {
		case 'c':
			file = optarg;
			break;
		case 'h':
			puts("usage: namegatectl check [-c FILE] VM HOST[:PORT]");
			return CTL_EXIT_OK;
		default:
			fputs("usage: namegatectl check [-c FILE] VM HOST[:PORT]\n", stderr);
			return CTL_EXIT_ERROR;
		}
	}
	if (argc - optind != 2) {
		fputs("usage: namegatectl check [-c FILE] VM HOST[:PORT]\n", stderr);
		return CTL_EXIT_ERROR;
	}
	if (file == NULL)
		return ctl_check_online(o, argv[optind], argv[optind + 1]);
	if ((cfg = pol_load_file(file, &errs)) == NULL) {
		if (errs.n == 0 && errs.dropped == 0)
			fprintf(stderr, "%s: out of memory\n", file);
		pol_errs_print(stderr, &errs);
		pol_errs_free(&errs);
		return CTL_EXIT_ERROR;
	}
	rc = pol_explain(cfg, argv[optind], argv[optind + 1], stdout, stderr);
	pol_config_free(cfg);
	return rc;
}

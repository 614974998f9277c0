/*
 * namegatectl: the operator CLI. A table of commands; most talk to the daemon's control
 * socket, check also works offline from the configuration file.
 *
 *   namegatectl [-s SOCKET] COMMAND [ARGS...]
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ctl_cli.h"

#define CTL_SOCKET_DEFAULT	"/run/namegate/namegate.sock"

struct ctl_cmd {
	const char *name;
	const char *args;
	const char *help;
	ctl_cmd_fn *fn;
};

static const struct ctl_cmd ctl_cmds[] = {
	{ "status", "[--json]", "daemon status and policy generation", ctl_cmd_status },
	{ "stats", "[VM] [--json]", "per-VM counters", ctl_cmd_stats },
	{ "bindings", "VM [--json]", "addresses a VM may reach now", ctl_cmd_bindings },
	{ "flows", "VM [--json]", "a VM's open flows", ctl_cmd_flows },
	{ "events", "[-f|--follow] [-e PATH]", "the event log", ctl_cmd_events },
	{ "reload", "[--json]", "load the configuration file again", ctl_cmd_reload },
	{ "check", "[-c FILE] VM HOST[:PORT]", "allow or block, and the rule that decided",
	    ctl_cmd_check },
	{ "suggest", "VM [--json]", "an allowlist from what an audit-mode VM tried",
	    ctl_cmd_suggest },
	{ "grant", "VM HOST[:PORT] --for D [--reason T]", "allow a host for a VM, for a while",
	    ctl_cmd_grant },
	{ "grants", "[VM] [--json]", "live grants and when they end", ctl_cmd_grants },
	{ "revoke", "ID [--json]", "end a grant now", ctl_cmd_revoke },
	{ "pending", "[VM] [-f|--follow] [--json]", "DNS queries waiting for approval",
	    ctl_cmd_pending },
	{ "approve", "ID [--for D]", "grant a waiting name (default 1h) and answer it",
	    ctl_cmd_approve },
	{ "deny", "ID [--json]", "refuse a waiting query now", ctl_cmd_deny },
	{ NULL, NULL, NULL, NULL },
};

static void
ctl_usage(FILE *out)
{
	fputs("usage: namegatectl [-s SOCKET] COMMAND [ARGS...]\n", out);
	for (const struct ctl_cmd *c = ctl_cmds; c->name != NULL; c++)
		fprintf(out, "  %-8s %-36s %s\n", c->name, c->args, c->help);
	fputs("  -s, --socket SOCKET  the control socket (default " CTL_SOCKET_DEFAULT ")\n"
	    "  -V, --version        print the version and exit\n"
	    "exit status: 0 ok or check: allow; 1 check: block, or reload: rejected;\n"
	    "             2 error (namegate not running, unknown VM, usage)\n"
	    "See namegatectl(8).\n", out);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct ctl_opts o = { .socket = CTL_SOCKET_DEFAULT };
	int ch;

	/* "+": stop at the command, whose options are its own. */
	while ((ch = getopt_long(argc, argv, "+s:hV", longopts, NULL)) != -1) {
		switch (ch) {
		case 's':
			o.socket = optarg;
			break;
		case 'h':
			ctl_usage(stdout);
			return CTL_EXIT_OK;
		case 'V':
			printf("namegatectl %s\n", NAMEGATE_VERSION);
			return CTL_EXIT_OK;
		default:
			ctl_usage(stderr);
			return CTL_EXIT_ERROR;
		}
	}
	if (optind == argc) {
		ctl_usage(stderr);
		return CTL_EXIT_ERROR;
	}
	for (const struct ctl_cmd *c = ctl_cmds; c->name != NULL; c++)
		if (strcmp(c->name, argv[optind]) == 0)
			return c->fn(&o, argc - optind, argv + optind);
	fprintf(stderr, "namegatectl: unknown command '%s'\n", argv[optind]);
	ctl_usage(stderr);
	return CTL_EXIT_ERROR;
}

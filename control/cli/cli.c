/*
 * namegatectl: the operator CLI. A table of commands; most talk to the daemon's control
 * socket, check also works offline from the configuration file.
 *
 *   namegatectl [-s SOCKET | -c FILE] COMMAND [ARGS...]
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_cli.h"
#include "policy/load.h"

struct ctl_cmd {
	const char *name;
	const char *args;
	const char *help;
	ctl_cmd_fn *fn;
};

static const struct ctl_cmd ctl_cmds[] = {
	{ "status", "[--json]", "daemon status and policy generation", ctl_cmd_status },
	{ "stats", "[VM] [--json]", "per-VM counters", ctl_cmd_stats },
	{ "bindings", "[VM] [--name P] [--json]", "addresses VMs may reach now",
	    ctl_cmd_bindings },
	{ "flows", "VM [--json]", "a VM's open flows", ctl_cmd_flows },
	{ "flows", "[FILTERS] [-f] [--flow-log PATH] [--json]", "the flow log", ctl_cmd_flows },
	{ "events", "[FILTERS] [-f|--follow] [-e PATH]", "the event log", ctl_cmd_events },
	{ "reload", "[--json]", "load the configuration file again", ctl_cmd_reload },
	{ "reopen", "", "open the event log and the flow log again (logrotate)",
	    ctl_cmd_reopen },
	{ "check", "[-c FILE] [--json] VM HOST[:PORT]",
	    "allow or block, and the rule that decided", ctl_cmd_check },
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
	{ "vms", "", "the VMs' names (of -c FILE, else the daemon's)", ctl_cmd_vms },
	{ "fleet", "[--json]", "every gateway's policy serial and state (fleet store)",
	    ctl_cmd_fleet },
	{ "publish", "FILE", "a signed bundle (FILE, FILE.minisig) into the fleet store",
	    ctl_cmd_publish },
	{ "ha", "[--json] | --check [--timeout MS]", "the HA pair's role; may this box lead",
	    ctl_cmd_ha },
	{ NULL, NULL, NULL, NULL },
};

static void
ctl_usage(FILE *out)
{
	fputs("usage: namegatectl [-s SOCKET | -c FILE] [-F FILE] COMMAND [ARGS...]\n", out);
	for (const struct ctl_cmd *c = ctl_cmds; c->name != NULL; c++)
		fprintf(out, "  %-8s %-42s %s\n", c->name, c->args, c->help);
	fputs("FILTERS: --vm VM --reason R --name PATTERN --since TIME|DURATION --last N\n"
	    "  -s, --socket SOCKET  the control socket; else $NAMEGATE_SOCKET, else FILE's\n"
	    "                       control_socket, else " CTL_SOCKET_DEFAULT "\n"
	    "  -c, --config FILE    the configuration whose control_socket to use\n"
	    "  -F, --fleet FILE     the fleet store of FILE's fleet: (grant, revoke, publish\n"
	    "                       write there as $NAMEGATE_FLEET_USER)\n"
	    "  -V, --version        print the version and exit\n"
	    "exit status: 0 ok or check: allow; 1 check: block, or reload: rejected;\n"
	    "             2 error (namegate not running, unknown VM, usage)\n"
	    "See namegatectl(8).\n", out);
}

int
ctl_socket_find(struct ctl_opts *o, const char *opt_s)
{
	struct pol_config *cfg;
	const char *env = getenv("NAMEGATE_SOCKET");

	if (opt_s != NULL) {
		o->socket = opt_s;
	} else if (env != NULL && *env != '\0') {
		o->socket = env;
	} else if (o->config == NULL) {
		o->socket = CTL_SOCKET_DEFAULT;
	} else {
		if ((cfg = ctl_config_load(o->config)) == NULL)
			return CTL_EXIT_ERROR;
		/* held to the end: the process is short-lived and o->socket points into it */
		o->socket = strdup(cfg->control_socket);
		pol_config_free(cfg);
		if (o->socket == NULL) {
			fputs("namegatectl: out of memory\n", stderr);
			return CTL_EXIT_ERROR;
		}
	}
	return -1;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "config", required_argument, NULL, 'c' },
		{ "fleet", required_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct ctl_opts o = { .socket = NULL };
	const char *opt_s = NULL;
	int ch, rc;

	/* "+": stop at the command, whose options are its own. */
	while ((ch = getopt_long(argc, argv, "+s:c:F:hV", longopts, NULL)) != -1) {
		switch (ch) {
		case 's':
			opt_s = optarg;
			break;
		case 'c':
			o.config = optarg;
			break;
		case 'F':
			o.fleet = optarg;
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
	if ((rc = ctl_socket_find(&o, opt_s)) >= 0)
		return rc;
	for (const struct ctl_cmd *c = ctl_cmds; c->name != NULL; c++)
		if (strcmp(c->name, argv[optind]) == 0)
			return c->fn(&o, argc - optind, argv + optind);
	fprintf(stderr, "namegatectl: unknown command '%s'\n", argv[optind]);
	ctl_usage(stderr);
	return CTL_EXIT_ERROR;
}

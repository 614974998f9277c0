/*
 * namegatectl commands. Each takes the global options and its own argv (argv[0] is the
 * command name) and returns the process exit status.
 */
#ifndef CTL_CLI_H
#define CTL_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define CTL_EXIT_OK		0
#define CTL_EXIT_BLOCK		1	/* check: the host is blocked */
#define CTL_EXIT_REJECTED	1	/* reload: the daemon kept the running policy */
#define CTL_EXIT_ERROR		2	/* usage, unknown VM, bad host, no daemon */

struct ctl_opts {
	const char *socket;	/* -s, NAMEGATE_SOCKET, -c FILE's control_socket, or the default */
	const char *config;	/* -c FILE, or NULL */
	const char *fleet;	/* --fleet FILE: the store of its fleet: section, or NULL */
};

#define CTL_OPT_JSON	0x1	/* --json */
#define CTL_OPT_EVENTS	0x2	/* -f/--follow, -e PATH */
#define CTL_OPT_GRANT	0x4	/* --for D (required), --reason T */
#define CTL_OPT_FOLLOW	0x8	/* -f/--follow alone */
#define CTL_OPT_FOR	0x10	/* --for D, optional */
#define CTL_OPT_FILTER	0x20	/* --vm, --reason, --name, --since, --last (ctl_filter.h) */
#define CTL_OPT_FLOWLOG	0x40	/* --flow-log PATH */

/* A command's own arguments, as ctl_args_parse() found them. */
struct ctl_args {
	bool json;
	bool follow;
	const char *events;
	const char *dur, *reason;	/* grant --for, --reason; a filter's --reason */
	const char *vm, *name, *since, *last;	/* a filter's --vm, --name, --since, --last */
	const char *flow_log;		/* --flow-log */
	const char *pos[2];
	int npos;
};

/*
 * Parses a command's own argv (the options flags allows, minpos..maxpos positional
 * arguments). Returns -1 to go on, or the exit status (usage printed): 0 for -h,
 * CTL_EXIT_ERROR for bad arguments.
 */
int ctl_args_parse(int argc, char **argv, unsigned int flags, int minpos, int maxpos,
    const char *usage, struct ctl_args *a);

struct ctl_reply;

/*
 * Sends {kv...} (ctl_client_request()) to the daemon. Returns -1 with a successful reply
 * in *r (free it with ctl_reply_free()), or the exit status after saying why on stderr.
 */
int ctl_ask_kv(const struct ctl_opts *o, const char *const *kv, struct ctl_reply *r);

typedef int ctl_cmd_fn(const struct ctl_opts *o, int argc, char **argv);

/* Served by the daemon's control socket (ctl_show.c). */
ctl_cmd_fn ctl_cmd_status;	/* status [--json] */
ctl_cmd_fn ctl_cmd_stats;	/* stats [VM] [--json] */
/* flows VM [--json]: the VM's open flows, as the daemon has them */
int ctl_flows_live(const struct ctl_opts *o, const struct ctl_args *a);
ctl_cmd_fn ctl_cmd_reload;	/* reload [--json] */
ctl_cmd_fn ctl_cmd_reopen;	/* reopen */
ctl_cmd_fn ctl_cmd_suggest;	/* suggest VM [--json] */
/* History from the logs, live state from the daemon (ctl_query_cli.c). */
ctl_cmd_fn ctl_cmd_events;	/* events [FILTERS] [-f|--follow] [-e PATH] */
ctl_cmd_fn ctl_cmd_flows;	/* flows [VM] | [FILTERS] [-f] [--flow-log PATH] [--json] */
ctl_cmd_fn ctl_cmd_bindings;	/* bindings [VM] [--name P] [--json] */
ctl_cmd_fn ctl_cmd_vms;		/* vms: -c FILE's VMs, else the daemon's */
/* Grants, served by the daemon too (ctl_grant_cli.c). */
ctl_cmd_fn ctl_cmd_grant;	/* grant VM HOST[:PORT] --for D [--reason T] [--json] */
ctl_cmd_fn ctl_cmd_grants;	/* grants [VM] [--json] */
ctl_cmd_fn ctl_cmd_revoke;	/* revoke ID [--json] */
/* The fleet's store (ctl_fleet_cli.c). */
ctl_cmd_fn ctl_cmd_publish;	/* publish FILE: a signed bundle into the store */
ctl_cmd_fn ctl_cmd_fleet;	/* fleet [--json]: every gateway's status */
/* Where the fleet's store is; strings owned. */
struct ctl_fleet_where {
	char *name, *prefix;
	char **ep;
	size_t nep;
};
/*
 * The store of --fleet FILE, else of the daemon's fleet: -1 with *w filled (free it with
 * ctl_fleet_where_free()), 0 when there is none, or the exit status after saying why.
 */
int ctl_fleet_where_find(const struct ctl_opts *o, struct ctl_fleet_where *w);
int ctl_fleet_grant(const struct ctl_fleet_where *w, const struct ctl_args *a);
int ctl_fleet_revoke(const struct ctl_fleet_where *w, const char *id);
void ctl_fleet_where_free(struct ctl_fleet_where *w);
struct ctl_etcd;
/* A client of w's store with the operator's credentials; NULL after saying why. */
struct ctl_etcd *ctl_fleet_client(const struct ctl_fleet_where *w);
/* approve or deny (cmd) GATEWAY/ID: a grant of the name, or a decision, in the store. */
int ctl_fleet_decide(const struct ctl_opts *o, const struct ctl_args *a, const char *cmd);
/* pending with --fleet: every gateway's requests, from the store (json: a line each). */
int ctl_fleet_pending_store(const struct ctl_opts *o, const char *vm, bool json);
/* pending: the requests waiting on the fleet's other gateways (vm: only its), if any. */
void ctl_fleet_pending_print(const struct ctl_opts *o, const char *vm);

struct json_object;

/* A reply member: its string ("?" when absent or not one), its integer (0). */
const char *ctl_json_str(struct json_object *o, const char *key);
int64_t ctl_json_int(struct json_object *o, const char *key);

/* Approval, served by the daemon too (ctl_approval_cli.c). */
ctl_cmd_fn ctl_cmd_pending;	/* pending [VM] [-f|--follow] [--json] */
ctl_cmd_fn ctl_cmd_approve;	/* approve ID [--for D] [--json] */
ctl_cmd_fn ctl_cmd_deny;	/* deny ID [--json] */
/* ha [--json] | ha --check [--timeout MS]: the HA pair's role, keepalived's check (ctl_ha_cli.c) */
ctl_cmd_fn ctl_cmd_ha;
/* check [-c FILE] [--json] VM HOST[:PORT]: offline with -c (ctl_check.c), else online. */
ctl_cmd_fn ctl_cmd_check;

struct pol_config;
/* The configuration at file (free it with pol_config_free()), or NULL, its errors printed. */
struct pol_config *ctl_config_load(const char *file);

/*
 * The socket namegatectl talks to: -s, else NAMEGATE_SOCKET, else -c FILE's control_socket,
 * else CTL_SOCKET_DEFAULT. Sets o->socket; returns -1, or the exit status after saying why
 * FILE does not load.
 */
#define CTL_SOCKET_DEFAULT	"/run/namegate/namegate.sock"
int ctl_socket_find(struct ctl_opts *o, const char *opt_s);

#endif /* CTL_CLI_H */

/*
 * namegatectl commands. Each takes the global options and its own argv (argv[0] is the
 * command name) and returns the process exit status.
 */
#ifndef CTL_CLI_H
#define CTL_CLI_H

#include <stdio.h>

#define CTL_EXIT_OK	0
#define CTL_EXIT_BLOCK	1	/* check: the host is blocked */
#define CTL_EXIT_ERROR	2	/* usage, unknown VM, bad host, no daemon */

struct ctl_opts {
	const char *socket;	/* -s SOCKET, or the default path */
};

typedef int ctl_cmd_fn(const struct ctl_opts *o, int argc, char **argv);

/* Commands served by the daemon's control socket (not in this version). */
ctl_cmd_fn ctl_cmd_socket;
/* check [-c FILE] VM HOST[:PORT] */
ctl_cmd_fn ctl_cmd_check;

#endif /* CTL_CLI_H */

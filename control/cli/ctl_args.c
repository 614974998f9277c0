/*
 * namegatectl commands' own options: one parser for all of them, each command saying
 * which options it takes.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ctl_cli.h"

/*
 * Parses a command's own argv. Returns -1 to go on, or the exit status (usage printed):
 * 0 for -h, CTL_EXIT_ERROR for bad arguments.
 */
int
ctl_args_parse(int argc, char **argv, unsigned int flags, int minpos, int maxpos,
    const char *usage, struct ctl_args *a)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "follow", no_argument, NULL, 'f' },
		{ "events", required_argument, NULL, 'e' },
		{ "for", required_argument, NULL, 'F' },	/* long only: -f is --follow */
		{ "reason", required_argument, NULL, 'R' },
		{ "vm", required_argument, NULL, 'v' },		/* long only, as those below */
		{ "name", required_argument, NULL, 'n' },
		{ "since", required_argument, NULL, 'S' },
		{ "last", required_argument, NULL, 'L' },
		{ "flow-log", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	memset(a, 0, sizeof(*a));
	/* 0, not 1: reinitialise getopt, whose "+" mode main() left set. */
	optind = 0;
	while ((ch = getopt_long(argc, argv, "jfe:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'j':
			if (!(flags & CTL_OPT_JSON))
				goto bad;
			a->json = true;
			break;
		case 'f':
			if (!(flags & (CTL_OPT_EVENTS | CTL_OPT_FOLLOW)))
				goto bad;
			a->follow = true;
			break;
		case 'e':
			if (!(flags & CTL_OPT_EVENTS))
				goto bad;
			a->events = optarg;
			break;
		case 'F':
			if (!(flags & (CTL_OPT_GRANT | CTL_OPT_FOR)))
				goto bad;
			a->dur = optarg;
			break;
		case 'R':
			if (!(flags & (CTL_OPT_GRANT | CTL_OPT_FILTER)))
				goto bad;
			a->reason = optarg;
			break;
		case 'v':
		case 'n':
		case 'S':
		case 'L':
			if (!(flags & CTL_OPT_FILTER))
				goto bad;
			*(ch == 'v' ? &a->vm : ch == 'n' ? &a->name : ch == 'S' ? &a->since :
			    &a->last) = optarg;
			break;
		case 'l':
			if (!(flags & CTL_OPT_FLOWLOG))
				goto bad;
			a->flow_log = optarg;
			break;
		case 'h':
			printf("usage: namegatectl %s\n", usage);
			return CTL_EXIT_OK;
		default:
			goto bad;
		}
	}
	if (argc - optind < minpos || argc - optind > maxpos ||
	    ((flags & CTL_OPT_GRANT) && a->dur == NULL))
		goto bad;
	while (optind < argc)
		a->pos[a->npos++] = argv[optind++];
	return -1;
bad:
	fprintf(stderr, "usage: namegatectl %s\n", usage);
	return CTL_EXIT_ERROR;
}


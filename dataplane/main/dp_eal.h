/*
 * EAL's arguments and memory. Without dataplane.eal (and none on the command line)
 * namegate derives them: hugepages when EAL can have all the memory it sizes of them (a
 * hugetlbfs mount, enough free: dp_eal_host.h), else --no-huge, and why;
 * --no-pci unless a port is a PCI address; a file prefix from the nft table. Whenever the
 * arguments name no memory size, it adds -m sized from its tables (dp_eal_need()), so a
 * configuration that sizes nothing starts. The same plan is what --check prints and
 * judges, so a file whose tables cannot fit is refused before anything runs.
 */
#ifndef DP_EAL_H
#define DP_EAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct pol_config;
struct pol_errs;

#define DP_EAL_ARGS_MAX		64
#define DP_EAL_NOHUGE_DEFAULT	64	/* MiB: what EAL takes with --no-huge and no -m */

enum dp_eal_source { DP_EAL_DERIVED, DP_EAL_FILE, DP_EAL_COMMAND_LINE };

struct dp_eal {
	char *argv[DP_EAL_ARGS_MAX + 1];
	int argc;
	enum dp_eal_source source;
	bool sized;		/* namegate added -m: nothing named a memory size */
	int size_at;		/* the argv index of the size EAL gets; 0: namegate's own -m */
	bool hugepages;		/* EAL will use hugepages (no --no-huge) */
	uint64_t need;		/* bytes the tables and EAL's own need */
	uint64_t have;		/* bytes EAL will have: the size named, or namegate's -m */
	char mem[24];		/* the -m value namegate added */
	char prefix[64];	/* the --file-prefix value namegate added */
	char plain_why[160];	/* derived --no-huge: why not hugepages (dp_eal_host_short()) */
	bool passed_over;	/* derived --no-huge though the host has hugepages reserved */
};

/* The EAL memory cfg's tables take at most (a reload's two generations included): bytes. */
uint64_t dp_eal_tables(const struct pol_config *cfg);

/* That, with EAL's own share and a margin for the heap's fragments: what -m must give. */
uint64_t dp_eal_need(const struct pol_config *cfg);

/* Packet buffers for cfg's ports, workers and exception path. */
unsigned int dp_eal_mbufs(const struct pol_config *cfg);

/*
 * The arguments and memory for cfg, with cli (ncli strings, from the command line) taking
 * the place of dataplane.eal when given. -1 with a message on err when they are too many.
 */
int dp_eal_plan(const struct pol_config *cfg, char **cli, int ncli, struct dp_eal *e,
    FILE *err);

/* What the tables need against what EAL will have, one line, for --check and the log. */
void dp_eal_print(const struct dp_eal *e, FILE *out);

/*
 * Whether the tables fit: 0, or -1 with a FILE:LINE:COL error on errs at the size (or the
 * eal list) that is too small.
 */
int dp_eal_check(const struct pol_config *cfg, const struct dp_eal *e, struct pol_errs *errs);

/* "needs N MiB, EAL has M MiB: raise -m or lower max_flows", for a start that failed. */
void dp_eal_explain(const struct dp_eal *e, FILE *out);

#endif

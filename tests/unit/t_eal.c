/*
 * EAL for a unit test: see t_eal.h.
 */
#include <stdio.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>

#include "t_eal.h"

int
t_eal_init(const char *name, const char *mem_mb)
{
	char prefix[64];
	char *argv[] = {
		(char *)name, (char *)"--no-huge", (char *)"-m", (char *)mem_mb,
		(char *)"--no-pci", (char *)"--no-shconf", (char *)"--no-telemetry",	/* no files */
		(char *)"--file-prefix", prefix, (char *)"-l", (char *)"0",
		(char *)"--log-level", (char *)"*:error", NULL,
	};

	snprintf(prefix, sizeof(prefix), "%.40s_%d", name, (int)getpid());
	if (rte_eal_init((int)(sizeof(argv) / sizeof(argv[0])) - 1, argv) < 0) {
		fprintf(stderr, "%s: EAL: %s\n", name, rte_strerror(rte_errno));
		return -1;
	}
	return 0;
}

int
t_eal_done(int rc)
{
	rte_eal_cleanup();
	rmdir(rte_eal_get_runtime_dir());	/* left empty: no shconf, no telemetry */
	return rc;
}

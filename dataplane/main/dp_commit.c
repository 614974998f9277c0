/*
 * EAL's memory committed at start: see dp_commit.h.
 */
#include <errno.h>
#include <sys/mman.h>

#include <rte_memory.h>

#include "dp_commit.h"

#define DP_COMMIT_BACKED_PAGE	(2u << 20)	/* hugepages: backed when EAL mapped them */

static int
dp_commit_chunk(const struct rte_memseg_list *msl, const struct rte_memseg *ms, size_t len,
    void *arg)
{
	int *err = arg;

	if (msl->external || msl->page_sz >= DP_COMMIT_BACKED_PAGE)
		return 0;
	/* a chunk is whole pages of msl->page_sz, so page-aligned, as madvise() asks */
	if (madvise(ms->addr, len, MADV_POPULATE_WRITE) != 0) {
		*err = -errno;
		return 1;	/* stop the walk */
	}
	return 0;
}

int
dp_commit_eal_memory(void)
{
	int err = 0;

	if (rte_memseg_contig_walk(dp_commit_chunk, &err) < 0)
		return -EINVAL;
	return err;
}

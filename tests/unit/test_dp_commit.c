/*
 * dataplane/main/dp_commit.c: without hugepages, every page of EAL's memory is backed
 * once namegate has committed it (mincore() says so), where before most were not, so no
 * table takes a page fault when traffic first reaches it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rte_memory.h>

#include "dp_commit.h"
#include "t_eal.h"

struct t_pages {
	size_t pages, resident;
};

static int
t_count_chunk(const struct rte_memseg_list *msl, const struct rte_memseg *ms, size_t len,
    void *arg)
{
	struct t_pages *c = arg;
	size_t page = (size_t)sysconf(_SC_PAGESIZE), n = len / page;
	unsigned char *vec = malloc(n);

	(void)msl;
	assert_non_null(vec);
	assert_int_equal(mincore(ms->addr, len, vec), 0);
	for (size_t i = 0; i < n; i++)
		c->resident += vec[i] & 1;
	c->pages += n;
	free(vec);
	return 0;
}

static struct t_pages
t_count(void)
{
	struct t_pages c = { 0 };

	assert_int_equal(rte_memseg_contig_walk(t_count_chunk, &c), 0);
	return c;
}

static void
test_every_page_backed(void **state)
{
	struct t_pages before, after;

	(void)state;
	before = t_count();
	/* EAL itself touches a few hundred KiB of the 64 MiB: the test means something */
	assert_true(before.pages >= 64u * 1024 * 1024 / (size_t)sysconf(_SC_PAGESIZE));
	assert_true(before.resident < before.pages / 2);
	assert_int_equal(dp_commit_eal_memory(), 0);
	after = t_count();
	print_message("pages %zu: resident %zu before, %zu after\n", after.pages,
	    before.resident, after.resident);
	assert_int_equal(after.pages, before.pages);
	assert_int_equal(after.resident, after.pages);
	/* a second commit (a restart of the set-up) changes nothing and does not fail */
	assert_int_equal(dp_commit_eal_memory(), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_page_backed),
	};

	return T_EAL_RUN("test_dp_commit", "64", tests);
}

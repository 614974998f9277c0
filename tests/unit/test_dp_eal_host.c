/*
 * dataplane/main/dp_eal_host.c: the host's hugepages as EAL will find them, read from a
 * tree of its own per test (proc/meminfo, proc/mounts, sys/kernel/mm/hugepages), and
 * whether EAL can have a size of them (dp_eal_host_short()).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dp_eal_host.h"

#define MIB	(UINT64_C(1024) * 1024)

struct tree {
	char root[64];
};

static void
put(const struct tree *t, const char *rel, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", t->root, rel);
	for (char *p = path + strlen(t->root) + 1; (p = strchr(p, '/')) != NULL; p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	assert_non_null(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
}

/* A size's directory: nr, free and resv pages. */
static void
put_size(const struct tree *t, const char *dir, const char *nr, const char *free_pages,
    const char *resv)
{
	char rel[128];

	snprintf(rel, sizeof(rel), "sys/kernel/mm/hugepages/%s/nr_hugepages", dir);
	put(t, rel, nr);
	snprintf(rel, sizeof(rel), "sys/kernel/mm/hugepages/%s/free_hugepages", dir);
	put(t, rel, free_pages);
	snprintf(rel, sizeof(rel), "sys/kernel/mm/hugepages/%s/resv_hugepages", dir);
	put(t, rel, resv);
}

static int
tree_setup(void **state)
{
	struct tree *t = calloc(1, sizeof(*t));

	if (t == NULL)
		return -1;
	snprintf(t->root, sizeof(t->root), "/tmp/ng_eal_host.XXXXXX");
	if (mkdtemp(t->root) == NULL)
		return -1;
	put(t, "proc/meminfo", "MemTotal:       24683772 kB\nHugepagesize:       2048 kB\n");
	put(t, "proc/mounts", "proc /proc proc rw 0 0\ntmpfs /run tmpfs rw,size=10% 0 0\n");
	*state = t;
	return 0;
}

static int
tree_teardown(void **state)
{
	struct tree *t = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", t->root);
	free(t);
	return system(cmd) == 0 ? 0 : -1;
}

static const char *
short_of(const struct tree *t, uint64_t need, char *why, size_t cap)
{
	struct dp_eal_host h;

	dp_eal_host_read(&h, t->root);
	return dp_eal_host_short(&h, need, why, cap);
}

/* No hugepages directory at all, and one with no size reserved: none reserved. */
static void
test_none_reserved(void **state)
{
	struct tree *t = *state;
	struct dp_eal_host h;
	char why[160];

	dp_eal_host_read(&h, t->root);
	assert_int_equal(h.nsizes, 0);
	assert_string_equal(short_of(t, MIB, why, sizeof(why)),
	    "this host has no hugepages reserved");
	put_size(t, "hugepages-2048kB", "0\n", "0\n", "0\n");
	put(t, "proc/mounts", "hugetlbfs /dev/hugepages hugetlbfs rw,pagesize=2M 0 0\n");
	assert_string_equal(short_of(t, MIB, why, sizeof(why)),
	    "this host has no hugepages reserved");
}

/*
 * Pages reserved with no mount of their size are none to EAL (it fails to start on
 * them); a mount of another size does not serve them either.
 */
static void
test_reserved_without_a_mount(void **state)
{
	struct tree *t = *state;
	struct dp_eal_host h;
	char why[160];

	put_size(t, "hugepages-2048kB", "64\n", "64\n", "0\n");
	assert_string_equal(short_of(t, MIB, why, sizeof(why)),
	    "this host has 128 MiB of hugepages reserved and no hugetlbfs mount for them");
	put(t, "proc/mounts", "nodev /mnt/huge1g hugetlbfs rw,relatime,pagesize=1024M 0 0\n");
	dp_eal_host_read(&h, t->root);
	assert_int_equal(dp_eal_host_usable(&h), 0);
	assert_int_equal(dp_eal_host_reserved(&h), 128 * MIB);
	assert_non_null(short_of(t, MIB, why, sizeof(why)));
}

/*
 * A mount serves its pagesize=, or without one the default size (meminfo's): then EAL has
 * the free pages, and a need beyond them is short by what the message says.
 */
static void
test_mounted_free_against_need(void **state)
{
	struct tree *t = *state;
	char why[160];

	put_size(t, "hugepages-2048kB", "64\n", "64\n", "0\n");
	put(t, "proc/mounts", "proc /proc proc rw 0 0\n"
	    "nodev /dev/hugepages hugetlbfs rw,relatime,pagesize=2M 0 0\n");
	assert_null(short_of(t, 128 * MIB, why, sizeof(why)));
	assert_string_equal(short_of(t, 976 * MIB, why, sizeof(why)),
	    "this host has 128 MiB of hugepages free in hugetlbfs mounts and EAL needs 976 MiB");
	put(t, "proc/mounts", "hugetlbfs /dev/hugepages hugetlbfs rw,relatime 0 0\n");
	assert_null(short_of(t, 128 * MIB, why, sizeof(why)));
	/* the default size another: the same mount serves 1 GiB pages, not these */
	put(t, "proc/meminfo", "Hugepagesize:    1048576 kB\n");
	assert_non_null(short_of(t, MIB, why, sizeof(why)));
}

/* Pages promised to another program's mapping (resv) are not free to EAL. */
static void
test_promised_pages_are_not_free(void **state)
{
	struct tree *t = *state;
	struct dp_eal_host h;
	char why[160];

	put_size(t, "hugepages-2048kB", "64\n", "40\n", "30\n");
	put(t, "proc/mounts", "nodev /dev/hugepages hugetlbfs rw,pagesize=2M 0 0\n");
	dp_eal_host_read(&h, t->root);
	assert_int_equal(dp_eal_host_usable(&h), 20 * MIB);
	assert_null(short_of(t, 20 * MIB, why, sizeof(why)));
	assert_non_null(short_of(t, 21 * MIB, why, sizeof(why)));
}

/*
 * Sizes add up, each only where mounted; names that are not a size are passed over, and
 * sizes read as EAL reads them (pagesize=1G the 1048576kB directory's).
 */
static void
test_sizes_and_strange_names(void **state)
{
	struct tree *t = *state;
	struct dp_eal_host h;
	char why[160];

	put_size(t, "hugepages-2048kB", "16\n", "16\n", "0\n");
	put_size(t, "hugepages-1048576kB", "2\n", "2\n", "0\n");
	put_size(t, "hugepages-", "99\n", "99\n", "0\n");
	put_size(t, "hugepages-x", "99\n", "99\n", "0\n");
	put_size(t, "other-2048kB", "99\n", "99\n", "0\n");
	put(t, "proc/mounts", "nodev /mnt/g hugetlbfs rw,pagesize=1G 0 0\n"
	    "nodev /mnt/bad hugetlbfs rw,pagesize=lots 0 0\n");
	dp_eal_host_read(&h, t->root);
	assert_int_equal(h.nsizes, 2);
	assert_int_equal(dp_eal_host_reserved(&h), 32 * MIB + 2048 * MIB);
	assert_int_equal(dp_eal_host_usable(&h), 2048 * MIB);
	assert_null(short_of(t, 976 * MIB, why, sizeof(why)));
	assert_non_null(short_of(t, 2049 * MIB, why, sizeof(why)));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_none_reserved, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_reserved_without_a_mount, tree_setup,
		    tree_teardown),
		cmocka_unit_test_setup_teardown(test_mounted_free_against_need, tree_setup,
		    tree_teardown),
		cmocka_unit_test_setup_teardown(test_promised_pages_are_not_free, tree_setup,
		    tree_teardown),
		cmocka_unit_test_setup_teardown(test_sizes_and_strange_names, tree_setup,
		    tree_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

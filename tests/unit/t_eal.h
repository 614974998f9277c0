/*
 * EAL for a unit test that needs DPDK's memory and nothing else: --no-huge with the given
 * MiB, lcore 0, no PCI, DPDK's log quiet but for errors, and a file prefix of the test's
 * name and pid, so that two runs (or two tests) never share one.
 */
#ifndef T_EAL_H
#define T_EAL_H

/* 0, or -1 with a message on stderr. */
int t_eal_init(const char *name, const char *mem_mb);

/* EAL cleaned up after the tests that returned rc: rc. */
int t_eal_done(int rc);

/* main()'s whole body for tests that need EAL and no more: its exit status. */
#define T_EAL_RUN(name, mem_mb, tests) T_EAL_RUN_AFTER(name, mem_mb, tests, 0)

/* The same with set-up once EAL runs (an expression, 0 when done, as dp_hash_init()). */
#define T_EAL_RUN_AFTER(name, mem_mb, tests, setup) \
	(t_eal_init((name), (mem_mb)) != 0 || (setup) != 0 ? 1 : \
	    t_eal_done(cmocka_run_group_tests((tests), NULL, NULL)))

#endif

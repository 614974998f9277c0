/*
 * dataplane/worker/dp_evt.c: the bind ring's back-pressure (room is asked for before a
 * binding exists, each VM's share, what the main lcore takes frees), and the wakeup of a
 * sleeping main lcore (one eventfd write per sleep, none while it is awake), and records
 * written whole into their slots, nothing of a slot's earlier record left.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_malloc.h>
#include <rte_ring.h>

#include "dp_evt.h"
#include "t_eal.h"

#define T_VMS	4

static struct dp_ctx ctx;
static struct dp_worker w;
static struct dp_gen gen = { .id = 1 };
static const struct pol_ports every_port = { .any = true };

static void
bind_one(uint16_t vm, uint32_t n)
{
	struct pol_addr a = { .family = 4 };

	memcpy(a.a, &n, 4);
	dp_evt_bind(&w, vm, &a, "example.com", 11, 300, 300, &every_port);
}

/* Binds for vm while there is room; how many went. */
static unsigned int
fill(uint16_t vm)
{
	unsigned int n = 0;

	while (dp_evt_bind_room(&w, vm, 1) == DP_EVT_ROOM_OK)
		bind_one(vm, n++);
	return n;
}

static unsigned int
drain_all(unsigned int *per_vm)
{
	static struct dp_evt out[256];
	unsigned int got, total = 0;

	while ((got = dp_evt_drain(&w, out, 256)) > 0) {
		for (unsigned int k = 0; k < got; k++) {
			if (out[k].type != DP_EVT_BIND)
				continue;
			per_vm[out[k].vm]++;
			total++;
		}
	}
	return total;
}

static int
setup(void **state)
{
	(void)state;
	memset(&w, 0, sizeof(w));
	memset(&ctx, 0, sizeof(ctx));
	ctx.wake_fd = -1;
	ctx.max_vms = T_VMS;
	w.ctx = &ctx;
	w.gen = &gen;
	w.bind_evts = dp_evt_ring_create("bind", 0, SOCKET_ID_ANY);
	w.evts = dp_evt_ring_create("evt", 0, SOCKET_ID_ANY);
	w.vm_stats = rte_zmalloc(NULL, (T_VMS + 1) * sizeof(w.vm_stats[0]), 0);
	w.bind_taken = rte_zmalloc(NULL, (T_VMS + 1) * sizeof(w.bind_taken[0]), 0);
	assert_non_null(w.bind_evts);
	assert_non_null(w.evts);
	assert_non_null(w.vm_stats);
	assert_non_null(w.bind_taken);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	rte_ring_free(w.bind_evts);
	rte_ring_free(w.evts);
	rte_free(w.vm_stats);
	rte_free(w.bind_taken);
	if (ctx.wake_fd >= 0)
		close(ctx.wake_fd);
	return 0;
}

/* One VM binding in a loop takes half the ring; its neighbours still find room. */
static void
test_share(void **state)
{
	unsigned int cap = rte_ring_get_capacity(w.bind_evts), a, b, c, per_vm[T_VMS + 1] = { 0 };

	(void)state;
	a = fill(1);
	assert_true(a >= cap / 2 - 1 && a <= cap / 2 + 1);
	assert_int_equal(dp_evt_bind_room(&w, 1, 1), DP_EVT_ROOM_VM_SHARE);
	b = fill(2);
	assert_true(b > 0 && b <= (cap - a) / 2 + 1);
	assert_int_equal(dp_evt_bind_room(&w, 2, 1), DP_EVT_ROOM_VM_SHARE);
	c = fill(3);
	assert_true(c > 0);
	/* what nobody holds is never charged to the VM that asks: the ring is just full */
	while (rte_ring_free_count(w.bind_evts) > 0)
		bind_one(3, 0), c++;
	assert_int_equal(dp_evt_bind_room(&w, 0, 1), DP_EVT_ROOM_FULL);
	assert_int_equal(dp_evt_bind_room(&w, 1, 1), DP_EVT_ROOM_VM_SHARE);
	/* nothing asked for room in vain was lost: every event put is taken, by VM */
	assert_int_equal(drain_all(per_vm), a + b + c);
	assert_int_equal(per_vm[1], a);
	assert_int_equal(per_vm[2], b);
	assert_int_equal(per_vm[3], c);
	assert_int_equal(w.evt_dropped, 0);
	/* taken: the shares are free again */
	assert_int_equal(dp_evt_bind_room(&w, 1, 1), DP_EVT_ROOM_OK);
	assert_int_equal(dp_evt_bind_room(&w, 1, cap / 2), DP_EVT_ROOM_OK);
	assert_int_equal(dp_evt_bind_room(&w, 1, cap / 2 + 1), DP_EVT_ROOM_VM_SHARE);
}

/* An answer of n addresses asks for all n at once. */
static void
test_room_for_many(void **state)
{
	unsigned int cap = rte_ring_get_capacity(w.bind_evts), per_vm[T_VMS + 1] = { 0 };

	(void)state;
	assert_int_equal(dp_evt_bind_room(&w, 1, cap + 1), DP_EVT_ROOM_FULL);
	assert_int_equal(dp_evt_bind_room(&w, 1, cap), DP_EVT_ROOM_VM_SHARE);
	for (unsigned int i = 0; i < 100; i++)
		bind_one(2, i);
	assert_int_equal(dp_evt_bind_room(&w, 1, cap - 99), DP_EVT_ROOM_FULL);
	/* more than half of what is free would leave the VM holding more than is left */
	assert_int_equal(dp_evt_bind_room(&w, 1, (cap - 100) / 2), DP_EVT_ROOM_OK);
	assert_int_equal(dp_evt_bind_room(&w, 1, (cap - 100) / 2 + 1), DP_EVT_ROOM_VM_SHARE);
	assert_int_equal(drain_all(per_vm), 100);
}

/* A worker wakes a main lcore that announced its sleep, once; an awake one never. */
static void
test_wake_once_per_sleep(void **state)
{
	unsigned int per_vm[T_VMS + 1] = { 0 };
	eventfd_t n = 0;

	(void)state;
	ctx.wake_fd = eventfd(0, EFD_NONBLOCK);
	assert_true(ctx.wake_fd >= 0);
	bind_one(1, 1);
	assert_int_equal(eventfd_read(ctx.wake_fd, &n), -1);	/* awake: no write */
	atomic_store(&ctx.main_asleep, true);
	for (unsigned int i = 0; i < 50; i++)
		bind_one(1, i);
	assert_false(atomic_load(&ctx.main_asleep));
	assert_int_equal(eventfd_read(ctx.wake_fd, &n), 0);
	assert_int_equal(n, 1);				/* 50 events, one write */
	dp_evt_block(&w, 1, NULL, DP_REASON_NO_BINDING, false, NULL, 0);
	assert_int_equal(eventfd_read(ctx.wake_fd, &n), -1);
	atomic_store(&ctx.main_asleep, true);
	dp_evt_block(&w, 2, NULL, DP_REASON_NO_BINDING, false, NULL, 0);	/* blocks wake it too */
	assert_int_equal(eventfd_read(ctx.wake_fd, &n), 0);
	assert_int_equal(drain_all(per_vm), 51);
}

/*
 * Records come out as they were written, field by field, and a slot a longer record used
 * before (the ring wrapped) holds nothing of it past the new name.
 */
static void
test_records_whole(void **state)
{
	static const char long_name[] = "a-rather-long-name-that-fills-the-slot.example.org";
	struct pol_addr a = { .family = 6 };
	struct dp_evt out[2], zero[1], want;
	unsigned int cap = rte_ring_get_capacity(w.bind_evts);

	(void)state;
	memset(zero, 0, sizeof(zero));
	memset(a.a, 0x11, sizeof(a.a));
	for (unsigned int i = 0; i <= cap; i++) {	/* every slot, with the long name */
		dp_evt_bind(&w, 1, &a, long_name, sizeof(long_name) - 1, 60, 70, &every_port);
		assert_int_equal(dp_evt_drain(&w, out, 1), 1);
	}
	/* and whatever a slot held, not just a bind record: the ring's slots follow its head */
	memset(w.bind_evts + 1, 0xa5, (size_t)w.bind_evts->size * sizeof(struct dp_evt));
	gen.id = 7;
	dp_evt_bind(&w, 2, &a, "ex.com", 6, 300, 400, &every_port);
	assert_int_equal(dp_evt_drain(&w, out, 2), 1);
	assert_int_equal(out[0].version, DP_API_VERSION);
	assert_int_equal(out[0].type, DP_EVT_BIND);
	assert_int_equal(out[0].vm, 2);
	assert_int_equal(out[0].family, 6);
	assert_memory_equal(out[0].addr, a.a, 16);
	assert_int_equal(out[0].ttl, 300);
	assert_int_equal(out[0].expires, 400);
	assert_int_equal(out[0].gen, 7);
	assert_int_equal(out[0].ports.all, 1);
	assert_int_equal(out[0].name_len, 6);
	assert_memory_equal(out[0].name, "ex.com", 6);
	assert_memory_equal(out[0].name + 6, zero, sizeof(out[0].name) - 6);
	assert_true(out[0].tsc != 0);
	/* and every byte no field names (padding included) is zero */
	memset(&want, 0, sizeof(want));
	want.version = DP_API_VERSION;
	want.type = DP_EVT_BIND;
	want.vm = 2;
	want.family = 6;
	want.ttl = 300;
	want.tsc = out[0].tsc;
	want.expires = 400;
	want.gen = 7;
	want.ports.all = 1;
	want.name_len = 6;
	memcpy(want.addr, a.a, 16);
	memcpy(want.name, "ex.com", 6);
	assert_memory_equal(&out[0], &want, sizeof(want));

	dp_evt_block(&w, 3, NULL, DP_REASON_NO_BINDING, true, "b.example", 9);
	assert_int_equal(dp_evt_drain(&w, out, 2), 1);
	assert_int_equal(out[0].type, DP_EVT_BLOCK);
	assert_int_equal(out[0].vm, 3);
	assert_int_equal(out[0].reason, DP_REASON_NO_BINDING);
	assert_int_equal(out[0].would_block, 1);
	assert_int_equal(out[0].family, 0);
	assert_memory_equal(out[0].addr, zero, sizeof(out[0].addr));
	assert_int_equal(out[0].name_len, 9);
	assert_memory_equal(out[0].name, "b.example", 9);
	gen.id = 1;
}

/*
 * An answer's events (dp_evt_bind_quiet()) are dp_evt_bind()'s records, and wake no one:
 * the answer's learner wakes the main lcore once, after its last.
 */
static void
test_bind_quiet(void **state)
{
	struct pol_addr a = { .family = 4, .a = { 192, 0, 2, 1 } };
	struct dp_evt_binder b;
	struct dp_evt out[2];

	(void)state;
	atomic_store(&ctx.main_asleep, true);
	dp_evt_binder_init(&b, 2, gen.id, "ex.com", 6, &every_port);
	dp_evt_bind_quiet(&w, &b, &a, 300, 400);
	assert_true(atomic_load(&ctx.main_asleep));
	dp_evt_bind(&w, 2, &a, "ex.com", 6, 300, 400, &every_port);
	assert_false(atomic_load(&ctx.main_asleep));
	assert_int_equal(dp_evt_drain(&w, out, 2), 2);
	assert_true(out[0].tsc != 0 && out[1].tsc != 0);
	out[0].tsc = out[1].tsc = 0;
	assert_memory_equal(&out[0], &out[1], sizeof(out[0]));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_share, setup, teardown),
		cmocka_unit_test_setup_teardown(test_room_for_many, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wake_once_per_sleep, setup, teardown),
		cmocka_unit_test_setup_teardown(test_records_whole, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bind_quiet, setup, teardown),
	};

	return T_EAL_RUN("test_dp_evt", "64", tests);
}

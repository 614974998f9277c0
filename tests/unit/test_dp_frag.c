/*
 * dp_frag: the mbuf glue around sni/ipfrag, under a real EAL (--no-huge, no devices).
 * Whole frames are cut with dp_frag_split and put back with dp_frag_add, in both orders,
 * and must come back byte for byte; every mbuf taken from a pool must be back in it at
 * the end, so a leak on any path fails the test.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_random.h>

#include "dp_frag.h"
#include "frame_check.h"
#include "t_eal.h"

#define NORMAL_MBUFS	512
#define BIG_TEST_MBUFS	4
#define PIECES_MAX	128

static struct rte_mempool *normal, *big_test;
static uint8_t frame[IPFRAG_PRE_MAX + IPFRAG_DATAGRAM_MAX];

/* Ethernet with 0, 1 or 2 VLAN tags (802.1ad outside 802.1Q), then type; its length. */
static size_t
l2(uint8_t *f, unsigned int tags, uint16_t type)
{
	size_t n = 12;

	for (size_t i = 0; i < 12; i++)
		f[i] = (uint8_t)(0x10 + i);
	for (unsigned int t = 0; t < tags; t++, n += 4) {
		fc_w16(f + n, t == 0 && tags == 2 ? 0x88a8 : 0x8100);
		fc_w16(f + n + 2, (uint16_t)(100 + t));
	}
	fc_w16(f + n, type);
	return n + 2;
}

/* A whole IPv4 UDP datagram of len payload bytes after an l2 header; the frame length. */
static size_t
frame4(unsigned int tags, size_t len)
{
	size_t h = l2(frame, tags, 0x0800);
	uint8_t *ip = frame + h;

	memset(ip, 0, 28);
	ip[0] = 0x45;
	fc_w16(ip + 2, (uint16_t)(28 + len));
	fc_w16(ip + 4, 0x1234);
	ip[8] = 64;
	ip[9] = 17;
	ip[12] = 10, ip[15] = 2;
	ip[16] = 192, ip[18] = 2, ip[19] = 1;
	fc_w16(ip + 10, fc_ref_csum(ip, 20, 0));
	fc_w16(ip + 20, 4000);
	fc_w16(ip + 22, 53);
	fc_w16(ip + 24, (uint16_t)(8 + len));
	for (size_t i = 0; i < len; i++)
		ip[28 + i] = (uint8_t)(i * 13 + 1);
	return h + 28 + len;
}

static size_t
frame6(unsigned int tags, size_t len)
{
	size_t h = l2(frame, tags, 0x86dd);
	uint8_t *ip = frame + h;

	memset(ip, 0, 48);
	ip[0] = 0x60;
	fc_w16(ip + 4, (uint16_t)(8 + len));
	ip[6] = 17;
	ip[7] = 64;
	ip[8] = 0xfd, ip[23] = 2;
	ip[24] = 0x20, ip[25] = 0x01, ip[39] = 1;
	fc_w16(ip + 40, 4000);
	fc_w16(ip + 42, 53);
	fc_w16(ip + 44, (uint16_t)(8 + len));
	for (size_t i = 0; i < len; i++)
		ip[48 + i] = (uint8_t)(i * 13 + 1);
	return h + 48 + len;
}

static struct rte_mbuf *
mbuf_of(struct rte_mempool *pool, const uint8_t *bytes, size_t n)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);

	assert_non_null(m);
	if (n > rte_pktmbuf_tailroom(m)) {	/* into the headroom, as dp_frag_add does */
		assert_true(n <= m->buf_len);
		m->data_off = (uint16_t)(m->buf_len - n);
	}
	memcpy(rte_pktmbuf_append(m, (uint16_t)n), bytes, n);
	m->port = 3;
	return m;
}

static void
pools_full(void)
{
	assert_int_equal(rte_mempool_avail_count(normal), NORMAL_MBUFS);
	assert_int_equal(rte_mempool_avail_count(big_test), BIG_TEST_MBUFS);
}

/* Cut frame[0 .. n) for mtu, put it back in order or reversed: the same frame again. */
static void
round_trip(struct dp_frags *t, size_t n, uint16_t l3_off, uint16_t mtu, bool reverse,
    int expect_nb, bool expect_big)
{
	struct rte_mbuf *m = mbuf_of(big_test, frame, n), *pieces[PIECES_MAX], *r = NULL;
	enum ipfrag_status st;
	int nb;

	nb = dp_frag_split(t, m, l3_off, mtu, normal, pieces, PIECES_MAX);
	assert_int_equal(nb, expect_nb);
	assert_int_equal(rte_pktmbuf_pkt_len(m), n);	/* untouched */
	for (int i = 0; i < nb; i++) {
		assert_true(rte_pktmbuf_pkt_len(pieces[i]) <= (uint32_t)l3_off + mtu);
		assert_memory_equal(rte_pktmbuf_mtod(pieces[i], uint8_t *), frame, l3_off);
		assert_int_equal(pieces[i]->port, 3);
	}
	for (int j = 0; j < nb; j++) {
		struct rte_mbuf *f = pieces[reverse ? nb - 1 - j : j];

		r = dp_frag_add(t, f, l3_off, 7, 100, &st);
		assert_int_equal(st, j + 1 < nb ? IPFRAG_NEED_MORE : IPFRAG_COMPLETE);
		assert_true((r != NULL) == (j + 1 == nb));
		rte_pktmbuf_free(f);	/* the caller's, always */
	}
	assert_non_null(r);
	assert_int_equal(r->nb_segs, 1);
	assert_int_equal(rte_pktmbuf_pkt_len(r), n);
	assert_int_equal(r->port, 3);
	assert_int_equal(r->ol_flags & (RTE_MBUF_F_RX_IP_CKSUM_MASK | RTE_MBUF_F_RX_L4_CKSUM_MASK),
	    0);
	assert_true((r->pool != normal) == expect_big);
	assert_memory_equal(rte_pktmbuf_mtod(r, uint8_t *), frame, n);
	rte_pktmbuf_free(r);
	rte_pktmbuf_free(m);
	assert_int_equal(dp_frag_vm_count(t, 7), 0);
}

static void
test_round_trips(void **state)
{
	struct dp_frags *t = dp_frags_create(0, 4, 2, 5, normal, SOCKET_ID_ANY);
	size_t n;

	(void)state;
	assert_non_null(t);
	n = frame4(0, 5000);
	round_trip(t, n, 14, 1500, false, 4, true);
	round_trip(t, n, 14, 1500, true, 4, true);
	n = frame4(1, 1000);
	round_trip(t, n, 18, 576, true, 2, false);	/* fits a normal mbuf */
	n = frame6(2, 3000);
	round_trip(t, n, 22, 1280, false, 3, true);
	/* the largest datagram, behind two tags: the link header goes into the headroom */
	n = frame6(2, IPFRAG_DATAGRAM_MAX - 48);
	round_trip(t, n, 22, 1280, true, 54, true);
	dp_frags_free(t);
	pools_full();
}

static void
test_split_refused(void **state)
{
	struct dp_frags *t = dp_frags_create(1, 4, 2, 5, normal, SOCKET_ID_ANY);
	struct rte_mbuf *m, *pieces[PIECES_MAX];

	(void)state;
	assert_non_null(t);
	m = mbuf_of(big_test, frame, frame4(0, 5000));
	assert_int_equal(dp_frag_split(t, m, 14, 1500, normal, pieces, 3), -ENOSPC);
	assert_int_equal(dp_frag_split(t, m, 14, 9000, normal, pieces, PIECES_MAX), -EINVAL);
	assert_int_equal(dp_frag_split(t, m, 14, 20, normal, pieces, PIECES_MAX), -EMSGSIZE);
	assert_int_equal(dp_frag_split(t, m, 60000, 1500, normal, pieces, PIECES_MAX), -EINVAL);
	/* pieces bigger than the pool's mbufs: made ones are freed */
	assert_int_equal(dp_frag_split(t, m, 14, 4000, normal, pieces, PIECES_MAX), -EMSGSIZE);
	rte_pktmbuf_free(m);
	dp_frags_free(t);
	pools_full();
}

/* A fragment in two segments is gathered; the table ages; limits come from create. */
static void
test_segments_age_limits(void **state)
{
	struct dp_frags *t = dp_frags_create(2, 4, 1, 5, normal, SOCKET_ID_ANY);
	struct rte_mbuf *m, *pieces[PIECES_MAX], *tail, *r;
	enum ipfrag_status st;
	int nb;

	(void)state;
	assert_non_null(t);
	m = mbuf_of(big_test, frame, frame4(0, 3000));
	nb = dp_frag_split(t, m, 14, 1500, normal, pieces, PIECES_MAX);
	assert_int_equal(nb, 3);
	/* piece 0 split over two segments */
	tail = rte_pktmbuf_alloc(normal);
	assert_non_null(tail);
	memcpy(rte_pktmbuf_append(tail, 500), rte_pktmbuf_mtod_offset(pieces[0], uint8_t *,
	    rte_pktmbuf_data_len(pieces[0]) - 500), 500);
	rte_pktmbuf_trim(pieces[0], 500);
	assert_int_equal(rte_pktmbuf_chain(pieces[0], tail), 0);
	assert_null(dp_frag_add(t, pieces[0], 14, 9, 100, &st));
	assert_int_equal(st, IPFRAG_NEED_MORE);
	assert_int_equal(dp_frag_vm_count(t, 9), 1);
	/* VM 9's quota is 1: another datagram of its is refused, another VM's is not */
	frame[14 + 5] ^= 1;	/* another ID */
	fc_w16(frame + 14 + 10, 0);
	fc_w16(frame + 14 + 10, fc_ref_csum(frame + 14, 20, 0));
	rte_pktmbuf_free(m);
	m = mbuf_of(big_test, frame, 14 + 3028);
	assert_int_equal(dp_frag_split(t, m, 14, 1500, normal, pieces + 3, 3), 3);
	assert_null(dp_frag_add(t, pieces[3], 14, 9, 100, &st));
	assert_int_equal(st, IPFRAG_OWNER_LIMIT);
	assert_null(dp_frag_add(t, pieces[3], 14, 10, 100, &st));
	assert_int_equal(st, IPFRAG_NEED_MORE);
	/* not aged before its time, then both are */
	assert_int_equal(dp_frag_age(t, 104, 4, NULL, NULL), 0);
	assert_int_equal(dp_frag_age(t, 105, 4, NULL, NULL), 2);
	assert_int_equal(dp_frag_vm_count(t, 9), 0);
	/* an l3_off past the frame */
	assert_null(dp_frag_add(t, pieces[1], 5000, 9, 100, &st));
	assert_int_equal(st, IPFRAG_MALFORMED);
	/* the rest of the first datagram alone never completes it now */
	r = dp_frag_add(t, pieces[1], 14, 9, 106, &st);
	assert_null(r);
	r = dp_frag_add(t, pieces[2], 14, 9, 106, &st);
	assert_null(r);
	assert_int_equal(st, IPFRAG_NEED_MORE);
	for (int i = 0; i < 6; i++)
		rte_pktmbuf_free(pieces[i]);
	rte_pktmbuf_free(m);
	dp_frags_free(t);
	pools_full();
}

/*
 * A datagram cut for IPv6 takes a fragment ID no one off the path can predict (RFC 7739
 * s5.1): from a keyed PRF, not rte_rand(), whose generator is linear. The same datagram
 * cut twice with rte_rand()'s state the same takes two IDs, and every piece of one cut
 * the same.
 */
static void
test_v6_ids_not_rte_rand(void **state)
{
	struct dp_frags *t = dp_frags_create(3, 4, 4, 5, normal, SOCKET_ID_ANY);
	struct rte_mbuf *m, *pieces[PIECES_MAX];
	uint32_t id[2];
	int nb;

	(void)state;
	assert_non_null(t);
	m = mbuf_of(big_test, frame, frame6(0, 3000));
	for (int cut = 0; cut < 2; cut++) {
		rte_srand(42);
		nb = dp_frag_split(t, m, 14, 1500, normal, pieces, PIECES_MAX);
		assert_int_equal(nb, 3);
		/* the fragment header after the fixed one: next, reserved, offset, ID */
		id[cut] = fc_r32(rte_pktmbuf_mtod(pieces[0], uint8_t *) + 14 + 40 + 4);
		for (int i = 0; i < nb; i++) {
			assert_int_equal(fc_r32(rte_pktmbuf_mtod(pieces[i], uint8_t *) + 14 + 44),
			    id[cut]);
			rte_pktmbuf_free(pieces[i]);
		}
	}
	assert_int_not_equal(id[0], id[1]);
	rte_pktmbuf_free(m);
	dp_frags_free(t);
	pools_full();
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trips),
		cmocka_unit_test(test_split_refused),
		cmocka_unit_test(test_segments_age_limits),
		cmocka_unit_test(test_v6_ids_not_rte_rand),
	};
	int rc;

	if (t_eal_init("test_dp_frag", "256") != 0)
		return 1;
	normal = rte_pktmbuf_pool_create("t_normal", NORMAL_MBUFS, 0, 0,
	    RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	big_test = rte_pktmbuf_pool_create("t_big", BIG_TEST_MBUFS, 0, 0, UINT16_MAX,
	    SOCKET_ID_ANY);
	if (normal == NULL || big_test == NULL)
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	rte_mempool_free(big_test);
	rte_mempool_free(normal);
	return t_eal_done(rc);
}

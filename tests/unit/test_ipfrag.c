/*
 * ipfrag: fragments are built here from one reference payload (byte i is payload[i]), so
 * a test row reads like the fragment train it stands for: (offset, length, more). Every
 * COMPLETE output is checked as a receiver would: header fields, checksum, next-header
 * chain, and the payload bytes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "frame_check.h"
#include "sni/ipfrag.h"

#define SLOTS		4
#define NOW		100

static uint8_t bufs[SLOTS][IPFRAG_BUF_SIZE];
static struct ipfrag_slot slots[SLOTS];
static uint8_t payload[IPFRAG_DATAGRAM_MAX + 1024];
static uint8_t pkt[IPFRAG_DATAGRAM_MAX + 2048];

/* The table and the reassembled datagram each test works on. */
static struct ipfrag_table tab;
static struct ipfrag_out got;

static const uint8_t v4_src[4] = { 10, 0, 0, 2 }, v4_dst[4] = { 192, 0, 2, 1 };
static const uint8_t v6_src[16] = { 0xfd, [15] = 2 }, v6_dst[16] = { 0x20, 0x01, 0x0d, 0xb8,
	[15] = 1 };

/* payload[]: a UDP (or, with tcp, TCP: data offset 5) header, then a pattern. */
static void
payload_init(bool tcp)
{
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7 + 3);
	payload[12] = tcp ? 0x50 : payload[12];
}

static void
table(struct ipfrag_table *t, uint32_t nb, uint32_t owner_max)
{
	for (uint32_t i = 0; i < SLOTS; i++)
		slots[i].buf = bufs[i];
	ipfrag_init(t, slots, nb, owner_max, IPFRAG_TIMEOUT_DEFAULT);
}

struct v4 {
	uint8_t proto;
	uint16_t id;
	const uint8_t *opts;		/* in the first fragment only, unless all_opts */
	size_t opts_len;		/* a multiple of 4 */
	bool all_opts;
	const uint8_t *src;
};

/* An IPv4 fragment of payload [off, off + len) into pkt; its length. */
static size_t
v4_frag(const struct v4 *d, uint32_t off, size_t len, bool more)
{
	size_t ol = off == 0 || d->all_opts ? d->opts_len : 0, hl = 20 + ol;

	memset(pkt, 0, hl);
	pkt[0] = (uint8_t)(0x40 | hl / 4);
	fc_w16(pkt + 2, (uint16_t)(hl + len));
	fc_w16(pkt + 4, d->id);
	fc_w16(pkt + 6, (uint16_t)(off / 8 | (more ? 0x2000 : 0)));
	pkt[8] = 64;
	pkt[9] = d->proto ? d->proto : 17;
	memcpy(pkt + 12, d->src ? d->src : v4_src, 4);
	memcpy(pkt + 16, v4_dst, 4);
	if (ol > 0)
		memcpy(pkt + 20, d->opts, ol);
	fc_w16(pkt + 10, fc_ref_csum(pkt, hl, 0));
	memcpy(pkt + hl, payload + off, len);
	return hl + len;
}

static enum ipfrag_status
add4(struct ipfrag_table *t, const struct v4 *d, uint16_t owner, uint32_t off, size_t len,
    bool more, struct ipfrag_out *out)
{
	return ipfrag_add(t, pkt, v4_frag(d, off, len, more), 0, owner, NOW, out);
}

/* A COMPLETE IPv4 output: unfragmented, right lengths and checksum, payload [0, total). */
static void
check4(const struct ipfrag_out *o, size_t hl, size_t total)
{
	assert_int_equal(o->ip_len, hl + total);
	assert_int_equal(o->ip[0], 0x40 | hl / 4);
	assert_int_equal(fc_r16(o->ip + 2), hl + total);
	assert_int_equal(fc_r16(o->ip + 6) & 0x3fff, 0);
	assert_int_equal(fc_ref_csum(o->ip, hl, 0), 0);
	assert_memory_equal(o->ip + hl, payload, total);
}

/* The unfragmentable extension headers used below: hop-by-hop (8 bytes, PadN), then
 * destination options (8 bytes), the last naming the fragment header. */
static const uint8_t v6_ext[16] = { 60, 0, 1, 4, 0, 0, 0, 0, 44, 0, 1, 4, 0, 0, 0, 0 };

struct v6 {
	const uint8_t *ext;		/* extension headers before the fragment header */
	size_t ext_len;
	uint8_t first_next;		/* the IPv6 header's next (44 without ext) */
	uint8_t frag_next;		/* the fragment header's next */
	uint32_t id;
};

static size_t
v6_frag(const struct v6 *d, uint32_t off, size_t len, bool more)
{
	size_t hl = 40 + d->ext_len;

	memset(pkt, 0, 40);
	pkt[0] = 0x60;
	fc_w16(pkt + 4, (uint16_t)(d->ext_len + 8 + len));
	pkt[6] = d->ext_len ? d->first_next : 44;
	pkt[7] = 64;
	memcpy(pkt + 8, v6_src, 16);
	memcpy(pkt + 24, v6_dst, 16);
	memcpy(pkt + 40, d->ext, d->ext_len);
	pkt[hl] = d->frag_next ? d->frag_next : 17;
	pkt[hl + 1] = 0;
	fc_w16(pkt + hl + 2, (uint16_t)(off | (more ? 1 : 0)));
	pkt[hl + 4] = (uint8_t)(d->id >> 24);
	pkt[hl + 5] = (uint8_t)(d->id >> 16);
	pkt[hl + 6] = (uint8_t)(d->id >> 8);
	pkt[hl + 7] = (uint8_t)d->id;
	memcpy(pkt + hl + 8, payload + off, len);
	return hl + 8 + len;
}

static enum ipfrag_status
add6(struct ipfrag_table *t, const struct v6 *d, uint16_t owner, uint32_t off, size_t len,
    bool more, struct ipfrag_out *out)
{
	return ipfrag_add(t, pkt, v6_frag(d, off, len, more), 0, owner, NOW, out);
}

/* Most tests' start: UDP payloads, an empty table of SLOTS slots, 8 a source. */
static int
fresh(void **state)
{
	(void)state;
	payload_init(false);
	table(&tab, SLOTS, 8);
	return 0;
}

static void
test_status_str(void **state)
{
	(void)state;
	assert_string_equal(ipfrag_status_str(IPFRAG_NEED_MORE), "need_more");
	assert_string_equal(ipfrag_status_str(IPFRAG_OVERLAP), "overlap");
	assert_string_equal(ipfrag_status_str(IPFRAG_TIMEOUT), "timeout");
	assert_string_equal(ipfrag_status_str(IPFRAG_STATUS_MAX), "unknown");
}

static void
test_v4_in_order(void **state)
{
	struct v4 d = { .id = 7 };

	(void)state;
	assert_int_equal(add4(&tab, &d, 1, 0, 1480, true, &got), IPFRAG_NEED_MORE);
	assert_int_equal(add4(&tab, &d, 1, 1480, 1480, true, &got), IPFRAG_NEED_MORE);
	assert_int_equal(ipfrag_owner_count(&tab, 1), 1);
	assert_int_equal(add4(&tab, &d, 1, 2960, 40, false, &got), IPFRAG_COMPLETE);
	check4(&got, 20, 3000);
	assert_int_equal(fc_r16(got.ip + 4), 7);
	assert_int_equal(got.ip[9], 17);
	assert_int_equal(got.pre_len, 0);
	assert_int_equal(ipfrag_owner_count(&tab, 1), 0);
	assert_int_equal(tab.used, 0);
}

static void
test_v4_reverse_keeps_df(void **state)
{
	struct v4 d = { .id = 8, .proto = 6 };
	size_t n;

	(void)state;
	payload_init(true);
	table(&tab, SLOTS, 8);
	assert_int_equal(add4(&tab, &d, 1, 2000, 5, false, &got), IPFRAG_NEED_MORE);
	assert_int_equal(add4(&tab, &d, 1, 1000, 1000, true, &got), IPFRAG_NEED_MORE);
	n = v4_frag(&d, 0, 1000, true);
	pkt[6] |= 0x40;		/* DF on the first fragment is kept */
	fc_w16(pkt + 10, 0);
	fc_w16(pkt + 10, fc_ref_csum(pkt, 20, 0));
	assert_int_equal(ipfrag_add(&tab, pkt, n, 0, 1, NOW, &got), IPFRAG_COMPLETE);
	check4(&got, 20, 2005);
	assert_int_equal(fc_r16(got.ip + 6), 0x4000);
	assert_int_equal(got.ip[9], 6);
}

/* A link prefix (Ethernet + 802.1Q) is kept from the first fragment and returned. */
static void
test_link_prefix(void **state)
{
	static const uint8_t l2[18] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0x81, 0, 0, 5,
		0x08, 0 };
	static uint8_t frame[2048];
	struct v4 d = { .id = 9 };
	size_t n;

	(void)state;
	n = v4_frag(&d, 1000, 100, false);
	memset(frame, 0xaa, 14);	/* another prefix, of another length: ignored */
	memcpy(frame + 14, pkt, n);
	assert_int_equal(ipfrag_add(&tab, frame, 14 + n + 6, 14, 1, NOW, &got), IPFRAG_NEED_MORE);
	n = v4_frag(&d, 0, 1000, true);
	memcpy(frame, l2, sizeof(l2));
	memcpy(frame + sizeof(l2), pkt, n);
	assert_int_equal(ipfrag_add(&tab, frame, sizeof(l2) + n, sizeof(l2), 1, NOW, &got),
	    IPFRAG_COMPLETE);
	check4(&got, 20, 1100);
	assert_int_equal(got.pre_len, sizeof(l2));
	assert_memory_equal(got.ip - got.pre_len, l2, sizeof(l2));
	assert_int_equal(ipfrag_add(&tab, frame, sizeof(l2) + n, IPFRAG_PRE_MAX + 1, 1, NOW, &got),
	    IPFRAG_MALFORMED);
}

/* An identical duplicate is an overlap: the datagram dies, and so do its later fragments,
 * until the tombstone times out. */
static void
test_duplicate_kills(void **state)
{
	struct v4 d = { .id = 10 };

	(void)state;
	assert_int_equal(add4(&tab, &d, 1, 0, 800, true, &got), IPFRAG_NEED_MORE);
	assert_int_equal(add4(&tab, &d, 1, 0, 800, true, &got), IPFRAG_OVERLAP);
	assert_int_equal(add4(&tab, &d, 1, 800, 100, false, &got), IPFRAG_OVERLAP);
	assert_int_equal(add4(&tab, &d, 1, 0, 800, true, &got), IPFRAG_OVERLAP);
	assert_int_equal(ipfrag_owner_count(&tab, 1), 1);
	/* tombstones are not timeouts: nothing reported */
	assert_int_equal(ipfrag_age(&tab, NOW + IPFRAG_TIMEOUT_DEFAULT, SLOTS, NULL, NULL), 0);
	assert_int_equal(tab.used, 0);
	assert_int_equal(add4(&tab, &d, 1, 0, 800, true, &got), IPFRAG_NEED_MORE);
	assert_int_equal(add4(&tab, &d, 1, 800, 100, false, &got), IPFRAG_COMPLETE);
	check4(&got, 20, 900);
}

static void
test_partial_overlap(void **state)
{
	static const uint32_t rows[][2] = {	/* a second fragment against [800, 1600) */
		{ 792, 16 }, { 1592, 16 }, { 808, 8 }, { 0, 1608 }, { 1592, 8 },
	};
	struct v4 d = { .id = 11 };

	(void)state;
	payload_init(false);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		table(&tab, SLOTS, 8);
		assert_int_equal(add4(&tab, &d, 1, 800, 800, true, &got), IPFRAG_NEED_MORE);
		assert_int_equal(add4(&tab, &d, 1, rows[i][0], rows[i][1], true, &got),
		    IPFRAG_OVERLAP);
		assert_int_equal(add4(&tab, &d, 1, 0, 800, true, &got), IPFRAG_OVERLAP);
	}
	/* adjacent is not overlapping */
	table(&tab, SLOTS, 8);
	assert_int_equal(add4(&tab, &d, 1, 800, 800, true, &got), IPFRAG_NEED_MORE);
	assert_int_equal(add4(&tab, &d, 1, 1600, 8, false, &got), IPFRAG_NEED_MORE);
	assert_int_equal(add4(&tab, &d, 1, 0, 800, true, &got), IPFRAG_COMPLETE);
	check4(&got, 20, 1608);
}

struct expired {
	uint32_t calls;
	uint16_t owner;
	uint32_t frags;
};

static void
on_expired(void *arg, uint16_t owner, uint32_t nb_frags)
{
	struct expired *e = arg;

	e->calls++;
	e->owner = owner;
	e->frags = nb_frags;
}

static void
test_gap_timeout(void **state)
{
	struct v4 d = { .id = 12 };
	struct expired e = { 0 };

	(void)state;
	assert_int_equal(add4(&tab, &d, 3, 0, 800, true, &got), IPFRAG_NEED_MORE);
	assert_int_equal(add4(&tab, &d, 3, 1600, 100, false, &got), IPFRAG_NEED_MORE);
	assert_int_equal(ipfrag_age(&tab, NOW + IPFRAG_TIMEOUT_DEFAULT - 1, SLOTS, on_expired, &e),
	    0);
	assert_int_equal(e.calls, 0);
	/* a budget of one slot at a time still gets there */
	for (uint32_t i = 0; i < SLOTS && e.calls == 0; i++)
		ipfrag_age(&tab, NOW + IPFRAG_TIMEOUT_DEFAULT, 1, on_expired, &e);
	assert_int_equal(e.calls, 1);
	assert_int_equal(e.owner, 3);
	assert_int_equal(e.frags, 2);
	assert_int_equal(ipfrag_owner_count(&tab, 3), 0);
	/* the missing piece now starts a new datagram */
	assert_int_equal(add4(&tab, &d, 3, 800, 800, true, &got), IPFRAG_NEED_MORE);
}

/* Owner 1 at its limit is refused; owner 2 is not, and nothing of 1's is pushed out. */
static void
test_owner_limit(void **state)
{
	struct v4 d = { .id = 20 };

	(void)state;
	payload_init(false);
	table(&tab, SLOTS, 2);
	for (uint16_t id = 20; id < 22; id++) {
		d.id = id;
		assert_int_equal(add4(&tab, &d, 1, 0, 800, true, &got), IPFRAG_NEED_MORE);
	}
	d.id = 22;
	assert_int_equal(add4(&tab, &d, 1, 0, 800, true, &got), IPFRAG_OWNER_LIMIT);
	assert_int_equal(add4(&tab, &d, 2, 0, 800, true, &got), IPFRAG_NEED_MORE);
	assert_int_equal(add4(&tab, &d, 2, 800, 8, false, &got), IPFRAG_COMPLETE);
	for (uint16_t id = 20; id < 22; id++) {
		d.id = id;
		assert_int_equal(add4(&tab, &d, 1, 800, 8, false, &got), IPFRAG_COMPLETE);
		check4(&got, 20, 808);
	}
	d.id = 22;
	assert_int_equal(add4(&tab, &d, 1, 0, 800, true, &got), IPFRAG_NEED_MORE);
	/* no quota at all */
	table(&tab, SLOTS, 0);
	assert_int_equal(add4(&tab, &d, 1, 0, 800, true, &got), IPFRAG_OWNER_LIMIT);
}

static void
test_table_full(void **state)
{
	struct v4 d = { .id = 30 };

	(void)state;
	payload_init(false);
	table(&tab, 2, 8);
	assert_int_equal(add4(&tab, &d, 1, 0, 800, true, &got), IPFRAG_NEED_MORE);
	assert_int_equal(add4(&tab, &d, 2, 0, 800, true, &got), IPFRAG_NEED_MORE);
	assert_int_equal(add4(&tab, &d, 3, 0, 800, true, &got), IPFRAG_TABLE_FULL);
	assert_int_equal(add4(&tab, &d, 1, 800, 8, false, &got), IPFRAG_COMPLETE);
	assert_int_equal(add4(&tab, &d, 3, 0, 800, true, &got), IPFRAG_NEED_MORE);
	assert_int_equal(add4(&tab, &d, 2, 800, 8, false, &got), IPFRAG_COMPLETE);
}

static void
test_too_big(void **state)
{
	struct v4 d = { .id = 40 };
	struct v6 d6 = { .id = 40 };
	uint32_t off;

	(void)state;
	/* ping of death: offset 65528 + 100 bytes */
	assert_int_equal(add4(&tab, &d, 1, 65528, 100, false, &got), IPFRAG_TOO_BIG);
	/* the largest that fits, then one byte more */
	off = (IPFRAG_DATAGRAM_MAX - 20 - 100) & ~7u;
	assert_int_equal(add4(&tab, &d, 1, off, IPFRAG_DATAGRAM_MAX - 20 - off, false, &got),
	    IPFRAG_NEED_MORE);
	d.id = 41;
	assert_int_equal(add4(&tab, &d, 1, off, IPFRAG_DATAGRAM_MAX - 20 - off + 1, false, &got),
	    IPFRAG_TOO_BIG);
	/* fits until a first fragment with options makes the header longer: killed */
	d.id = 40;
	{
		static const uint8_t nops[8] = { 1, 1, 1, 1, 1, 1, 1, 0 };

		d.opts = nops;
		d.opts_len = 8;
		assert_int_equal(add4(&tab, &d, 1, 0, 1480, true, &got), IPFRAG_TOO_BIG);
		d.opts = NULL;
		d.opts_len = 0;
		assert_int_equal(add4(&tab, &d, 1, 1480, 8, true, &got), IPFRAG_TOO_BIG);
	}
	/* IPv6 the same */
	off = (IPFRAG_DATAGRAM_MAX - 40 - 100) & ~7u;
	assert_int_equal(add6(&tab, &d6, 1, off, 200, false, &got), IPFRAG_TOO_BIG);
}

static void
test_too_many(void **state)
{
	struct v4 d = { .id = 50 };
	uint32_t i;

	(void)state;
	for (i = 1; i < IPFRAG_FRAGS_MAX + 1; i++)
		assert_int_equal(add4(&tab, &d, 1, i * 8, 8, true, &got), IPFRAG_NEED_MORE);
	assert_int_equal(add4(&tab, &d, 1, i * 8, 8, false, &got), IPFRAG_TOO_MANY);
	assert_int_equal(add4(&tab, &d, 1, 0, 8, true, &got), IPFRAG_TOO_MANY);
	/* exactly IPFRAG_FRAGS_MAX completes */
	d.id = 51;
	for (i = 1; i < IPFRAG_FRAGS_MAX - 1; i++)
		assert_int_equal(add4(&tab, &d, 1, i * 8, 8, true, &got), IPFRAG_NEED_MORE);
	assert_int_equal(add4(&tab, &d, 1, i * 8, 8, false, &got), IPFRAG_NEED_MORE);
	assert_int_equal(add4(&tab, &d, 1, 0, 8, true, &got), IPFRAG_COMPLETE);
	check4(&got, 20, IPFRAG_FRAGS_MAX * 8);
}

/* Options of the first fragment are the datagram's; later fragments' are ignored. */
static void
test_v4_options(void **state)
{
	/* record route (7 bytes, not copied: RFC 791), NOP */
	static const uint8_t rr[8] = { 7, 7, 4, 0, 0, 0, 0, 1 };
	struct v4 d = { .id = 60, .opts = rr, .opts_len = 8, .all_opts = true };

	(void)state;
	assert_int_equal(add4(&tab, &d, 1, 1000, 500, false, &got), IPFRAG_NEED_MORE);
	d.all_opts = false;
	assert_int_equal(add4(&tab, &d, 1, 0, 1000, true, &got), IPFRAG_COMPLETE);
	check4(&got, 28, 1500);
	assert_memory_equal(got.ip + 20, rr, 8);
}

/* Hop-by-hop and destination options before the fragment header: the chain afterwards
 * reads 0 -> 60 -> 17, the payload length counts them, the fragment header is gone. */
static void
test_v6_ext_headers(void **state)
{
	struct v6 d = { .ext = v6_ext, .ext_len = 16, .first_next = 0, .id = 0xdeadbeef };

	(void)state;
	assert_int_equal(add6(&tab, &d, 1, 1232, 1000, false, &got), IPFRAG_NEED_MORE);
	assert_int_equal(add6(&tab, &d, 1, 0, 1232, true, &got), IPFRAG_COMPLETE);
	assert_int_equal(got.ip_len, 56 + 2232);
	assert_int_equal(fc_r16(got.ip + 4), 16 + 2232);
	assert_int_equal(got.ip[6], 0);
	assert_int_equal(got.ip[40], 60);
	assert_int_equal(got.ip[48], 17);
	assert_memory_equal(got.ip + 8, v6_src, 16);
	assert_memory_equal(got.ip + 56, payload, 2232);
	/* without extension headers, the IPv6 header itself names the upper layer */
	d = (struct v6){ .id = 2, .frag_next = 6 };
	payload_init(true);
	assert_int_equal(add6(&tab, &d, 1, 0, 1000, true, &got), IPFRAG_NEED_MORE);
	assert_int_equal(add6(&tab, &d, 1, 1000, 24, false, &got), IPFRAG_COMPLETE);
	assert_int_equal(got.ip_len, 40 + 1024);
	assert_int_equal(fc_r16(got.ip + 4), 1024);
	assert_int_equal(got.ip[6], 6);
	assert_memory_equal(got.ip + 40, payload, 1024);
}

static void
test_v6_atomic(void **state)
{
	struct v6 d = { .id = 3 };

	(void)state;
	assert_int_equal(add6(&tab, &d, 1, 0, 1000, true, &got), IPFRAG_NEED_MORE);
	/* RFC 6946: an atomic fragment with the same ID is its own datagram */
	assert_int_equal(add6(&tab, &d, 1, 0, 100, false, &got), IPFRAG_COMPLETE);
	assert_int_equal(got.ip_len, 140);
	assert_int_equal(got.ip[6], 17);
	assert_int_equal(fc_r16(got.ip + 4), 100);
	assert_int_equal(tab.used, 1);
	assert_int_equal(add6(&tab, &d, 1, 1000, 8, false, &got), IPFRAG_COMPLETE);
	assert_int_equal(got.ip_len, 1048);
}

/* The key: protocol and ID (IPv4), source, owner, family. Nothing is mixed. */
static void
test_keys_apart(void **state)
{
	static const uint8_t other_src[4] = { 10, 0, 0, 3 };
	struct v4 udp = { .id = 70 }, tcp = { .id = 70, .proto = 6 }, id2 = { .id = 71 },
		src2 = { .id = 70, .src = other_src };
	struct v6 d6 = { .id = 70 };

	(void)state;
	payload_init(false);
	for (int owner_swap = 0; owner_swap < 2; owner_swap++) {
		table(&tab, SLOTS, 8);
		assert_int_equal(add4(&tab, &udp, 1, 0, 800, true, &got), IPFRAG_NEED_MORE);
		/* each of these would complete udp's datagram if it were mixed in */
		if (owner_swap) {
			assert_int_equal(add4(&tab, &udp, 2, 800, 8, false, &got),
			    IPFRAG_NEED_MORE);
		} else {
			assert_int_equal(add4(&tab, &tcp, 1, 800, 8, false, &got),
			    IPFRAG_NEED_MORE);
			assert_int_equal(add4(&tab, &id2, 1, 800, 8, false, &got),
			    IPFRAG_NEED_MORE);
			assert_int_equal(add4(&tab, &src2, 1, 800, 8, false, &got),
			    IPFRAG_NEED_MORE);
			assert_int_equal(add6(&tab, &d6, 1, 800, 8, false, &got),
			    IPFRAG_TABLE_FULL);
		}
		assert_int_equal(add4(&tab, &udp, 1, 800, 16, false, &got), IPFRAG_COMPLETE);
		check4(&got, 20, 816);
	}
}

static void
test_last_twice(void **state)
{
	struct v4 d = { .id = 80 };
	struct v6 d6 = { .id = 80 };

	(void)state;
	assert_int_equal(add4(&tab, &d, 1, 800, 100, false, &got), IPFRAG_NEED_MORE);
	assert_int_equal(add4(&tab, &d, 1, 1600, 100, false, &got), IPFRAG_MALFORMED);
	assert_int_equal(add4(&tab, &d, 1, 0, 800, true, &got), IPFRAG_MALFORMED);
	/* a fragment past a known end, and an end before held bytes */
	d.id = 81;
	assert_int_equal(add4(&tab, &d, 1, 800, 100, false, &got), IPFRAG_NEED_MORE);
	assert_int_equal(add4(&tab, &d, 1, 904, 8, true, &got), IPFRAG_MALFORMED);
	d.id = 82;
	assert_int_equal(add4(&tab, &d, 1, 1600, 8, true, &got), IPFRAG_NEED_MORE);
	assert_int_equal(add4(&tab, &d, 1, 800, 100, false, &got), IPFRAG_MALFORMED);
	/* an empty last fragment twice at the same end: a duplicate */
	table(&tab, SLOTS, 8);
	assert_int_equal(add6(&tab, &d6, 1, 800, 0, false, &got), IPFRAG_NEED_MORE);
	assert_int_equal(add6(&tab, &d6, 1, 800, 0, false, &got), IPFRAG_OVERLAP);
}

static void
test_malformed(void **state)
{
	static const uint8_t dst_long[8] = { 17, 1, 1, 4, 0, 0, 0, 0 };	/* 16 bytes */
	struct v4 d = { .id = 90 };
	struct v6 d6 = { .id = 90 };
	size_t n;

	(void)state;
	/* non-final, not a multiple of 8; non-final and empty */
	assert_int_equal(add4(&tab, &d, 1, 0, 804, true, &got), IPFRAG_MALFORMED);
	assert_int_equal(add4(&tab, &d, 1, 800, 0, true, &got), IPFRAG_MALFORMED);
	assert_int_equal(add6(&tab, &d6, 1, 0, 1004, true, &got), IPFRAG_MALFORMED);
	/* IPv4 first fragment with less than 8 bytes of UDP; TCP cut inside its header */
	assert_int_equal(add4(&tab, &d, 1, 0, 0, true, &got), IPFRAG_MALFORMED);
	d.proto = 6;
	payload_init(true);
	assert_int_equal(add4(&tab, &d, 1, 0, 16, true, &got), IPFRAG_MALFORMED);
	payload[12] = 0x60;	/* 24 bytes of TCP header */
	assert_int_equal(add4(&tab, &d, 1, 0, 24, true, &got), IPFRAG_NEED_MORE);
	payload[12] = 0xf0;	/* 60 */
	d.id = 91;
	assert_int_equal(add4(&tab, &d, 1, 0, 56, true, &got), IPFRAG_MALFORMED);
	/* RFC 7112: destination options after the fragment header, the UDP header beyond */
	payload_init(false);
	memcpy(payload, dst_long, sizeof(dst_long));
	d6.frag_next = 60;
	assert_int_equal(add6(&tab, &d6, 1, 0, 16, true, &got), IPFRAG_MALFORMED);
	assert_int_equal(add6(&tab, &d6, 1, 0, 24, true, &got), IPFRAG_NEED_MORE);
	/* a second fragment header in the first fragment's chain */
	d6.id = 92;
	d6.frag_next = 44;
	assert_int_equal(add6(&tab, &d6, 1, 0, 24, true, &got), IPFRAG_MALFORMED);
	/* a bad IPv4 checksum: no key, so nothing is killed */
	d = (struct v4){ .id = 93 };
	assert_int_equal(add4(&tab, &d, 1, 0, 800, true, &got), IPFRAG_NEED_MORE);
	n = v4_frag(&d, 800, 8, false);
	pkt[10] ^= 1;
	assert_int_equal(ipfrag_add(&tab, pkt, n, 0, 1, NOW, &got), IPFRAG_MALFORMED);
	/* shorter than its IP length; not IP at all */
	n = v4_frag(&d, 800, 8, false);
	assert_int_equal(ipfrag_add(&tab, pkt, n - 1, 0, 1, NOW, &got), IPFRAG_MALFORMED);
	pkt[0] = 0x50;
	assert_int_equal(ipfrag_add(&tab, pkt, n, 0, 1, NOW, &got), IPFRAG_MALFORMED);
	assert_int_equal(ipfrag_add(&tab, pkt, 0, 0, 1, NOW, &got), IPFRAG_MALFORMED);
	/* trailing padding is fine */
	n = v4_frag(&d, 800, 8, false);
	assert_int_equal(ipfrag_add(&tab, pkt, n + 10, 0, 1, NOW, &got), IPFRAG_COMPLETE);
	check4(&got, 20, 808);
	/* a malformed fragment with a key kills its datagram */
	d.id = 94;
	assert_int_equal(add4(&tab, &d, 1, 0, 800, true, &got), IPFRAG_NEED_MORE);
	assert_int_equal(add4(&tab, &d, 1, 800, 12, true, &got), IPFRAG_MALFORMED);
	assert_int_equal(add4(&tab, &d, 1, 800, 8, false, &got), IPFRAG_MALFORMED);
}

static void
test_not_fragment(void **state)
{
	static const uint8_t udp_ext[8] = { 17, 0, 1, 4, 0, 0, 0, 0 };
	struct v4 d = { .id = 95 };
	size_t n;

	(void)state;
	assert_int_equal(add4(&tab, &d, 1, 0, 100, false, &got), IPFRAG_NOT_FRAGMENT);
	n = v6_frag(&(struct v6){ .ext = udp_ext, .ext_len = 8, .first_next = 0 }, 0, 100, false);
	pkt[40] = 17;	/* hop-by-hop -> UDP: no fragment header */
	assert_int_equal(ipfrag_add(&tab, pkt, n, 0, 1, NOW, &got), IPFRAG_NOT_FRAGMENT);
	assert_int_equal(tab.used, 0);
}

/* Every truncation of a valid fragment is refused without a read past its end. */
static void
test_truncations(void **state)
{
	struct v6 d6 = { .ext = v6_ext, .ext_len = 16, .first_next = 0, .id = 5 };
	struct v4 d = { .id = 96 };
	static uint8_t copy[2048];
	size_t n;

	(void)state;
	n = v6_frag(&d6, 0, 64, true);
	memcpy(copy, pkt, n);
	for (size_t k = 0; k < n; k++)
		assert_int_equal(ipfrag_add(&tab, copy, k, 0, 1, NOW, &got), IPFRAG_MALFORMED);
	n = v4_frag(&d, 0, 64, true);
	memcpy(copy, pkt, n);
	for (size_t k = 0; k < n; k++)
		assert_int_equal(ipfrag_add(&tab, copy, k, 0, 1, NOW, &got), IPFRAG_MALFORMED);
}

/* A whole datagram into pkt: IPv4 with opts, or IPv6 with v6_ext minus the fragment
 * header (hop-by-hop -> destination options -> UDP). Its length. */
static size_t
whole4(const uint8_t *opts, size_t opts_len, size_t len, bool df)
{
	struct v4 d = { .id = 123, .opts = opts, .opts_len = opts_len };
	size_t n = v4_frag(&d, 0, len, false);

	if (df) {
		pkt[6] |= 0x40;
		fc_w16(pkt + 10, 0);
		fc_w16(pkt + 10, fc_ref_csum(pkt, 20 + opts_len, 0));
	}
	return n;
}

static size_t
whole6(size_t len, bool ext)
{
	memset(pkt, 0, 40);
	pkt[0] = 0x60;
	pkt[6] = ext ? 0 : 17;
	memcpy(pkt + 8, v6_src, 16);
	memcpy(pkt + 24, v6_dst, 16);
	if (ext) {
		memcpy(pkt + 40, v6_ext, 16);
		pkt[48] = 17;
	}
	memcpy(pkt + 40 + (ext ? 16 : 0), payload, len);
	fc_w16(pkt + 4, (uint16_t)(len + (ext ? 16 : 0)));
	return 40 + (ext ? 16 : 0) + len;
}

static uint8_t orig[IPFRAG_DATAGRAM_MAX];
static uint8_t pieces[1400][1600];

static uint32_t
gcd(uint32_t a, uint32_t b)
{
	return b == 0 ? a : gcd(b, a % b);
}

/* Cut orig for mtu and give the pieces back in the order of step (1 unless coprime). */
static void
round_trip(size_t n, uint16_t mtu, uint32_t step, size_t expect_first_hdr)
{
	struct ipfrag_plan plan;
	enum ipfrag_status st;
	int nb;

	nb = ipfrag_cut_plan(orig, n, mtu, 0xcafe, &plan);
	assert_true(nb > 1 && nb <= (int)(sizeof(pieces) / sizeof(pieces[0])));
	for (int i = 0; i < nb; i++) {
		size_t len = ipfrag_cut_one(&plan, orig, (uint32_t)i, pieces[i], sizeof(pieces[i]));

		assert_true(len > 0 && len <= mtu);
		if (plan.family == 4) {
			size_t hl = (size_t)(pieces[i][0] & 0xf) * 4;

			assert_int_equal(hl, i == 0 ? expect_first_hdr : plan.hdr_rest);
			assert_int_equal(fc_ref_csum(pieces[i], hl, 0), 0);
			assert_int_equal(fc_r16(pieces[i] + 2), len);
			assert_int_equal(fc_r16(pieces[i] + 4), fc_r16(orig + 4));
			assert_int_equal(pieces[i][6] & 0x40, 0);	/* DF cleared */
			assert_int_equal(!!(pieces[i][6] & 0x20), i + 1 < nb);
		} else {
			assert_int_equal(fc_r16(pieces[i] + 4), len - 40);
		}
	}
	if (nb > IPFRAG_FRAGS_MAX)
		return;
	if (gcd(step, (uint32_t)nb) != 1)
		step = 1;
	table(&tab, 1, 1);
	for (int j = 0; j < nb; j++) {
		uint32_t i = (uint32_t)(((uint64_t)j * step) % (uint32_t)nb);

		st = ipfrag_add(&tab, pieces[i], ipfrag_cut_len(&plan, i), 0, 1, NOW, &got);
		assert_int_equal(st, j + 1 < nb ? IPFRAG_NEED_MORE : IPFRAG_COMPLETE);
	}
	assert_int_equal(got.ip_len, n);
	if (plan.family == 4) {
		assert_int_equal(fc_ref_csum(got.ip, plan.hdr_len, 0), 0);
		assert_memory_equal(got.ip, orig, 6);
		assert_memory_equal(got.ip + 8, orig + 8, 2);
		assert_memory_equal(got.ip + 12, orig + 12, n - 12);
	} else {
		assert_memory_equal(got.ip, orig, n);
	}
}

static void
test_cut_round_trip(void **state)
{
	/* security (0x82, copied, 11 bytes), NOP, record route (not copied), EOL padding */
	static const uint8_t opts[20] = { 0x82, 11, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
		7, 7, 4, 0, 0, 0, 0, 0 };
	static const uint32_t steps[] = { 1, 7, 11, 13 };
	struct ipfrag_plan plan;
	size_t n;

	(void)state;
	payload_init(false);
	for (uint16_t mtu = 576; mtu <= 1500; mtu += 37) {
		for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
			n = whole4(NULL, 0, 9000, true);
			memcpy(orig, pkt, n);
			round_trip(n, mtu, steps[s], 20);
			n = whole4(opts, sizeof(opts), 5000, false);
			memcpy(orig, pkt, n);
			round_trip(n, mtu, steps[s], 40);
			n = whole6(20000, mtu & 1);
			memcpy(orig, pkt, n);
			round_trip(n, mtu, steps[s], 0);
		}
	}
	/* later IPv4 fragments carry the copied option only: 20 + 12 bytes */
	n = whole4(opts, sizeof(opts), 5000, false);
	memcpy(orig, pkt, n);
	assert_int_equal(ipfrag_cut_plan(orig, n, 1500, 0, &plan), 4);
	assert_int_equal(plan.hdr_rest, 32);
	assert_int_equal(ipfrag_cut_one(&plan, orig, 1, pieces[1], sizeof(pieces[1])),
	    ipfrag_cut_len(&plan, 1));
	assert_memory_equal(pieces[1] + 20, opts, 11);
	assert_int_equal(pieces[1][31], 0);
	assert_int_equal(ipfrag_cut_one(&plan, orig, 4, pieces[1], sizeof(pieces[1])), 0);
	assert_int_equal(ipfrag_cut_one(&plan, orig, 0, pieces[0], 100), 0);
	/* the largest datagram: 54 pieces at mtu 1280, and back */
	n = whole6(IPFRAG_DATAGRAM_MAX - 40, false);
	memcpy(orig, pkt, n);
	round_trip(n, 1280, 5, 0);
	/* at mtu 576 a 9000-byte IPv4 datagram is 17 pieces; at 68, 188: cut, not held */
	n = whole4(NULL, 0, 9000, false);
	memcpy(orig, pkt, n);
	assert_int_equal(ipfrag_cut_plan(orig, n, 68, 0, &plan), 188);
	round_trip(n, 68, 1, 20);
	/* an IPv6 first fragment carries the unfragmentable part, the fragment header, and
	 * the destination options and UDP header */
	n = whole6(3000, true);
	memcpy(orig, pkt, n);
	assert_int_equal(ipfrag_cut_plan(orig, n, 1280, 0x01020304, &plan), 3);
	assert_int_equal(plan.hdr_len, 48);
	ipfrag_cut_one(&plan, orig, 0, pieces[0], sizeof(pieces[0]));
	assert_int_equal(pieces[0][6], 0);
	assert_int_equal(pieces[0][40], 44);
	assert_int_equal(pieces[0][48], 60);
	assert_int_equal(fc_r16(pieces[0] + 50), 1);
	assert_int_equal(pieces[0][52], 1);
	assert_int_equal(pieces[0][55], 4);
	assert_int_equal(pieces[0][56], 17);	/* destination options, fragmentable */
}

static void
test_cut_refused(void **state)
{
	struct ipfrag_plan plan;
	size_t n;

	(void)state;
	payload_init(false);
	n = whole4(NULL, 0, 1000, false);
	assert_int_equal(ipfrag_cut_plan(pkt, n, 1500, 0, &plan), -EINVAL);	/* fits */
	assert_int_equal(ipfrag_cut_plan(pkt, n, 27, 0, &plan), -EMSGSIZE);
	assert_int_equal(ipfrag_cut_plan(pkt, n - 1, 500, 0, &plan), -EINVAL);
	pkt[7] = 1;	/* already a fragment */
	assert_int_equal(ipfrag_cut_plan(pkt, n, 500, 0, &plan), -EINVAL);
	n = v6_frag(&(struct v6){ .id = 1 }, 0, 2000, false);
	assert_int_equal(ipfrag_cut_plan(pkt, n, 1280, 0, &plan), -EINVAL);
	assert_int_equal(ipfrag_cut_plan(pkt, 0, 1280, 0, &plan), -EINVAL);
	/* bad option length */
	{
		static const uint8_t bad[4] = { 0x82, 9, 0, 0 };

		n = whole4(bad, sizeof(bad), 1000, false);
		assert_int_equal(ipfrag_cut_plan(pkt, n, 500, 0, &plan), -EINVAL);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status_str),
		cmocka_unit_test_setup(test_v4_in_order, fresh),
		cmocka_unit_test(test_v4_reverse_keeps_df),
		cmocka_unit_test_setup(test_link_prefix, fresh),
		cmocka_unit_test_setup(test_duplicate_kills, fresh),
		cmocka_unit_test(test_partial_overlap),
		cmocka_unit_test_setup(test_gap_timeout, fresh),
		cmocka_unit_test(test_owner_limit),
		cmocka_unit_test(test_table_full),
		cmocka_unit_test_setup(test_too_big, fresh),
		cmocka_unit_test_setup(test_too_many, fresh),
		cmocka_unit_test_setup(test_v4_options, fresh),
		cmocka_unit_test_setup(test_v6_ext_headers, fresh),
		cmocka_unit_test_setup(test_v6_atomic, fresh),
		cmocka_unit_test(test_keys_apart),
		cmocka_unit_test_setup(test_last_twice, fresh),
		cmocka_unit_test_setup(test_malformed, fresh),
		cmocka_unit_test_setup(test_not_fragment, fresh),
		cmocka_unit_test_setup(test_truncations, fresh),
		cmocka_unit_test(test_cut_round_trip),
		cmocka_unit_test(test_cut_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

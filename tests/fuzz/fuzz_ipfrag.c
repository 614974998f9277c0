/*
 * libFuzzer target for ipfrag. The input is a little program run against one table:
 *
 *   header:  u8 flags                  bit 0: fix IPv4 header checksums of raw fragments
 *                                      bits 1-2: slots = 1 << n; bits 3-4: owner_max = n + 1
 *   op:      u8 op, then by op & 3:
 *     0 raw fragment:  u8 who | u16 len | len bytes        owner = who & 3, now += who >> 4,
 *                                                          the first (who >> 2 & 3) * 7 bytes
 *                                                          are the link prefix
 *     1 age:           u8 budget                           now += budget >> 6
 *     2 cut:           u16 len | len bytes | u16 mtu | u8 order | u8 k
 *                      the bytes become a whole datagram (lengths fixed, MF/offset
 *                      cleared, checksum set), are cut for mtu and fed to the table, in
 *                      order, reversed (order & 1), with piece k sent twice (order & 2),
 *                      or left out (order & 4); owner = order >> 6
 *     3 round trip:    like 2, but on a table of its own, in order: it must complete
 *                      to the same datagram (IPv4: DF cleared and checksum aside) unless
 *                      it has more than IPFRAG_FRAGS_MAX pieces, a longer
 *                      unfragmentable part than IPFRAG_HDR_ROOM, or its first piece
 *                      lacks the header chain
 *
 * After every add the table's invariants are checked; every COMPLETE output must be a
 * whole, well-formed, unfragmented datagram. Any failure abort()s.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_input.h"
#include "sni/ipfrag.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SLOTS_MAX	8
#define PIECES_MAX	256
#define MTU_MIN		68
#define STEPS_MAX	64

static uint8_t bufs[SLOTS_MAX][IPFRAG_BUF_SIZE];
static struct ipfrag_slot slots[SLOTS_MAX];
static uint8_t rt_buf[IPFRAG_BUF_SIZE];
static struct ipfrag_slot rt_slot;
static uint8_t dgram[IPFRAG_DATAGRAM_MAX];
static uint8_t pieces[PIECES_MAX][1600];

static bool
take16(struct input *in, uint16_t *v)
{
	uint8_t b[2];

	if (!take(in, b, 2))
		return false;
	*v = (uint16_t)(b[0] << 8 | b[1]);
	return true;
}

static uint16_t
rd16(const uint8_t *b)
{
	return (uint16_t)(b[0] << 8 | b[1]);
}

static uint16_t
csum(const uint8_t *b, size_t n)
{
	uint32_t sum = 0;

	for (size_t i = 0; i + 1 < n; i += 2)
		sum += rd16(b + i);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static void
set_csum(uint8_t *h, size_t ihl)
{
	uint16_t s;

	h[10] = h[11] = 0;
	s = csum(h, ihl);
	h[10] = (uint8_t)(s >> 8);
	h[11] = (uint8_t)s;
}

/* The table's promises: per-owner quota, slot states, disjoint ranges. */
static void
check_table(const struct ipfrag_table *t)
{
	uint32_t used = 0;

	for (uint32_t i = 0; i < t->nb_slots; i++) {
		const struct ipfrag_slot *s = &t->slots[i];
		uint32_t held = 0;

		check(s->state <= 2);
		if (s->state == 0)
			continue;
		used++;
		check(ipfrag_owner_count(t, s->owner) <= t->owner_max);
		check(s->nb <= IPFRAG_FRAGS_MAX);
		check(s->hdr_len <= IPFRAG_HDR_ROOM);
		for (uint32_t j = 0; j < s->nb; j++) {
			check(s->ranges[j].start < s->ranges[j].end);
			check(s->hdr_len + s->ranges[j].end <= IPFRAG_DATAGRAM_MAX);
			held += s->ranges[j].end - s->ranges[j].start;
			for (uint32_t k = 0; k < j; k++)
				check(s->ranges[j].end <= s->ranges[k].start ||
				    s->ranges[k].end <= s->ranges[j].start);
		}
		if (s->state == 1)
			check(held == s->held && (!s->last_seen || held < s->total ||
			    s->hdr_len == 0));
	}
	check(used == t->used);
}

/* A COMPLETE output: unfragmented, its lengths and checksum right, its chain walkable. */
static void
check_output(const struct ipfrag_table *t, const struct ipfrag_out *o)
{
	const uint8_t *out = o->ip;
	size_t len = o->ip_len;
	bool inside = false;

	check(len <= IPFRAG_DATAGRAM_MAX && len >= 20 && o->pre_len <= IPFRAG_PRE_MAX);
	for (uint32_t i = 0; i < t->nb_slots; i++)
		if (out - o->pre_len >= t->slots[i].buf &&
		    out + len <= t->slots[i].buf + IPFRAG_BUF_SIZE)
			inside = true;
	check(inside);
	if (out[0] >> 4 == 4) {
		size_t ihl = (size_t)(out[0] & 0xf) * 4;

		check(ihl >= 20 && ihl <= len && rd16(out + 2) == len);
		check((rd16(out + 6) & 0x3fff) == 0);
		check(csum(out, ihl) == 0);
	} else {
		size_t pos = 40;
		uint8_t next;

		check(out[0] >> 4 == 6 && len >= 40 && rd16(out + 4) + 40u == len);
		next = out[6];
		for (;;) {
			check(next != 44);	/* no fragment header left anywhere in the chain */
			if (next != 0 && next != 43 && next != 60 && next != 51)
				break;
			check(pos + 8 <= len);
			size_t hl = next == 51 ? ((size_t)out[pos + 1] + 2) * 4 :
			    ((size_t)out[pos + 1] + 1) * 8;
			next = out[pos];
			pos += hl;
			check(pos <= len);
		}
	}
}

static enum ipfrag_status
add(struct ipfrag_table *t, const uint8_t *p, size_t n, uint16_t pre, uint16_t owner,
    uint64_t now, struct ipfrag_out *out)
{
	enum ipfrag_status st = ipfrag_add(t, p, n, pre, owner, now, out);

	check(st < IPFRAG_STATUS_MAX && st != IPFRAG_TIMEOUT);
	if (st == IPFRAG_COMPLETE)
		check_output(t, out);
	check_table(t);
	return st;
}

/* Make dgram[0 .. n) a whole datagram from raw bytes; false if it can't be one. */
static bool
make_whole(size_t n)
{
	if (n >= 20 && dgram[0] >> 4 == 4) {
		size_t ihl = (size_t)(dgram[0] & 0xf) * 4;

		if (ihl < 20 || ihl > n)
			dgram[0] = 0x45, ihl = 20;
		dgram[2] = (uint8_t)(n >> 8);
		dgram[3] = (uint8_t)n;
		dgram[6] &= 0x40;
		dgram[7] = 0;
		set_csum(dgram, ihl);
		return true;
	}
	if (n > 40 && dgram[0] >> 4 == 6 && n - 40 <= UINT16_MAX) {
		dgram[4] = (uint8_t)((n - 40) >> 8);
		dgram[5] = (uint8_t)(n - 40);
		return true;
	}
	return false;
}

/* Cut dgram for mtu into pieces[]; the number of pieces, or 0. Checks every piece. */
static uint32_t
cut(size_t n, uint16_t mtu, struct ipfrag_plan *plan)
{
	int nb;

	if (mtu > sizeof(pieces[0]))
		mtu = sizeof(pieces[0]);
	if (mtu < MTU_MIN)
		mtu = MTU_MIN;
	nb = ipfrag_cut_plan(dgram, n, mtu, 0x12345678, plan);
	if (nb <= 0)
		return 0;
	if (nb > PIECES_MAX)
		return 0;
	for (uint32_t i = 0; i < (uint32_t)nb; i++) {
		size_t len = ipfrag_cut_one(plan, dgram, i, pieces[i], sizeof(pieces[i]));

		check(len > 0 && len <= mtu && len == ipfrag_cut_len(plan, i));
		check(ipfrag_cut_one(plan, dgram, i, pieces[i], len - 1) == 0);
		if (plan->family == 4)
			check(csum(pieces[i], (size_t)(pieces[i][0] & 0xf) * 4) == 0);
	}
	check(ipfrag_cut_len(plan, (uint32_t)nb) == 0);
	return (uint32_t)nb;
}

static void
round_trip(size_t n, uint32_t nb, const struct ipfrag_plan *plan)
{
	struct ipfrag_table t;
	struct ipfrag_out o = { 0 };
	const uint8_t *out;
	enum ipfrag_status st = IPFRAG_NEED_MORE;
	uint32_t i;

	rt_slot.buf = rt_buf;
	ipfrag_init(&t, &rt_slot, 1, 1, 5);
	for (i = 0; i < nb; i++) {
		st = add(&t, pieces[i], ipfrag_cut_len(plan, i), 0, 0, 0, &o);
		if (st != IPFRAG_NEED_MORE)
			break;
	}
	if (plan->hdr_len > IPFRAG_HDR_ROOM) {
		check(st == IPFRAG_TOO_BIG && i == 0);
		return;
	}
	if (nb > IPFRAG_FRAGS_MAX) {
		check(st == IPFRAG_TOO_MANY || (i == 0 && st == IPFRAG_MALFORMED));
		return;
	}
	if (st == IPFRAG_MALFORMED && i == 0)	/* RFC 7112: the first piece is too short */
		return;
	check(st == IPFRAG_COMPLETE && i + 1 == nb && o.ip_len == n && o.pre_len == 0);
	out = o.ip;
	if (plan->family == 4) {
		check(memcmp(out, dgram, 6) == 0 && (out[6] | 0x40) == (dgram[6] | 0x40));
		check(memcmp(out + 7, dgram + 7, 3) == 0);
		check(memcmp(out + 12, dgram + 12, n - 12) == 0);
	} else {
		check(memcmp(out, dgram, n) == 0);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { .p = data, .len = size };
	struct ipfrag_table t;
	uint8_t flags, op;
	uint64_t now = 1000;

	if (!take(&in, &flags, 1))
		return 0;
	for (uint32_t i = 0; i < SLOTS_MAX; i++)
		slots[i].buf = bufs[i];
	ipfrag_init(&t, slots, 1u << (flags >> 1 & 3), (flags >> 3 & 3) + 1, 5);
	for (unsigned int step = 0; step < STEPS_MAX && take(&in, &op, 1); step++) {
		struct ipfrag_out out;
		struct ipfrag_plan plan;
		uint16_t len, mtu, pre;
		uint8_t b, order, k;
		uint32_t nb;

		switch (op & 3) {
		case 0:
			if (!take(&in, &b, 1) || !take16(&in, &len))
				return 0;
			len = (uint16_t)take_some(&in, dgram, len);
			now += b >> 4;
			pre = (uint16_t)((b >> 2 & 3) * 7);
			if ((flags & 1) && len >= pre + 20 && dgram[pre] >> 4 == 4 &&
			    (size_t)(dgram[pre] & 0xf) * 4 <= (size_t)(len - pre))
				set_csum(dgram + pre, (size_t)(dgram[pre] & 0xf) * 4);
			add(&t, dgram, len, pre, b & 3, now, &out);
			break;
		case 1:
			if (!take(&in, &b, 1))
				return 0;
			now += b >> 6;
			{
				uint32_t before = t.used, freed = ipfrag_age(&t, now, b & 0x3f,
				    NULL, NULL);

				check(freed <= before && t.used <= before - freed);
			}
			check_table(&t);
			break;
		default:
			if (!take16(&in, &len))
				return 0;
			len = (uint16_t)take_some(&in, dgram, len);
			if (!take16(&in, &mtu) || !take(&in, &order, 1) || !take(&in, &k, 1))
				return 0;
			if (!make_whole(len) || (nb = cut(len, mtu, &plan)) == 0)
				break;
			if ((op & 3) == 3) {
				round_trip(len, nb, &plan);
				break;
			}
			for (uint32_t j = 0; j < nb; j++) {
				uint32_t i = order & 1 ? nb - 1 - j : j;

				if ((order & 4) && i == k % nb)
					continue;
				add(&t, pieces[i], ipfrag_cut_len(&plan, i), 0, order >> 6, now,
				    &out);
				if ((order & 2) && i == k % nb)
					add(&t, pieces[i], ipfrag_cut_len(&plan, i), 0, order >> 6,
					    now, &out);
			}
			break;
		}
	}
	return 0;
}

/*
 * Bounded reassembly of IP fragments (the cut that makes them again: ipfrag_cut.c).
 *
 * Each datagram in reassembly is a slot: its key, the list of fragment ranges it holds
 * (disjoint: any overlap kills the datagram) and a buffer laid out so that completion
 * needs no move:
 *
 *   buf:  |        IPFRAG_HDR_ROOM         |  fragmentable part, placed by offset ...  |
 *              | prefix | unfragmentable |
 *               ^ pre_len + hdr_len bytes of the first fragment, ending at the room's end
 *
 * so the reassembled frame is buf[IPFRAG_HDR_ROOM - hdr_len - pre_len .. ROOM + total).
 * A fragment is judged as a whole before anything is written.
 */
#include <stdbool.h>
#include <string.h>

#include "sni/ipfrag.h"
#include "ipfrag_int.h"
#include "sni/rd.h"
#include "wire_int.h"

enum {
	SLOT_FREE,
	SLOT_LIVE,
	SLOT_DEAD,		/* killed; a tombstone until it times out */
};

static const char *const ipfrag_status_names[] = {
	[IPFRAG_NEED_MORE] = "need_more",
	[IPFRAG_COMPLETE] = "complete",
	[IPFRAG_NOT_FRAGMENT] = "not_fragment",
	[IPFRAG_OVERLAP] = "overlap",
	[IPFRAG_TOO_BIG] = "too_big",
	[IPFRAG_TOO_MANY] = "too_many",
	[IPFRAG_OWNER_LIMIT] = "owner_limit",
	[IPFRAG_TABLE_FULL] = "table_full",
	[IPFRAG_MALFORMED] = "malformed",
	[IPFRAG_TIMEOUT] = "timeout",
};

const char *
ipfrag_status_str(enum ipfrag_status st)
{
	if ((size_t)st >= sizeof(ipfrag_status_names) / sizeof(ipfrag_status_names[0]) ||
	    ipfrag_status_names[st] == NULL)
		return "unknown";
	return ipfrag_status_names[st];
}

/* One fragment as parsed: its key, where its parts are, where its data goes. */
struct frag_in {
	bool keyed;			/* the key below is known (even if the rest is bad) */
	uint8_t family;
	uint8_t proto;			/* IPv4 protocol; IPv6: the fragment header's next */
	uint32_t id;
	uint8_t src[16], dst[16];	/* IPv4 in the first 4 bytes, the rest zero */
	struct rd pre;			/* the link prefix */
	struct rd hdr;			/* the unfragmentable part */
	uint16_t nh_pos;		/* IPv6: the next-header byte naming the fragment header */
	struct rd data;			/* the fragmentable bytes this fragment carries */
	uint32_t off;			/* their offset in bytes */
	bool more;
};

/*
 * IPv4 (RFC 791 s3.1):
 *
 *   ver:4 ihl:4 | tos | total_len | id | flags:3 (0 DF MF) offset:13 (8-byte units) |
 *   ttl | proto | checksum | src:4 | dst:4 | options (ihl * 4 - 20) | data
 *
 * The key is (src, dst, proto, id). A header with a bad checksum has no trustworthy key.
 */
static enum ipfrag_status
parse_ipv4(struct rd r, struct frag_in *f)
{
	struct rd all = r, whole, src, dst;
	uint16_t total, id, frag, sum;
	uint8_t vihl, tos, ttl;
	size_t ihl;

	if (!rd_u8(&r, &vihl) || !rd_u8(&r, &tos) || !rd_u16(&r, &total) || !rd_u16(&r, &id) ||
	    !rd_u16(&r, &frag) || !rd_u8(&r, &ttl) || !rd_u8(&r, &f->proto) ||
	    !rd_u16(&r, &sum) || !rd_sub(&r, 4, &src) || !rd_sub(&r, 4, &dst))
		return IPFRAG_MALFORMED;
	ihl = (size_t)(vihl & 0xf) * 4;
	if (vihl >> 4 != 4 || ihl < IP4_HDR_MIN || total < ihl || !rd_sub(&all, total, &whole) ||
	    !rd_sub(&whole, ihl, &f->hdr) || ipfrag_csum(f->hdr) != 0)
		return IPFRAG_MALFORMED;
	f->family = 4;
	f->id = id;
	memcpy(f->src, src.p, 4);
	memcpy(f->dst, dst.p, 4);
	f->keyed = true;
	f->data = whole;
	f->off = (uint32_t)(frag & IP4_OFF_MASK) * 8;
	f->more = (frag & IP4_MF) != 0;
	if (f->off == 0 && !f->more)
		return IPFRAG_NOT_FRAGMENT;
	return IPFRAG_NEED_MORE;
}

/*
 * IPv6 (RFC 8200): ver:4 tc:8 flow:20 | payload_len | next | hop_limit | src:16 | dst:16,
 * then the unfragmentable extension headers (hop-by-hop first if at all, routing,
 * destination options), each next | len (8-byte units past the first 8) | ..., then
 *
 *   fragment header (s4.5): next | reserved | offset:13 res:2 M:1 | id:32
 *
 * and the fragmentable part. Anything else before a fragment header (AH, ESP, an upper
 * layer) means the packet is not a fragment.
 */
static enum ipfrag_status
parse_ipv6(struct rd r, struct frag_in *f)
{
	struct rd whole = r, payload, src, dst;
	uint16_t plen, offm;
	uint32_t vtf;
	uint8_t next, hops, res;
	size_t pos = IP6_HDR_LEN;

	if (!rd_u32(&r, &vtf) || !rd_u16(&r, &plen) || !rd_u8(&r, &next) ||
	    !rd_u8(&r, &hops) || !rd_sub(&r, 16, &src) || !rd_sub(&r, 16, &dst))
		return IPFRAG_MALFORMED;
	/* plen 0 would be a jumbogram (RFC 2675), which no fragment can be */
	if (vtf >> 28 != 6 || plen == 0 || !rd_sub(&r, plen, &payload))
		return IPFRAG_MALFORMED;
	f->family = 6;
	memcpy(f->src, src.p, 16);
	memcpy(f->dst, dst.p, 16);
	f->nh_pos = 6;
	for (unsigned int n = 0; next != IP6_FRAGMENT; n++) {
		uint8_t ext_next, ext_len;

		if (n == IP6_EXT_MAX)
			return IPFRAG_MALFORMED;
		if (next != IP6_HOPOPTS && next != IP6_ROUTING && next != IP6_DSTOPTS)
			return IPFRAG_NOT_FRAGMENT;
		if (next == IP6_HOPOPTS && n > 0)	/* s4.3: only right after the header */
			return IPFRAG_MALFORMED;
		if (!rd_u8(&payload, &ext_next) || !rd_u8(&payload, &ext_len) ||
		    !rd_skip(&payload, (size_t)ext_len * 8 + 6))
			return IPFRAG_MALFORMED;
		f->nh_pos = (uint16_t)pos;
		pos += (size_t)ext_len * 8 + 8;
		next = ext_next;
	}
	if (pos > UINT16_MAX || !rd_u8(&payload, &f->proto) || !rd_u8(&payload, &res) ||
	    !rd_u16(&payload, &offm) || !rd_u32(&payload, &f->id))
		return IPFRAG_MALFORMED;
	f->keyed = true;
	if (!rd_sub(&whole, pos, &f->hdr))
		return IPFRAG_MALFORMED;
	f->data = payload;
	f->off = offm & 0xfff8u;
	f->more = (offm & 1) != 0;
	return IPFRAG_NEED_MORE;
}

/* Bytes the upper-layer header needs in a first fragment, or 0 if it is cut short. */
static bool
l4_whole(struct rd r, uint8_t proto)
{
	uint8_t doff;

	switch (proto) {
	case IP6_NONXT:
		return true;
	case IP6_TCP:	/* the whole header with its options: flags can't hide in a later one */
		return r.len >= 20 && rd_skip(&r, 12) && rd_u8(&r, &doff) && doff >> 4 >= 5 &&
		    r.len + 13 >= (size_t)(doff >> 4) * 4;
	default:
		return r.len >= L4_MIN;
	}
}

/*
 * RFC 7112: an IPv6 first fragment holds the whole header chain. Walks the fragmentable
 * part's extension headers (destination options, routing, AH) to the upper layer; a
 * second fragment header, or hop-by-hop out of place, is malformed.
 */
static bool
chain_whole(struct rd r, uint8_t next)
{
	for (unsigned int n = 0; n < IP6_EXT_MAX; n++) {
		uint8_t ext_next, ext_len;
		size_t hdr_len;

		switch (next) {
		case IP6_DSTOPTS:
		case IP6_ROUTING:
		case IP6_AH:
			break;
		case IP6_HOPOPTS:
		case IP6_FRAGMENT:
			return false;
		default:
			return l4_whole(r, next);
		}
		if (!rd_u8(&r, &ext_next) || !rd_u8(&r, &ext_len))
			return false;
		/* RFC 4302 s2.2: AH's length is in 4-byte units, minus 2 */
		hdr_len = next == IP6_AH ? ((size_t)ext_len + 2) * 4 : ((size_t)ext_len + 1) * 8;
		if (!rd_skip(&r, hdr_len - 2))
			return false;
		next = ext_next;
	}
	return false;
}

/* What a fragment must be on its own, before it touches any datagram. */
static enum ipfrag_status
frag_check(const struct frag_in *f)
{
	size_t end = (size_t)f->off + f->data.len;
	size_t hdr = f->off == 0 ? f->hdr.len : (f->family == 4 ? IP4_HDR_MIN : IP6_HDR_LEN);

	/* s4.5: every fragment but the last carries a multiple of 8 bytes, and some */
	if (f->more && (f->data.len == 0 || f->data.len % 8 != 0))
		return IPFRAG_MALFORMED;
	if (f->pre.len + f->hdr.len > IPFRAG_HDR_ROOM || hdr + end > IPFRAG_DATAGRAM_MAX)
		return IPFRAG_TOO_BIG;
	if (f->off == 0 &&
	    !(f->family == 4 ? l4_whole(f->data, f->proto) : chain_whole(f->data, f->proto)))
		return IPFRAG_MALFORMED;
	return IPFRAG_NEED_MORE;
}

static bool
slot_is(const struct ipfrag_slot *s, uint16_t owner, const struct frag_in *f)
{
	return s->state != SLOT_FREE && s->owner == owner && s->family == f->family &&
	    s->id == f->id && (f->family == 6 || s->proto == f->proto) &&
	    memcmp(s->src, f->src, 16) == 0 && memcmp(s->dst, f->dst, 16) == 0;
}

static struct ipfrag_slot *
slot_find(struct ipfrag_table *t, uint16_t owner, const struct frag_in *f)
{
	for (uint32_t i = 0; i < t->nb_slots; i++)
		if (slot_is(&t->slots[i], owner, f))
			return &t->slots[i];
	return NULL;
}

static void
slot_free(struct ipfrag_table *t, struct ipfrag_slot *s)
{
	s->state = SLOT_FREE;
	t->used--;
}

static void
slot_kill(struct ipfrag_slot *s, enum ipfrag_status why)
{
	s->state = SLOT_DEAD;
	s->why = (uint8_t)why;
	s->nb = 0;
}

static enum ipfrag_status
slot_new(struct ipfrag_table *t, uint16_t owner, const struct frag_in *f, uint64_t now,
    struct ipfrag_slot **out)
{
	struct ipfrag_slot *free_slot = NULL, *s;
	uint32_t mine = 0;

	for (uint32_t i = 0; i < t->nb_slots; i++) {
		s = &t->slots[i];
		if (s->state == SLOT_FREE) {
			if (free_slot == NULL)
				free_slot = s;
		} else if (s->owner == owner) {
			mine++;
		}
	}
	if (mine >= t->owner_max)
		return IPFRAG_OWNER_LIMIT;
	if ((s = free_slot) == NULL)
		return IPFRAG_TABLE_FULL;
	s->state = SLOT_LIVE;
	s->family = f->family;
	s->proto = f->family == 4 ? f->proto : 0;
	s->owner = owner;
	s->id = f->id;
	memcpy(s->src, f->src, 16);
	memcpy(s->dst, f->dst, 16);
	s->born = now;
	s->hdr_len = 0;
	s->pre_len = 0;
	s->nh_pos = 0;
	s->nb = 0;
	s->total = 0;
	s->held = 0;
	s->max_end = 0;
	s->last_seen = false;
	t->used++;
	*out = s;
	return IPFRAG_NEED_MORE;
}

/* Rewrite the header at h (hdr_len bytes, total bytes after it) as never fragmented. */
static void
unfragment(uint8_t *h, uint8_t family, uint16_t hdr_len, uint32_t total, uint16_t nh_pos,
    uint8_t next)
{
	if (family == 4) {
		wr16(h + 2, (uint16_t)(hdr_len + total));
		h[6] &= 0xc0;		/* keep the reserved bit and DF; MF and offset go */
		h[7] = 0;
		wr16(h + 10, 0);
		wr16(h + 10, ipfrag_csum(rd_make(h, hdr_len)));
	} else {
		wr16(h + 4, (uint16_t)(hdr_len - IP6_HDR_LEN + total));
		h[nh_pos] = next;
	}
}

/*
 * Place f in s. Everything is checked before anything is written; a status other than
 * NEED_MORE/COMPLETE means the caller kills s.
 */
static enum ipfrag_status
slot_put(struct ipfrag_slot *s, const struct frag_in *f)
{
	uint32_t end = f->off + (uint32_t)f->data.len;
	uint32_t max_end = end > s->max_end ? end : s->max_end;
	uint16_t hdr_len = f->off == 0 ? (uint16_t)f->hdr.len : s->hdr_len;

	for (uint32_t i = 0; i < s->nb; i++)
		if (f->off < s->ranges[i].end && s->ranges[i].start < end)
			return IPFRAG_OVERLAP;
	if (!f->more) {
		if (s->last_seen)	/* an identical empty one is a duplicate, hence overlap */
			return s->total == end ? IPFRAG_OVERLAP : IPFRAG_MALFORMED;
		if (end < s->max_end)
			return IPFRAG_MALFORMED;
	} else if (s->last_seen && end > s->total) {
		return IPFRAG_MALFORMED;
	}
	if (f->data.len > 0 && s->nb == IPFRAG_FRAGS_MAX)
		return IPFRAG_TOO_MANY;
	if (hdr_len > 0 && (size_t)hdr_len + max_end > IPFRAG_DATAGRAM_MAX)
		return IPFRAG_TOO_BIG;
	if (f->off == 0) {
		memcpy(s->buf + IPFRAG_HDR_ROOM - hdr_len, f->hdr.p, hdr_len);
		memcpy(s->buf + IPFRAG_HDR_ROOM - hdr_len - f->pre.len, f->pre.p, f->pre.len);
		s->hdr_len = hdr_len;
		s->pre_len = (uint16_t)f->pre.len;
		s->nh_pos = f->nh_pos;
		if (f->family == 6)
			s->proto = f->proto;
	}
	if (f->data.len > 0) {
		memcpy(s->buf + IPFRAG_HDR_ROOM + f->off, f->data.p, f->data.len);
		s->ranges[s->nb++] = (struct ipfrag_range){ .start = f->off, .end = end };
		s->held += (uint32_t)f->data.len;
	}
	if (!f->more) {
		s->last_seen = true;
		s->total = end;
	}
	s->max_end = max_end;
	if (s->last_seen && s->hdr_len > 0 && s->held == s->total)
		return IPFRAG_COMPLETE;
	return IPFRAG_NEED_MORE;
}

void
ipfrag_init(struct ipfrag_table *t, struct ipfrag_slot *slots, uint32_t nb_slots,
    uint32_t owner_max, uint64_t timeout)
{
	*t = (struct ipfrag_table){ .slots = slots, .nb_slots = nb_slots,
		.owner_max = owner_max, .timeout = timeout };
	for (uint32_t i = 0; i < nb_slots; i++)
		slots[i].state = SLOT_FREE;
}

/* An IPv6 atomic fragment (RFC 6946): complete on its own, in any free slot's buffer. */
static enum ipfrag_status
atomic(struct ipfrag_table *t, const struct frag_in *f, struct ipfrag_out *out)
{
	for (uint32_t i = 0; i < t->nb_slots; i++) {
		uint8_t *h;

		if (t->slots[i].state != SLOT_FREE)
			continue;
		h = t->slots[i].buf + IPFRAG_HDR_ROOM - f->hdr.len;
		memcpy(h - f->pre.len, f->pre.p, f->pre.len);
		memcpy(h, f->hdr.p, f->hdr.len);
		memcpy(h + f->hdr.len, f->data.p, f->data.len);
		unfragment(h, 6, (uint16_t)f->hdr.len, (uint32_t)f->data.len, f->nh_pos, f->proto);
		*out = (struct ipfrag_out){ .ip = h, .ip_len = f->hdr.len + f->data.len,
			.pre_len = (uint16_t)f->pre.len };
		return IPFRAG_COMPLETE;
	}
	return IPFRAG_TABLE_FULL;
}

enum ipfrag_status
ipfrag_add(struct ipfrag_table *t, const uint8_t *frame, size_t len, uint16_t pre_len,
    uint16_t owner, uint64_t now, struct ipfrag_out *out)
{
	struct rd r = rd_make(frame, len);
	struct ipfrag_slot *s = NULL;
	struct frag_in f = { 0 };
	enum ipfrag_status st;
	uint8_t v;

	if (pre_len > IPFRAG_PRE_MAX || !rd_sub(&r, pre_len, &f.pre) || r.len == 0)
		return IPFRAG_MALFORMED;
	v = r.p[0] >> 4;
	st = v == 4 ? parse_ipv4(r, &f) : v == 6 ? parse_ipv6(r, &f) : IPFRAG_MALFORMED;
	if (st == IPFRAG_NEED_MORE)
		st = frag_check(&f);
	if (st != IPFRAG_NEED_MORE) {
		if (st != IPFRAG_NOT_FRAGMENT && f.keyed && (s = slot_find(t, owner, &f)) != NULL &&
		    s->state == SLOT_LIVE)
			slot_kill(s, st);
		return st;
	}
	if (f.off == 0 && !f.more)	/* IPv6 only: IPv4 said NOT_FRAGMENT */
		return atomic(t, &f, out);
	if ((s = slot_find(t, owner, &f)) != NULL) {
		if (s->state == SLOT_DEAD)
			return (enum ipfrag_status)s->why;
	} else if ((st = slot_new(t, owner, &f, now, &s)) != IPFRAG_NEED_MORE) {
		return st;
	}
	st = slot_put(s, &f);
	if (st == IPFRAG_COMPLETE) {
		uint8_t *h = s->buf + IPFRAG_HDR_ROOM - s->hdr_len;

		unfragment(h, s->family, s->hdr_len, s->total, s->nh_pos, s->proto);
		*out = (struct ipfrag_out){ .ip = h, .ip_len = (size_t)s->hdr_len + s->total,
			.pre_len = s->pre_len };
		slot_free(t, s);
	} else if (st != IPFRAG_NEED_MORE) {
		slot_kill(s, st);
	}
	return st;
}

uint32_t
ipfrag_age(struct ipfrag_table *t, uint64_t now, uint32_t budget, ipfrag_expired_fn *fn,
    void *arg)
{
	uint32_t freed = 0;

	if (t->nb_slots == 0)
		return 0;
	if (budget > t->nb_slots)
		budget = t->nb_slots;
	for (; budget > 0 && t->used > 0; budget--) {
		struct ipfrag_slot *s = &t->slots[t->cursor];

		t->cursor = t->cursor + 1 == t->nb_slots ? 0 : t->cursor + 1;
		if (s->state == SLOT_FREE || now < s->born || now - s->born < t->timeout)
			continue;
		if (s->state == SLOT_LIVE) {
			freed++;
			if (fn != NULL)
				fn(arg, s->owner, s->nb);
		}
		slot_free(t, s);
	}
	return freed;
}

uint32_t
ipfrag_owner_count(const struct ipfrag_table *t, uint16_t owner)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < t->nb_slots; i++)
		if (t->slots[i].state != SLOT_FREE && t->slots[i].owner == owner)
			n++;
	return n;
}

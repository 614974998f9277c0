/*
 * Internals of the DNS reader shared by dns_msg.c and the answer editor (dns_edit*.c): the
 * name rules of dns.h in one place, so the editor reads names exactly as the parser does.
 * Not for other callers.
 */
#ifndef SNI_DNS_INT_H
#define SNI_DNS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sni/ascii8.h"
#include "sni/copy8.h"
#include "sni/dns.h"
#include "sni/rd.h"

/* RFC 2181 s8: a TTL with the most significant bit set is to be treated as zero. */
#define DNS_TTL_MSB	0x80000000u
#define DNS_PTR_REACH	0x4000	/* a compression pointer holds 14 bits of offset */

static inline uint8_t
dns_lower(uint8_t c)
{
	/* ASCII only: bytes >= 0x80 are not letters in DNS (RFC 4343 s3). */
	return c >= 'A' && c <= 'Z' ? (uint8_t)(c + ('a' - 'A')) : c;
}

/* ascii_upper8() of the 8 bytes at p. */
static inline uint64_t
dns_upper8(const uint8_t *p)
{
	uint64_t w;

	memcpy(&w, p, 8);
	return ascii_upper8(w);
}

static inline size_t
dns_off(const uint8_t *msg, const struct rd *r)
{
	return (size_t)(r->p - msg);
}

/*
 * dns_msg_parse() without its short way for the usual response (dns_fast.h): every
 * record read by the full reader. For the tests, which hold the two to one result.
 */
enum dns_status dns_msg_parse_full(const uint8_t *buf, size_t len, struct dns_msg *out);

/*
 * Read the name at *r, which sits inside msg, and advance *r past the part
 * stored in place: the labels up to the root label or the first compression pointer.
 *
 *   name  = { u8 len (1..63) | len bytes }* ( u8 0 | u16 0b11 << 14 | offset )
 *
 * A pointer may only go to an offset strictly before the start of the label sequence being
 * read, and not into the header: every jump is then strictly backwards, so a name cannot
 * loop, and DNS_PTR_HOPS_MAX bounds the work a hostile message can ask for (Unbound
 * pkt_dname_len, Knot knot_dname_wire_check). The labels found there must also end before
 * that sequence, as an earlier name always does: a name then never reads bytes past its
 * own in-place part, so what follows a message (trailing bytes, the next TCP message)
 * cannot change how it reads. Label types 0b01 and 0b10 are refused: RFC 1035 s4.1.4
 * reserves them and RFC 6891 s5 retired the extended labels that used 0b01. The
 * uncompressed length, root label included, may not exceed 255 (RFC 1035 s3.1).
 *
 * *wire_len gets the uncompressed length, *hops the pointers followed.
 */
static inline __attribute__((always_inline)) enum dns_status
dns_name_read_hops(const uint8_t *msg, struct rd *r, size_t *wire_len, unsigned int *hops)
{
	struct rd cur = *r;
	size_t seq_start = dns_off(msg, r);
	size_t wire = 0;
	unsigned int n = 0;
	bool jumped = false;
	uint8_t b, lo;

	for (;;) {
		if (!rd_u8(&cur, &b))
			return DNS_MALFORMED;
		if ((b & 0xc0) == 0xc0) {
			size_t target;

			if (!rd_u8(&cur, &lo) || ++n > DNS_PTR_HOPS_MAX)
				return DNS_MALFORMED;
			target = (size_t)(b & 0x3f) << 8 | lo;
			if (target >= seq_start || target < DNS_HDR_LEN)
				return DNS_MALFORMED;
			if (!jumped) {
				*r = cur;
				jumped = true;
			}
			cur = rd_make(msg + target, seq_start - target);
			seq_start = target;
			continue;
		}
		if ((b & 0xc0) != 0)
			return DNS_MALFORMED;
		if ((wire += 1 + (size_t)b) > DNS_NAME_WIRE_MAX || !rd_skip(&cur, b))
			return DNS_MALFORMED;
		if (b == 0)
			break;
	}
	if (!jumped)
		*r = cur;
	*wire_len = wire;
	*hops = n;
	return DNS_OK;
}

static inline enum dns_status
dns_name_read(const uint8_t *msg, struct rd *r, size_t *wire_len)
{
	unsigned int hops;

	return dns_name_read_hops(msg, r, wire_len, &hops);
}

/*
 * Walks the labels of a name already checked by dns_name_read. The checks are repeated
 * (pointers backwards, hop limit, bounds) so that a wrong offset can cost a false "not
 * equal" but never an out-of-bounds read or a loop.
 */
struct dns_name_it {
	const uint8_t *msg;
	struct rd cur;
	size_t seq_start;
	unsigned int hops;
};

static inline void
dns_name_it_init(struct dns_name_it *it, const uint8_t *msg, size_t msg_len, size_t off)
{
	it->msg = msg;
	it->cur = rd_make(msg + off, off <= msg_len ? msg_len - off : 0);
	it->seq_start = off;
	it->hops = 0;
}

/* Follow pointers until it->cur sits on a label length byte. */
static inline bool
dns_name_it_settle(struct dns_name_it *it)
{
	while (it->cur.len > 0 && (it->cur.p[0] & 0xc0) == 0xc0) {
		size_t target;

		if (it->cur.len < 2 || ++it->hops > DNS_PTR_HOPS_MAX)
			return false;
		target = (size_t)(it->cur.p[0] & 0x3f) << 8 | it->cur.p[1];
		if (target >= it->seq_start)
			return false;
		it->cur = rd_make(it->msg + target, it->seq_start - target);
		it->seq_start = target;
	}
	return it->cur.len > 0 && (it->cur.p[0] & 0xc0) == 0 &&
	    it->cur.len > (size_t)it->cur.p[0];
}

/*
 * Are the names at offsets a and b of msg equal, ignoring ASCII case (RFC 4343)? Both are
 * walked in place. Once both walks stand on the same byte the remaining labels are the
 * same bytes, which settles the common case (an owner compressed to the question name)
 * at the first label.
 */
static inline bool
dns_name_eq(const uint8_t *msg, size_t msg_len, size_t a, size_t b)
{
	struct dns_name_it ia, ib;
	uint8_t n;

	dns_name_it_init(&ia, msg, msg_len, a);
	dns_name_it_init(&ib, msg, msg_len, b);
	for (;;) {
		if (!dns_name_it_settle(&ia) || !dns_name_it_settle(&ib))
			return false;
		if (ia.cur.p == ib.cur.p)
			return true;
		if ((n = ia.cur.p[0]) != ib.cur.p[0])
			return false;
		if (n == 0)
			return true;
		for (size_t i = 1; i <= n; i++) {
			if (dns_lower(ia.cur.p[i]) != dns_lower(ib.cur.p[i]))
				return false;
		}
		/* settle() checked that the label fits. */
		rd_skip(&ia.cur, 1 + (size_t)n);
		rd_skip(&ib.cur, 1 + (size_t)n);
	}
}

/*
 * The offset a name at off of msg (len bytes) points to at once, when it is nothing but a
 * pointer (the usual owner of an answer: 0xc00c), else 0 (no name starts in the header).
 * A chain's names are pairwise unequal (a name already on it ends it), so one that is
 * the target of such a pointer is the only link equal to it: no name walk is needed.
 */
static inline size_t
dns_name_ptr_at(const uint8_t *msg, size_t len, size_t off)
{
	if (off + 1 >= len || (msg[off] & 0xc0) != 0xc0)
		return 0;
	return (size_t)(msg[off] & 0x3f) << 8 | msg[off + 1];
}

/*
 * The in-place labels of the name at off of msg, marked in labels (a bit per offset below
 * DNS_PTR_REACH): where the answer editor writes a label it can point at again. False when
 * the name ends in a pointer to an offset not marked, no label an earlier name wrote out,
 * which the editor writes out in full. The name was read by dns_name_read() already (its
 * in-place part lies inside the message), and the message is shorter than DNS_PTR_REACH.
 */
static inline bool
dns_name_mark(uint64_t *labels, const uint8_t *msg, size_t off)
{
	for (;;) {
		uint8_t b = msg[off];
		size_t t;

		if ((b & 0xc0) == 0xc0) {
			t = (size_t)(b & 0x3f) << 8 | msg[off + 1];
			return (labels[t / 64] >> (t % 64) & 1) != 0;
		}
		labels[off / 64] |= 1ull << (off % 64);
		if (b == 0)
			return true;
		off += 1 + (size_t)b;
	}
}

/*
 * An SOA's RDATA (RFC 1035 s3.3.13) as the editor's scan reads it (dns_edit_shape()):
 * empty, or MNAME and RNAME, each marked in labels as the editor would write it
 * (dns_name_mark()), then exactly five u32. False for one the scan would find malformed or
 * write anew: the scan then decides. The SOA of a negative answer (NXDOMAIN, NODATA) is
 * then no reason to scan it.
 */
static inline bool
dns_soa_mark(uint64_t *labels, const uint8_t *msg, struct rd r)
{
	size_t at, wire_len;

	if (r.len == 0)
		return true;
	for (int i = 0; i < 2; i++) {
		at = dns_off(msg, &r);
		if (dns_name_read(msg, &r, &wire_len) != DNS_OK ||
		    !dns_name_mark(labels, msg, at))
			return false;
	}
	return r.len == 20;
}

/*
 * A record's type, class, TTL and RDATA: the ten fixed bytes bounds-checked at once, then
 * the RDATA against what follows them.
 */
static inline bool
dns_rr_fixed(struct rd *r, uint16_t *type, uint16_t *class, uint32_t *ttl, struct rd *rdata)
{
	size_t n;

	if (r->len < 10 || r->len - 10 < (n = rd_be16(r->p + 8)))
		return false;
	*type = rd_be16(r->p);
	*class = rd_be16(r->p + 2);
	*ttl = rd_be32(r->p + 4);
	*rdata = rd_make(r->p + 10, n);
	r->p += 10 + n;
	r->len -= 10 + n;
	return true;
}

static inline uint32_t
dns_ttl(uint32_t wire)
{
	return (wire & DNS_TTL_MSB) != 0 ? 0 : wire;
}

static inline uint32_t
dns_min(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

#endif

/*
 * Internals of the DNS answer editor, shared by dns_edit.c (the passes over records),
 * dns_edit_pad.c (the padding of DNS_EDIT_SAME_LEN), dns_edit_svcb.c (HTTPS/SVCB RDATA) and dns_edit_write.c (the writer both use:
 * bytes, names, offered addresses), with dns_edit_scan.c (the first pass: the check, the
 * chain, and whether the message can change). Calls run one way: dns_edit.c ->
 * dns_edit_pad.c, dns_edit.c -> dns_edit_scan.c -> dns_edit_svcb.c -> dns_edit_write.c. Not for other callers.
 */
#ifndef SNI_DNS_EDIT_INT_H
#define SNI_DNS_EDIT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sni/dns.h"
#include "sni/dns_edit.h"
#include "sni/rd.h"
#include "dns_int.h"

#define DNS_SVC_MANDATORY	0	/* RFC 9460 s8 */

/* A name on the CNAME chain (offset in the old message) and the least TTL to it. */
struct dns_edit_link {
	size_t name;
	uint32_t ttl;
};

/*
 * One edit. The old message o[0 .. olen) is a copy in the caller's scratch; the new one is
 * written into msg (w, up to cap bytes) from the start. map[k], for an old offset k below
 * map_len, is the offset in the new message where the label that sat at k was written, so
 * that the name which read on from k in the old message reads on from there in the new;
 * 0 when none was (no name is written into the header).
 */
struct dns_edit {
	const uint8_t *o;
	size_t olen;
	uint8_t *w;
	size_t wlen, cap;
	uint16_t *map;
	size_t map_len;
	const struct dns_edit_link *chain;	/* the scan's, which lasts the edit */
	unsigned int nb_chain;
	unsigned int flags;
	dns_keep_fn keep;
	void *arg;
	struct dns_edit_stats *st;
	bool full;			/* a write did not fit cap */
	bool bad;			/* a name did not read as the check pass found it */
};

/* A resource record of the old message, as offsets into it. */
struct dns_edit_rr {
	size_t owner;		/* the owner name */
	size_t fixed;		/* type | class | ttl | rdlength: 10 bytes */
	size_t rdata;
	uint16_t type, class, rdlen;
	uint32_t ttl;		/* as on the wire */
};

/* The shape of an RDATA that may hold compressed names (dns_edit_scan.c's table). */
struct dns_edit_shape {
	uint16_t type;
	uint8_t pre, strs, names;
	int8_t post;
};

/* An address the editor offers: an A/AAAA record, and the least TTL on its path. */
struct dns_edit_addr {
	size_t owner, rdata;
	uint32_t ttl;
	uint8_t family;
};

/* What the first pass found (dns_edit_scan()). */
struct dns_edit_scan {
	struct dns_edit_link chain[DNS_CHAIN_MAX + 1];
	unsigned int nb_chain;
	bool too_many;			/* more CNAMEs than the chain can be followed through */
	bool same;			/* only keep() can change the message */
	unsigned int nb_addrs;		/* while same: the addresses to offer, in order */
	struct dns_edit_addr addrs[DNS_ANSWERS_MAX];
	uint64_t labels[DNS_PTR_REACH / 64];	/* offsets the editor would map */
};

static inline uint16_t
dns_edit_rd16(const uint8_t *b)
{
	return (uint16_t)(b[0] << 8 | b[1]);
}

static inline void
dns_edit_wr16(uint8_t *b, size_t v)
{
	b[0] = (uint8_t)(v >> 8);
	b[1] = (uint8_t)v;
}

/* Where the EDNS OPT record went in the new message, for the padding. */
struct dns_edit_opt {
	bool found;
	size_t rdlen_at;	/* its RDLENGTH */
	size_t end;		/* just past its RDATA */
	unsigned int after;	/* records written after it */
};

/* dns_edit_pad.c */

/*
 * DNS_EDIT_SAME_LEN: pad the new message (e->wlen bytes, opt where its OPT record went)
 * back to len bytes; DNS_EDIT_NO_ROOM when it cannot be.
 */
enum dns_edit_status dns_edit_pad(struct dns_edit *e, const struct dns_edit_opt *opt,
    size_t len);

/* dns_edit_write.c */

/* Append n bytes; false (and e->full) when they do not fit cap. */
bool dns_edit_put(struct dns_edit *e, const void *p, size_t n);

/* Append the name at old offset off, compressed against what is written already. */
bool dns_edit_name(struct dns_edit *e, size_t off);

/* Offer an address to keep(); counts the answer in e->st. */
bool dns_edit_offer(struct dns_edit *e, uint8_t family, const uint8_t *addr, uint32_t ttl);
/*
 * dns_edit_offer() of an address as the parser gives it (its unused bytes zero). Inline:
 * every address of every answer passes here.
 */
static inline bool
dns_edit_offer_addr(struct dns_edit *e, const struct dns_addr *a)
{
	if (e->keep != NULL && e->keep(e->arg, a)) {
		e->st->addrs_kept++;
		return true;
	}
	e->st->addrs_removed++;
	return false;
}

/* dns_edit_scan.c */

/* The shape of type's RDATA when it may hold compressed names, else NULL. */
const struct dns_edit_shape *dns_edit_shape(uint16_t type);

/* Read the record at *r (inside o) and step past it; false when it does not read. */
bool dns_edit_rr_read(const uint8_t *o, struct rd *r, struct dns_edit_rr *rr);

/* Index of the link of chain (n links) whose name equals the name at off of o, or -1. */
int dns_edit_chain_find(const uint8_t *o, size_t olen, const struct dns_edit_link *chain,
    unsigned int n, size_t off);

/*
 * The first pass over o (olen bytes, m its dns_msg_parse()): false when a record does not
 * check (DNS_EDIT_MALFORMED); else the chain, unless s->too_many (DNS_EDIT_NO_ROOM), and
 * s->same: nothing but keep() saying no to one of s->addrs could change the message, and
 * the edit is the message's first m->msg_len bytes as they are.
 */
bool dns_edit_scan(const uint8_t *o, size_t olen, const struct dns_msg *m, unsigned int flags,
    struct dns_edit_scan *s);

/* dns_edit_svcb.c */

/*
 * SVCB/HTTPS RDATA (p, len bytes, inside a message): true when it is well formed as RFC
 * 9460 s2.2 and s7 say (see dns_edit_svcb.c).
 */
bool dns_edit_svcb_check(const uint8_t *p, size_t len);

/*
 * rr's RDATA (already checked) in the scan s while s->same holds (see dns_edit_svcb.c):
 * s->same false when it would change whatever keep() says, else its hints listed in
 * s->addrs. flags: dns_edit()'s; answer: rr is in the answer section.
 */
void dns_edit_svcb_scan(struct dns_edit_scan *s, const uint8_t *o, const struct dns_edit_rr *rr,
    unsigned int flags, bool answer);

/*
 * Write rr's RDATA (already checked) edited: hints offered when chain_ttl is not NULL (rr
 * is in the answer, of class IN and owned by a chain name; *chain_ttl is that name's TTL),
 * ech removed when asked. False when out of room.
 */
bool dns_edit_svcb_write(struct dns_edit *e, const struct dns_edit_rr *rr,
    const uint32_t *chain_ttl);

#endif

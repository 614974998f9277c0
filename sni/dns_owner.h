/*
 * The owner names of a response's records, as dns_msg.c reads them: most are a lone
 * pointer to a name read before (the question's, a CNAME's target), which reads the same
 * through the pointer as it did where it stands, so it is not walked again. Internal to
 * dns_msg.c.
 *
 * Why the same: a name that read in place from off, its in-place part ending at end,
 * with hops pointers followed, is what dns_name_read_hops() finds from a pointer to off in
 * any record at or past end. The pointer goes back (off < end), the walk from off has the
 * room it had (its labels end at end, before the record's sequence), meets the same bytes
 * and pointers past them, and follows one hop more. A name of the question has no pointer
 * (one could only go back into the header), so each of its labels starts such a name.
 */
#ifndef SNI_DNS_OWNER_H
#define SNI_DNS_OWNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sni/dns.h"
#include "sni/rd.h"
#include "dns_int.h"

#define DNS_KNOWN_MAX	4	/* names remembered: the last ones read */

/* A name read from off, in place up to end, len bytes uncompressed, through hops pointers. */
struct dns_known {
	uint16_t off, end;
	uint8_t len, hops;
};

struct dns_owners {
	uint8_t qname_len;	/* the lone question's, else 0 */
	uint16_t q_end;		/* where its name ends when labels marks its labels, else 0 */
	const uint64_t *labels;
	uint16_t memo;		/* the last lone pointer an owner was, 0: none yet */
	uint8_t memo_len;
	unsigned int n;		/* names remembered, k[n % DNS_KNOWN_MAX] the next place */
	struct dns_known k[DNS_KNOWN_MAX];
};

enum dns_owner_how {
	DNS_OWNER_BAD,		/* malformed */
	DNS_OWNER_READ,		/* read (walked, or through a pointer to a name known) */
	DNS_OWNER_SEEN,		/* the question's pointer, or the last lone pointer again */
};

/* A name read from off that the parser remembers (off past the pointers' reach: not). */
static inline void
dns_owners_learn(struct dns_owners *o, size_t off, size_t end, size_t len, unsigned int hops)
{
	if (off >= DNS_PTR_REACH || end >= DNS_PTR_REACH || hops >= DNS_PTR_HOPS_MAX)
		return;
	o->k[o->n++ % DNS_KNOWN_MAX] = (struct dns_known){ (uint16_t)off, (uint16_t)end,
		(uint8_t)len, (uint8_t)hops };
}

/* The length of the name a pointer to t in a record at seq gives, when known; else 0. */
static inline size_t
dns_owners_known(const struct dns_owners *o, size_t t, size_t seq)
{
	unsigned int n = o->n < DNS_KNOWN_MAX ? o->n : DNS_KNOWN_MAX;

	if (t >= DNS_HDR_LEN && t < o->q_end && (o->labels[t / 64] >> (t % 64) & 1) != 0)
		return (size_t)o->qname_len - (t - DNS_HDR_LEN);
	for (unsigned int i = 0; i < n; i++)
		if (o->k[i].off == t && o->k[i].end <= seq)
			return o->k[i].len;
	return 0;
}

/* The owner at *r (at offset at of msg): read, or seen before; *len its length. */
static inline enum dns_owner_how
dns_owner_read(const uint8_t *msg, struct rd *r, struct dns_owners *o, size_t *len)
{
	size_t at = dns_off(msg, r);
	unsigned int hops;
	uint16_t ptr;

	if (r->len >= 2 && (r->p[0] & 0xc0) == 0xc0) {
		ptr = rd_be16(r->p);
		if (ptr == (0xc000 | DNS_HDR_LEN) && o->qname_len != 0) {
			*len = o->qname_len;
			return rd_skip(r, 2) ? DNS_OWNER_SEEN : DNS_OWNER_BAD;
		}
		if (ptr == o->memo) {
			*len = o->memo_len;
			return rd_skip(r, 2) ? DNS_OWNER_SEEN : DNS_OWNER_BAD;
		}
		if ((*len = dns_owners_known(o, ptr & 0x3fff, at)) == 0) {
			if (dns_name_read_hops(msg, r, len, &hops) != DNS_OK)
				return DNS_OWNER_BAD;
		} else if (!rd_skip(r, 2)) {
			return DNS_OWNER_BAD;
		}
		o->memo = ptr;
		o->memo_len = (uint8_t)*len;
		return DNS_OWNER_READ;
	}
	if (dns_name_read_hops(msg, r, len, &hops) != DNS_OK)
		return DNS_OWNER_BAD;
	dns_owners_learn(o, at, dns_off(msg, r), *len, hops);
	return DNS_OWNER_READ;
}

#endif

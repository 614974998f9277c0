/*
 * A VM's query read for the fast path (dp_dns_qread.c says how), inline: the datagram's
 * path (dp_dns.c) reads every query through it, and pays no call for it.
 */
#ifndef DP_DNS_QREAD_H
#define DP_DNS_QREAD_H

#include <string.h>

#include "sni/copy8.h"
#include "sni/dns.h"
#include "sni/rd.h"

#define DP_LABEL_MAX	63	/* a larger length byte is a pointer or reserved: not read here */
#define DP_OPT_FIXED	11	/* a root owner, type, class, TTL, RDLENGTH */

/*
 * The name at DNS_HDR_LEN of msg (len bytes) when it is written out in place, labels of at
 * most DP_LABEL_MAX bytes to the root, DNS_NAME_WIRE_MAX bytes at most: its length, else 0.
 */
static inline size_t
dp_dns_qname_len(const uint8_t *msg, size_t len)
{
	/* a length byte stands before lim, or the name is cut or too long: one test a label */
	size_t off = DNS_HDR_LEN, lim = len < DNS_HDR_LEN + DNS_NAME_WIRE_MAX ? len :
	    DNS_HDR_LEN + DNS_NAME_WIRE_MAX;

	for (;;) {
		uint8_t b;

		if (off >= lim || (b = msg[off]) > DP_LABEL_MAX)
			return 0;
		off += 1 + (size_t)b;
		if (b == 0)
			return off - DNS_HDR_LEN;
	}
}

/*
 * The OPT record at off (msg len bytes) with a root owner, whole: the offset past it, or
 * 0 for any other record, which dns_msg_parse() reads.
 */
static inline size_t
dp_dns_opt_end(const uint8_t *msg, size_t len, size_t off, struct dns_msg *q)
{
	size_t rdlen;

	if (len - off < DP_OPT_FIXED || msg[off] != 0 || rd_be16(msg + off + 1) != DNS_TYPE_OPT)
		return 0;
	rdlen = rd_be16(msg + off + 9);
	if (len - off - DP_OPT_FIXED < rdlen)
		return 0;
	q->edns = true;
	q->edns_udp_size = rd_be16(msg + off + 3);
	return off + DP_OPT_FIXED + rdlen;
}

/* The query shape dp_dns_qread.c's head tells of read into q, or false (q then unspecified). */
static inline bool
dp_dns_query_plain(const uint8_t *msg, size_t len, struct dns_msg *q, bool *upper)
{
	size_t name_len, off;

	if (len < DNS_HDR_LEN || (msg[2] & 0x80) != 0 || rd_be16(msg + 4) != 1 ||
	    rd_be16(msg + 6) != 0 || rd_be16(msg + 8) != 0 || rd_be16(msg + 10) > 1 ||
	    (name_len = dp_dns_qname_len(msg, len)) == 0 ||
	    len - DNS_HDR_LEN - name_len < 4)
		return false;
	off = DNS_HDR_LEN + name_len + 4;
	q->edns = false;
	q->edns_udp_size = 0;
	q->question_end = off;
	if (msg[11] == 1 && (off = dp_dns_opt_end(msg, len, off, q)) == 0)
		return false;
	q->msg_len = off;
	q->id = rd_be16(msg);
	q->flags = rd_be16(msg + 2);
	q->qr = false;
	q->opcode = (uint8_t)(q->flags >> 11 & 0xf);
	q->rcode = (uint8_t)(q->flags & 0xf);
	q->qdcount = 1;
	q->ancount = q->nscount = 0;
	q->arcount = msg[11];
	q->has_question = true;
	q->qname_len = (uint8_t)name_len;
	*upper = copy16_lower(q->qname, msg + DNS_HDR_LEN, name_len);
	q->qtype = rd_be16(msg + DNS_HDR_LEN + name_len);
	q->qclass = rd_be16(msg + DNS_HDR_LEN + name_len + 2);
	q->nb_addrs = 0;
	q->addrs_more = false;
	q->chain_len = 0;
	q->an_owners_inline = 0;
	q->plain = false;
	return true;
}

/* dp_dns_query_read(), inline. */
static inline __attribute__((always_inline)) enum dns_status
dp_dns_query_read_in(const uint8_t *msg, size_t len, struct dns_msg *q, bool *upper)
{
	if (dp_dns_query_plain(msg, len, q, upper))
		return DNS_OK;
	*upper = true;	/* not known: the caps are found from the message */
	return dns_msg_parse(msg, len, q);
}

#endif

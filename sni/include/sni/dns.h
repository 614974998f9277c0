/*
 * DNS message reader (RFC 1035): header, the question, and the A/AAAA addresses on the
 * CNAME chain that starts at the question name. Also DNS-over-TCP framing. No allocation.
 */
#ifndef SNI_DNS_H
#define SNI_DNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sni/rd.h"

enum dns_status {
	DNS_OK,
	DNS_NEED_MORE,		/* TCP framing only: the message has not all arrived */
	DNS_MALFORMED,
};

#define DNS_HDR_LEN		12
#define DNS_NAME_WIRE_MAX	255	/* RFC 1035 s3.1, wire form with the root label */
#define DNS_NAME_TEXT_MAX	1024	/* presentation form, every byte escaped as \DDD */
#define DNS_LABEL_MAX		63
#define DNS_PTR_HOPS_MAX	64	/* compression pointers followed per name */
#define DNS_ADDRS_MAX		32	/* addresses returned per response */
#define DNS_CHAIN_MAX		16	/* CNAMEs followed from the question name */
#define DNS_ANSWERS_MAX		64	/* answer records examined per response */

#define DNS_TYPE_A	1
#define DNS_TYPE_CNAME	5
#define DNS_TYPE_SOA	6
#define DNS_TYPE_AAAA	28
#define DNS_TYPE_OPT	41
#define DNS_CLASS_IN	1

#define DNS_RCODE_NOERROR	0
#define DNS_RCODE_SERVFAIL	2
#define DNS_RCODE_NXDOMAIN	3
#define DNS_RCODE_REFUSED	5

struct dns_addr {
	uint8_t family;		/* 4 or 6 */
	uint8_t addr[16];	/* network order; the first 4 bytes for IPv4 */
	uint32_t ttl;		/* least TTL on the path from the question name, seconds */
};

struct dns_msg {
	uint16_t id;
	uint16_t flags;		/* the header's second 16-bit word, as on the wire */
	bool qr;
	uint8_t opcode;
	uint8_t rcode;		/* the header's 4 bits; EDNS extended bits are not merged */
	uint16_t qdcount, ancount, nscount, arcount;

	/* The question, when qdcount == 1; has_question is false otherwise. */
	bool has_question;
	uint8_t qname[DNS_NAME_WIRE_MAX];	/* uncompressed wire form, lower-cased */
	uint8_t qname_len;			/* bytes in qname, root label included */
	bool qname_upper;			/* it held a capital as it came */
	uint16_t qtype, qclass;
	size_t question_end;			/* offset just past the question */

	bool edns;			/* an OPT record in the additional section (RFC 6891) */
	uint16_t edns_udp_size;

	/* Responses: A/AAAA records on the CNAME chain from qname, in answer order. */
	struct dns_addr addrs[DNS_ADDRS_MAX];
	uint8_t nb_addrs;
	bool addrs_more;		/* the chain held more than DNS_ADDRS_MAX addresses */
	uint8_t chain_len;		/* CNAMEs followed */
	/*
	 * Answers whose owner does not begin with a compression pointer: only such an owner
	 * can copy the question name out in full, as the spelling looks for (dns_case.c).
	 */
	uint16_t an_owners_inline;

	/*
	 * A response the answer editor (sni/dns_edit.h) would write anew byte for byte, unless
	 * an address goes: shorter than a compression pointer reaches, at most
	 * DNS_ANSWERS_MAX answers, every record an A, AAAA, CNAME, SOA or OPT, every name pointing
	 * only at a label an earlier name wrote out, and every A/AAAA in the answer, of class
	 * IN and on the chain (addrs lists them all). Found as the records are read.
	 */
	bool plain;

	size_t msg_len;			/* bytes the four sections took; len - msg_len is trailing data */
};

/*
 * Parse one DNS message (a UDP payload or one TCP-framed message). Compression pointers
 * go backwards only: past the header, before the label sequence that holds the pointer,
 * to labels that also end before it; at most DNS_PTR_HOPS_MAX per name. Labels are at
 * most 63 bytes and names 255. Every record of every section is walked and its
 * RDLENGTH checked against the message; A must be 4 bytes and AAAA 16.
 *
 * Returns DNS_OK and fills *out, or DNS_MALFORMED (*out unspecified).
 */
enum dns_status dns_msg_parse(const uint8_t *buf, size_t len, struct dns_msg *out);

/*
 * DNS over TCP (RFC 1035 s4.2.2, RFC 7766): split the next 2-byte-length-prefixed message
 * off *stream into *msg. DNS_NEED_MORE leaves *stream as it was; a length below
 * DNS_HDR_LEN is DNS_MALFORMED.
 */
enum dns_status dns_tcp_next(struct rd *stream, struct rd *msg);

/*
 * Write name (uncompressed wire form, wire_len bytes) in presentation form as ldns prints
 * it: labels joined by '.', no trailing dot, the root as "."; inside a label '.', ';',
 * '(', ')' and '\' as "\.", "\;", "\(", "\)", "\\", bytes outside printable ASCII
 * (<= 0x20, >= 0x7f) as \DDD, every other byte as itself. Returns the text length, or
 * -1 when out (outlen bytes, NUL included) is too small or name is bad.
 */
int dns_name_to_text(const uint8_t *name, size_t wire_len, char *out, size_t outlen);

/*
 * The letter case of a name (wire form, len bytes, at most DNS_NAME_WIRE_MAX): a bit per
 * byte, set where the byte is an upper-case ASCII letter (RFC 4343: no other byte has a
 * case). DNS_CASE_BYTES of caps are written.
 */
#define DNS_CASE_BYTES		((DNS_NAME_WIRE_MAX + 7) / 8)
void dns_name_caps(const uint8_t *name, size_t len, uint8_t caps[DNS_CASE_BYTES]);

/*
 * Spell name (wire form, len bytes) as caps records: each ASCII letter upper case where
 * its bit is set, lower case elsewhere; every other byte stays. All-zero caps lower-case
 * the name. The length never changes, so compression pointers into it stay right.
 */
void dns_name_spell(uint8_t *name, size_t len, const uint8_t caps[DNS_CASE_BYTES]);

/*
 * Spell the question name of msg (len bytes; the name uncompressed at DNS_HDR_LEN,
 * qname_len bytes, then type and class) as caps records, and with it the owner of every
 * answer record that is the question name written out in full; an owner that points at
 * the question name needs nothing, the pointer reads the new bytes. Lengths never change.
 * Stops, leaving the rest, at the first record that does not fit len.
 */
void dns_msg_spell(uint8_t *msg, size_t len, size_t qname_len,
    const uint8_t caps[DNS_CASE_BYTES]);

/* Does name (len bytes) hold an upper-case ASCII letter? */
bool dns_name_has_upper(const uint8_t *name, size_t len);

/*
 * The offsets in msg of the names dns_msg_spell() would spell: the question's first, then
 * the answer owners that copy it in full. At most max are written to at; max + 1 is
 * returned when there are more.
 */
size_t dns_msg_spell_names(const uint8_t *msg, size_t len, size_t qname_len, size_t *at,
    size_t max);

/* "NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED", ..., or NULL. */
const char *dns_rcode_str(uint8_t rcode);

/* "A", "NS", "CNAME", "SOA", "PTR", "MX", "TXT", "AAAA", "SRV", "OPT", "HTTPS", ... or NULL. */
const char *dns_type_str(uint16_t qtype);

/* "ok", "need_more", "malformed". */
const char *dns_status_str(enum dns_status st);

#endif

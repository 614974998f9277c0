/*
 * libFuzzer target for dns_msg_parse and dns_tcp_next. The input is parsed as one message
 * and, again, as a DNS-over-TCP stream of messages. Each accepted message is checked
 * against invariants, parsed twice (the result must not change), cut to its msg_len (the
 * same) and one byte shorter (malformed), and its address set is compared with a small
 * reference that decompresses every name and follows the chain by plain memcmp, so the
 * in-place name comparison is checked against the obvious one. The full reader alone
 * (dns_msg_parse_full(), no short way for the usual response) must find all the same,
 * to the last field. Any violation aborts.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sni/dns.h"
#include "sni/rd.h"
#include "dns_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)	do { if (!(cond)) abort(); } while (0)

/* ---- reference: decompress everything, compare flat names ---- */

struct ref_rr {
	uint8_t owner[DNS_NAME_WIRE_MAX];
	uint8_t target[DNS_NAME_WIRE_MAX];	/* CNAME only */
	size_t owner_len, target_len;
	uint16_t type, class;
	uint32_t ttl;
	const uint8_t *rdata;
};

/*
 * The rules of dns.h written the plain way: follow pointers (each strictly before the
 * start of the labels it interrupts, not into the header, at most DNS_PTR_HOPS_MAX, and
 * the labels there ending before that start), copy labels lower-cased. *next gets the
 * offset after the name's in-place part.
 */
static bool
ref_name(const uint8_t *m, size_t len, size_t off, uint8_t *out, size_t *out_len, size_t *next)
{
	size_t start = off, lim = len, n = 0;
	unsigned int hops = 0;
	bool jumped = false;

	for (;;) {
		if (off >= lim)
			return false;
		if ((m[off] & 0xc0) == 0xc0) {
			size_t t;

			if (off + 1 >= lim || ++hops > DNS_PTR_HOPS_MAX)
				return false;
			t = (size_t)(m[off] & 0x3f) << 8 | m[off + 1];
			if (t >= start || t < DNS_HDR_LEN)
				return false;
			if (!jumped)
				*next = off + 2;
			jumped = true;
			lim = start;
			start = off = t;
			continue;
		}
		if (m[off] > DNS_LABEL_MAX || n + 1 + m[off] > DNS_NAME_WIRE_MAX ||
		    off + 1 + m[off] > lim)
			return false;
		out[n++] = m[off];
		for (size_t i = 0; i < m[off]; i++) {
			uint8_t c = m[off + 1 + i];

			out[n++] = c >= 'A' && c <= 'Z' ? (uint8_t)(c | 0x20) : c;
		}
		if (m[off] == 0)
			break;
		off += 1 + m[off];
	}
	if (!jumped)
		*next = off + 1;
	*out_len = n;
	return true;
}

static struct ref_rr ref_rrs[DNS_ANSWERS_MAX];

static bool
ref_eq(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	return alen == blen && memcmp(a, b, alen) == 0;
}

/* The address set dns_msg_parse should have found for a response with one question. */
static void
ref_check(const uint8_t *m, const struct dns_msg *msg)
{
	const uint8_t *chain[DNS_CHAIN_MAX + 1];
	size_t chain_len[DNS_CHAIN_MAX + 1];
	uint32_t chain_ttl[DNS_CHAIN_MAX + 1];
	size_t off = msg->question_end, nb = 0, n = 1;
	unsigned int nb_addrs = 0;
	bool more = false;

	for (unsigned int i = 0; i < msg->ancount && i < DNS_ANSWERS_MAX; i++) {
		struct ref_rr *rr = &ref_rrs[nb];
		size_t next, rdlen;

		CHECK(ref_name(m, msg->msg_len, off, rr->owner, &rr->owner_len, &off));
		CHECK(off + 10 <= msg->msg_len);
		rr->type = (uint16_t)(m[off] << 8 | m[off + 1]);
		rr->class = (uint16_t)(m[off + 2] << 8 | m[off + 3]);
		rr->ttl = (uint32_t)m[off + 4] << 24 | (uint32_t)m[off + 5] << 16 |
		    (uint32_t)m[off + 6] << 8 | m[off + 7];
		if (rr->ttl >= 0x80000000u)
			rr->ttl = 0;
		rdlen = (size_t)(m[off + 8] << 8 | m[off + 9]);
		rr->rdata = m + off + 10;
		off += 10 + rdlen;
		CHECK(off <= msg->msg_len);
		if (rr->class != DNS_CLASS_IN)
			continue;
		if (rr->type == DNS_TYPE_CNAME) {
			CHECK(ref_name(m, msg->msg_len, (size_t)(rr->rdata - m), rr->target,
			    &rr->target_len, &next));
			CHECK(next == off);
		} else if (rr->type == DNS_TYPE_A) {
			CHECK(rdlen == 4);
		} else if (rr->type == DNS_TYPE_AAAA) {
			CHECK(rdlen == 16);
		} else {
			continue;
		}
		nb++;
	}

	chain[0] = msg->qname;
	chain_len[0] = msg->qname_len;
	chain_ttl[0] = UINT32_MAX;
	while (n <= DNS_CHAIN_MAX) {
		const struct ref_rr *c = NULL;
		bool loop = false;

		for (size_t i = 0; i < nb && c == NULL; i++) {
			if (ref_rrs[i].type == DNS_TYPE_CNAME &&
			    ref_eq(ref_rrs[i].owner, ref_rrs[i].owner_len, chain[n - 1],
			    chain_len[n - 1]))
				c = &ref_rrs[i];
		}
		if (c == NULL)
			break;
		for (size_t k = 0; k < n; k++)
			loop |= ref_eq(c->target, c->target_len, chain[k], chain_len[k]);
		if (loop)
			break;
		chain[n] = c->target;
		chain_len[n] = c->target_len;
		chain_ttl[n] = chain_ttl[n - 1] < c->ttl ? chain_ttl[n - 1] : c->ttl;
		n++;
	}
	CHECK(msg->chain_len == n - 1);

	for (size_t i = 0; i < nb; i++) {
		const struct ref_rr *rr = &ref_rrs[i];
		const struct dns_addr *a;
		size_t k;

		if (rr->type == DNS_TYPE_CNAME)
			continue;
		for (k = 0; k < n; k++) {
			if (ref_eq(rr->owner, rr->owner_len, chain[k], chain_len[k]))
				break;
		}
		if (k == n)
			continue;
		if (nb_addrs == DNS_ADDRS_MAX) {
			more = true;
			break;
		}
		a = &msg->addrs[nb_addrs++];
		CHECK(a->family == (rr->type == DNS_TYPE_A ? 4 : 6));
		CHECK(memcmp(a->addr, rr->rdata, a->family == 4 ? 4 : 16) == 0);
		CHECK(a->ttl == (rr->ttl < chain_ttl[k] ? rr->ttl : chain_ttl[k]));
	}
	CHECK(msg->nb_addrs == nb_addrs);
	CHECK(msg->addrs_more == more);
}

/* ---- invariants ---- */

static bool
same(const struct dns_msg *a, const struct dns_msg *b)
{
	if (a->id != b->id || a->flags != b->flags || a->qr != b->qr ||
	    a->opcode != b->opcode || a->rcode != b->rcode || a->qdcount != b->qdcount ||
	    a->ancount != b->ancount || a->nscount != b->nscount || a->arcount != b->arcount ||
	    a->has_question != b->has_question || a->qname_len != b->qname_len ||
	    memcmp(a->qname, b->qname, a->qname_len) != 0 || a->qtype != b->qtype ||
	    a->qclass != b->qclass || a->question_end != b->question_end ||
	    a->edns != b->edns || a->edns_udp_size != b->edns_udp_size ||
	    a->nb_addrs != b->nb_addrs || a->addrs_more != b->addrs_more ||
	    a->chain_len != b->chain_len || a->msg_len != b->msg_len)
		return false;
	for (unsigned int i = 0; i < a->nb_addrs; i++) {
		const struct dns_addr *x = &a->addrs[i], *y = &b->addrs[i];

		if (x->family != y->family || x->ttl != y->ttl || memcmp(x->addr, y->addr, 16) != 0)
			return false;
	}
	return true;
}

/* same(), and the fields the case and the editor read: the short way's result is the full one */
static bool
same_all(const struct dns_msg *a, const struct dns_msg *b)
{
	return same(a, b) && a->qname_upper == b->qname_upper &&
	    a->an_owners_inline == b->an_owners_inline && a->plain == b->plain;
}

static void
check(const uint8_t *data, size_t size, const struct dns_msg *m)
{
	char text[DNS_NAME_TEXT_MAX];
	uint8_t ref[DNS_NAME_WIRE_MAX];
	size_t ref_len, next;
	int n;

	CHECK(m->msg_len <= size);
	CHECK(DNS_HDR_LEN <= m->question_end && m->question_end <= m->msg_len);
	CHECK(m->nb_addrs <= DNS_ADDRS_MAX);
	CHECK(!m->addrs_more || m->nb_addrs == DNS_ADDRS_MAX);
	CHECK(m->nb_addrs <= m->ancount);
	CHECK(m->chain_len <= DNS_CHAIN_MAX && m->chain_len <= m->ancount);
	CHECK(m->rcode == (data[3] & 0xf) && m->qr == ((data[2] & 0x80) != 0));
	if (!m->has_question || !m->qr)
		CHECK(m->nb_addrs == 0 && m->chain_len == 0 && !m->addrs_more);
	for (unsigned int i = 0; i < m->nb_addrs; i++) {
		const struct dns_addr *a = &m->addrs[i];

		CHECK(a->family == 4 || a->family == 6);
		CHECK(a->ttl < 0x80000000u);
		if (a->family == 4) {
			for (size_t j = 4; j < 16; j++)
				CHECK(a->addr[j] == 0);
		}
	}
	if (!m->has_question) {
		CHECK(m->qdcount != 1);
		return;
	}
	CHECK(m->qdcount == 1);
	CHECK(m->qname_len >= 1 && m->qname_len <= DNS_NAME_WIRE_MAX);
	CHECK(m->qname[m->qname_len - 1] == 0);
	for (size_t i = 0; i < m->qname_len; i++)
		CHECK(m->qname[i] < 'A' || m->qname[i] > 'Z');
	n = dns_name_to_text(m->qname, m->qname_len, text, sizeof(text));
	CHECK(n > 0 && (size_t)n < sizeof(text) && strlen(text) == (size_t)n);
	CHECK(ref_name(data, size, DNS_HDR_LEN, ref, &ref_len, &next));
	CHECK(ref_len == m->qname_len && memcmp(ref, m->qname, ref_len) == 0);
	CHECK(next + 4 == m->question_end);
	if (m->qr)
		ref_check(data, m);
}

/*
 * dns_msg_spell() (namegate folds a question to lower case and restores the client's
 * spelling in place) in an exact-size copy: it parses as before, the case being no part
 * of what dns_msg_parse() returns, and the client's caps give its question bytes back.
 */
static void
check_spell(const uint8_t *data, size_t size, const struct dns_msg *a)
{
	static const uint8_t lower[DNS_CASE_BYTES];
	uint8_t caps[DNS_CASE_BYTES];
	uint8_t *copy;
	struct dns_msg b;

	if (!a->has_question || a->question_end != DNS_HDR_LEN + (size_t)a->qname_len + 4)
		return;
	CHECK((copy = malloc(size)) != NULL);
	memcpy(copy, data, size);
	dns_name_caps(data + DNS_HDR_LEN, a->qname_len, caps);
	dns_msg_spell(copy, size, a->qname_len, lower);
	CHECK(memcmp(copy + DNS_HDR_LEN, a->qname, a->qname_len) == 0);
	CHECK(dns_msg_parse(copy, size, &b) == DNS_OK && same(a, &b));
	dns_msg_spell(copy, size, a->qname_len, caps);
	CHECK(memcmp(copy, data, DNS_HDR_LEN + a->qname_len) == 0);
	free(copy);
}

static void
one(const uint8_t *data, size_t size)
{
	struct dns_msg a, b;
	enum dns_status st = dns_msg_parse(data, size, &a);

	CHECK(st == DNS_OK || st == DNS_MALFORMED);
	CHECK(dns_msg_parse_full(data, size, &b) == st);
	if (st == DNS_OK)
		CHECK(same_all(&a, &b));
	if (size < DNS_HDR_LEN)
		CHECK(st == DNS_MALFORMED);
	if (st != DNS_OK)
		return;
	check(data, size, &a);
	CHECK(dns_msg_parse(data, size, &b) == DNS_OK && same(&a, &b));
	/* Trailing bytes change nothing; a message one byte short is malformed. */
	CHECK(dns_msg_parse(data, a.msg_len, &b) == DNS_OK && same(&a, &b));
	CHECK(dns_msg_parse(data, a.msg_len - 1, &b) == DNS_MALFORMED);
	check_spell(data, size, &a);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rd s = rd_make(data, size), msg;
	enum dns_status st;

	one(data, size);

	while ((st = dns_tcp_next(&s, &msg)) == DNS_OK) {
		/* An exact-size copy, so reading past one framed message is caught too. */
		uint8_t *copy = malloc(msg.len);

		CHECK(msg.len >= DNS_HDR_LEN && msg.p >= data && msg.p + msg.len <= data + size);
		CHECK(msg.p + msg.len == s.p);
		CHECK(copy != NULL);
		memcpy(copy, msg.p, msg.len);
		one(copy, msg.len);
		free(copy);
	}
	/* The stream is left at the message that did not frame. */
	CHECK(s.p + s.len == data + size);
	if (st == DNS_MALFORMED)
		CHECK(s.len >= 2 && (s.p[0] << 8 | s.p[1]) < DNS_HDR_LEN);
	else
		CHECK(st == DNS_NEED_MORE &&
		    (s.len < 2 || (size_t)(s.p[0] << 8 | s.p[1]) > s.len - 2));
	return 0;
}

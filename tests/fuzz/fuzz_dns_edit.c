/*
 * libFuzzer target for dns_edit. Input: u8 flags | u64 keep mask | message. keep() says
 * yes to call i when bit i % 64 of the mask is set. Any violation aborts:
 *  - on failure the message is as it was, and a message dns_msg_parse() refuses (or a
 *    query, or not one question) is DNS_EDIT_MALFORMED;
 *  - an edited message parses, with the same header flags and question, is no longer than
 *    the input (exactly as long with DNS_EDIT_SAME_LEN), and nothing past len was written;
 *  - every A/AAAA left anywhere in it is in the answer section and was said yes to, as many
 *    times as it is left (so dns_msg_parse()'s chain holds only kept addresses), and so is
 *    every hint of an HTTPS/SVCB record of the question name in the answer section;
 *  - its HTTPS/SVCB RDATA is still RFC 9460 RDATA, with no ech when stripping, and no
 *    mandatory key naming a key the record lost;
 *  - editing the result again, keeping everything, changes nothing;
 *  - the editor's shortcut (a message only keep() could change is not written) gives what
 *    writing the message anew (DNS_EDIT_REBUILD) gives: the same status, bytes, length,
 *    and keep() asked the same questions in the same order;
 *  - a message the stats do not say was rewritten is its first bytes as they came (the
 *    dataplane's spelling trusts the parser's view of its names then).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sni/dns.h"
#include "sni/dns_edit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)	do { if (!(cond)) abort(); } while (0)
#define GUARD		64
#define YES_MAX		4096

struct keeper {
	uint64_t mask;
	bool all;
	unsigned int calls;
	unsigned int nb_yes;
	struct dns_addr yes[YES_MAX];
	bool used[YES_MAX];
};

static struct keeper kp, kp2, kp3;
static uint8_t buf[65536 + GUARD], copy[65536 + GUARD], scratch[65536];
static uint8_t rebuilt[65536 + GUARD], asked[65536 + GUARD];

static bool
keep(void *arg, const struct dns_addr *a)
{
	struct keeper *k = arg;
	unsigned int i = k->calls++;

	CHECK(a->family == 4 || a->family == 6);
	CHECK(a->ttl < 0x80000000u);
	if (!k->all && (k->mask >> (i % 64) & 1) == 0)
		return false;
	if (k->nb_yes < YES_MAX)
		k->yes[k->nb_yes++] = *a;
	return true;
}

/* Take one unused yes for (family, addr); false when there is none left. */
static bool
take(struct keeper *k, uint8_t family, const uint8_t *addr)
{
	size_t n = family == 4 ? 4 : 16;

	if (k->nb_yes == YES_MAX)	/* the list was cut short: nothing to compare */
		return true;
	for (unsigned int i = 0; i < k->nb_yes; i++) {
		if (!k->used[i] && k->yes[i].family == family && memcmp(k->yes[i].addr, addr, n) == 0) {
			k->used[i] = true;
			return true;
		}
	}
	return false;
}

static uint16_t
r16(const uint8_t *b)
{
	return (uint16_t)(b[0] << 8 | b[1]);
}

/* Step over the name at *off; the output parsed, so it is well formed. */
static void
skip_name(const uint8_t *m, size_t len, size_t *off)
{
	for (;;) {
		CHECK(*off < len);
		if ((m[*off] & 0xc0) == 0xc0) {
			*off += 2;
			return;
		}
		if (m[*off] == 0) {
			*off += 1;
			return;
		}
		*off += 1 + (size_t)m[*off];
	}
}

/* Lower-cased, uncompressed name at off, into out; its length. */
static size_t
flat_name(const uint8_t *m, size_t len, size_t off, uint8_t *out)
{
	size_t n = 0;

	for (unsigned int hops = 0; hops < 200; ) {
		CHECK(off < len);
		if ((m[off] & 0xc0) == 0xc0) {
			off = (size_t)(m[off] & 0x3f) << 8 | m[off + 1];
			hops++;
			continue;
		}
		CHECK(n + 1 + m[off] <= DNS_NAME_WIRE_MAX);
		out[n++] = m[off];
		for (size_t i = 0; i < m[off]; i++) {
			uint8_t c = m[off + 1 + i];

			out[n++] = c >= 'A' && c <= 'Z' ? (uint8_t)(c | 0x20) : c;
		}
		if (m[off] == 0)
			return n;
		off += 1 + m[off];
	}
	abort();
}

/*
 * The keys (below 32) each HTTPS/SVCB record of the input has, in message order: the edit
 * never removes one of these records, so the i-th of the output is the i-th of the input.
 */
#define SVCB_MAX	2048
static uint32_t svcb_keys[SVCB_MAX];
static unsigned int nb_svcb, at_svcb;

/* Keys (below 32) of SVCB RDATA the editor accepted. */
static uint32_t
svcb_present(const uint8_t *p, size_t len)
{
	size_t off = 2;
	uint32_t present = 0;

	while (off < len && p[off] != 0)
		off += 1 + p[off];
	for (off++; off + 4 <= len; off += 4 + (size_t)r16(p + off + 2)) {
		if (r16(p + off) < 32)
			present |= (uint32_t)1 << r16(p + off);
	}
	return present;
}

/* RFC 9460 RDATA of an output HTTPS/SVCB record; hints taken from k when on_q. */
static void
check_svcb(const uint8_t *p, size_t len, unsigned int flags, bool on_q, struct keeper *k)
{
	uint32_t had = at_svcb < nb_svcb ? svcb_keys[at_svcb] : UINT32_MAX;
	size_t off = 2, mand = SIZE_MAX;
	int32_t prev = -1;
	uint32_t present = 0;

	at_svcb++;
	CHECK(len >= 3);
	while (p[off] != 0) {
		CHECK((p[off] & 0xc0) == 0);
		off += 1 + p[off];
		CHECK(off < len);
	}
	off++;
	if (r16(p) == 0)
		CHECK(off == len);		/* AliasMode: no params left */
	while (off < len) {
		uint16_t key, vlen;

		CHECK(len - off >= 4);
		key = r16(p + off);
		vlen = r16(p + off + 2);
		CHECK(len - off - 4 >= vlen);
		CHECK((int32_t)key > prev);
		prev = key;
		if (key < 32)
			present |= (uint32_t)1 << key;
		if (key == DNS_SVC_ECH)
			CHECK((flags & DNS_EDIT_STRIP_ECH) == 0);
		if (key == DNS_SVC_IPV4HINT || key == DNS_SVC_IPV6HINT) {
			size_t n = key == DNS_SVC_IPV4HINT ? 4 : 16;

			CHECK(vlen > 0 && vlen % n == 0);
			for (size_t i = 0; on_q && i < vlen; i += n)
				CHECK(take(k, n == 4 ? 4 : 6, p + off + 4 + i));
		}
		if (key == 0)
			mand = off;
		off += 4 + (size_t)vlen;
	}
	if (mand != SIZE_MAX) {
		uint16_t vlen = r16(p + mand + 2);

		CHECK(vlen > 0 && vlen % 2 == 0);
		for (size_t i = 0; i < vlen; i += 2) {
			uint16_t key = r16(p + mand + 4 + i);

			/* A key the edit removed left the list too. */
			if (key >= DNS_SVC_IPV4HINT && key <= DNS_SVC_IPV6HINT)
				CHECK((present >> key & 1) || (had >> key & 1) == 0);
		}
	}
}

/* Every record of the edited message against what keep() said. */
static void
check_records(const uint8_t *m, size_t len, const struct dns_msg *q, unsigned int flags,
    struct keeper *k)
{
	uint8_t owner[DNS_NAME_WIRE_MAX];
	size_t off = q->question_end;
	unsigned int counts[3] = { q->ancount, q->nscount, q->arcount };

	for (unsigned int s = 0; s < 3; s++) {
		for (unsigned int i = 0; i < counts[s]; i++) {
			size_t at = off, n;
			uint16_t type, class, rdlen;
			bool on_q;

			skip_name(m, len, &off);
			CHECK(len - off >= 10);
			type = r16(m + off);
			class = r16(m + off + 2);
			rdlen = r16(m + off + 8);
			off += 10;
			CHECK(len - off >= rdlen);
			n = flat_name(m, len, at, owner);
			on_q = s == 0 && class == DNS_CLASS_IN && n == q->qname_len &&
			    memcmp(owner, q->qname, n) == 0;
			if (type == DNS_TYPE_A || type == DNS_TYPE_AAAA) {
				CHECK(s == 0);
				CHECK(take(k, type == DNS_TYPE_A ? 4 : 6, m + off));
			}
			if (type == DNS_TYPE_SVCB || type == DNS_TYPE_HTTPS)
				check_svcb(m + off, rdlen, flags, on_q, k);
			off += rdlen;
		}
	}
	CHECK(off == len);
}

/* Fill svcb_keys from the input (parsed, accepted by the editor). */
static void
input_svcb(const uint8_t *m, size_t len, const struct dns_msg *q)
{
	size_t off = q->question_end;

	nb_svcb = at_svcb = 0;
	for (unsigned int i = 0; i < (unsigned int)q->ancount + q->nscount + q->arcount; i++) {
		uint16_t type, rdlen;

		skip_name(m, len, &off);
		type = r16(m + off);
		rdlen = r16(m + off + 8);
		off += 10;
		if ((type == DNS_TYPE_SVCB || type == DNS_TYPE_HTTPS) && nb_svcb < SVCB_MAX)
			svcb_keys[nb_svcb++] = svcb_present(m + off, rdlen);
		off += rdlen;
	}
}

/* The edit just made (rc, n, st, kp, buf) is the one a rebuild of msg makes. */
static void
same_as_rebuilt(const uint8_t *msg, size_t len, unsigned int flags, uint64_t mask,
    enum dns_edit_status rc, size_t n, const struct dns_edit_stats *st)
{
	struct dns_edit_stats st3;
	size_t n3 = 0;

	memset(rebuilt, 0xa5, sizeof(rebuilt));
	memcpy(rebuilt, msg, len);
	memset(&kp3, 0, sizeof(kp3));
	kp3.mask = mask;
	CHECK(dns_edit(rebuilt, len, len + GUARD, flags | DNS_EDIT_REBUILD, keep, &kp3, scratch,
	    len, &n3, &st3) == rc);
	CHECK(kp3.calls == kp.calls && kp3.nb_yes == kp.nb_yes);
	for (unsigned int i = 0; i < kp.nb_yes; i++)
		CHECK(kp3.yes[i].family == kp.yes[i].family && kp3.yes[i].ttl == kp.yes[i].ttl &&
		    memcmp(kp3.yes[i].addr, kp.yes[i].addr, sizeof(kp.yes[i].addr)) == 0);
	CHECK(memcmp(rebuilt, buf, len + GUARD) == 0 || (rc == DNS_EDIT_OK && n3 == n &&
	    memcmp(rebuilt, buf, n) == 0));
	/* the same counts; the rebuild was written anew, the shortcut perhaps not */
	if (rc == DNS_EDIT_OK)
		CHECK(n3 == n && st3.addrs_kept == st->addrs_kept &&
		    st3.addrs_removed == st->addrs_removed && st3.ech_removed == st->ech_removed &&
		    st3.rewritten == 1);
}

/*
 * The edit just made (rc, n, st, buf) is the one dns_edit_asked() makes of m (msg parsed)
 * when dns_edit_plain() takes it: keep()'s answers asked by the caller, the same bytes.
 */
static void
same_as_asked(const uint8_t *msg, size_t len, const struct dns_msg *m, unsigned int flags,
    uint64_t mask, enum dns_edit_status rc, size_t n, const struct dns_edit_stats *st)
{
	struct dns_edit_stats st4;
	size_t n4 = 0;

	if (!dns_edit_plain(m, len, len + GUARD, flags, scratch, len))
		return;
	CHECK(m->nb_addrs == kp.calls);
	memset(asked, 0xa5, sizeof(asked));
	memcpy(asked, msg, len);
	CHECK(dns_edit_asked(asked, len, m, len + GUARD, flags,
	    mask & ((1ull << m->nb_addrs) - 1), scratch, len, &n4, &st4) == rc);
	CHECK(memcmp(asked, buf, len + GUARD) == 0);
	if (rc == DNS_EDIT_OK)
		CHECK(n4 == n && st4.addrs_kept == st->addrs_kept &&
		    st4.addrs_removed == st->addrs_removed && st4.ech_removed == st->ech_removed &&
		    st4.rewritten == st->rewritten);
}

static void
one(const uint8_t *msg, size_t len, unsigned int flags, uint64_t mask)
{
	struct dns_msg in, out;
	struct dns_edit_stats st;
	enum dns_edit_status rc;
	bool parsed = dns_msg_parse(msg, len, &in) == DNS_OK && in.qr && in.has_question;
	size_t n = 0, n2 = 0;

	memset(buf, 0xa5, sizeof(buf));
	memcpy(buf, msg, len);
	memset(&kp, 0, sizeof(kp));
	kp.mask = mask;
	rc = dns_edit(buf, len, len + GUARD, flags, keep, &kp, scratch, len, &n, &st);
	CHECK(rc == DNS_EDIT_OK || rc == DNS_EDIT_MALFORMED || rc == DNS_EDIT_NO_ROOM);
	for (size_t i = len; i < len + GUARD; i++)
		CHECK(buf[i] == 0xa5);
	same_as_rebuilt(msg, len, flags, mask, rc, n, &st);
	if (parsed)
		same_as_asked(msg, len, &in, flags, mask, rc, n, &st);
	if (!parsed)
		CHECK(rc == DNS_EDIT_MALFORMED && kp.calls == 0);
	if (rc == DNS_EDIT_MALFORMED)
		CHECK(kp.calls == 0);
	if (rc != DNS_EDIT_OK) {
		CHECK(memcmp(buf, msg, len) == 0);
		return;
	}
	if (!st.rewritten)
		CHECK(memcmp(buf, msg, n) == 0);
	input_svcb(msg, len, &in);
	CHECK(st.addrs_kept == kp.nb_yes || kp.nb_yes == YES_MAX);
	CHECK(st.addrs_kept <= kp.calls);
	CHECK(n <= len && (n == len || (flags & DNS_EDIT_SAME_LEN) == 0));
	CHECK(dns_msg_parse(buf, n, &out) == DNS_OK && out.msg_len == n);
	CHECK(out.qr && out.has_question && out.id == in.id && out.flags == in.flags);
	CHECK(out.qname_len == in.qname_len && memcmp(out.qname, in.qname, in.qname_len) == 0);
	CHECK(out.qtype == in.qtype && out.qclass == in.qclass && out.edns == in.edns);
	/* SAME_LEN without an OPT record pads with one record of its own */
	CHECK(out.ancount <= in.ancount && out.nscount <= in.nscount && out.arcount <= in.arcount +
	    ((flags & DNS_EDIT_SAME_LEN) != 0 && !in.edns));
	check_records(buf, n, &out, flags, &kp);

	/* Edited again keeping all: the same bytes (SAME_LEN aside: padding is not undone). */
	memcpy(copy, buf, n);
	memset(&kp2, 0, sizeof(kp2));
	kp2.all = true;
	rc = dns_edit(copy, n, n, flags & ~(unsigned int)DNS_EDIT_SAME_LEN, keep, &kp2, scratch,
	    n, &n2, NULL);
	CHECK(rc == DNS_EDIT_OK && n2 == n && memcmp(copy, buf, n) == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t mask = 0;

	if (size < 9 || size - 9 > 65535)
		return 0;
	for (int i = 0; i < 8; i++)
		mask = mask << 8 | data[1 + i];
	one(data + 9, size - 9, data[0] & 3, mask);
	return 0;
}

/*
 * HTTPS/SVCB RDATA for the answer editor (RFC 9460): checked before anything is edited,
 * then written again with the hints keep() refused and, when asked, the ech key removed.
 *
 *   RDATA = u16 SvcPriority | TargetName | SvcParams
 *   SvcParams = { u16 SvcParamKey | u16 SvcParamValue length | SvcParamValue }*
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sni/dns.h"
#include "sni/dns_edit.h"
#include "sni/rd.h"
#include "dns_edit_int.h"
#include "dns_int.h"

/* TargetName (RFC 9460 s2.2): an uncompressed wire name, labels <= 63, at most 255 bytes. */
static bool
svcb_target(struct rd *r)
{
	size_t wire = 0;
	uint8_t b;

	for (;;) {
		if (!rd_u8(r, &b) || (b & 0xc0) != 0 || (wire += 1 + (size_t)b) > DNS_NAME_WIRE_MAX ||
		    !rd_skip(r, b))
			return false;
		if (b == 0)
			return true;
	}
}

/*
 * The scan's part (dns_edit_scan()) in a record the check passed: whether the build would
 * write it as it is unless keep() refuses one of its hints. A ServiceMode record with no
 * ech to strip is: its TargetName is marked as dns_edit_name() maps it, and its hints are
 * listed to be offered in the order dns_edit_svcb_write() offers them, param by param,
 * with the record's owner, which the scan then finds on the chain (off it, they go). Any
 * other record changes: its params dropped (AliasMode), its ech stripped, or its hints
 * removed unoffered (not in the answer, or not of class IN).
 */
void
dns_edit_svcb_scan(struct dns_edit_scan *s, const uint8_t *o, const struct dns_edit_rr *rr,
    unsigned int flags, bool answer)
{
	struct rd r = rd_make(o + rr->rdata, rr->rdlen), v;
	uint16_t prio, key;

	if (!s->same)
		return;
	if (!rd_u16(&r, &prio) || !dns_name_mark(s->labels, o, rr->rdata + 2) ||
	    !svcb_target(&r) || (prio == 0 && r.len > 0)) {
		s->same = false;
		return;
	}
	while (r.len > 0) {
		if (!rd_u16(&r, &key) || !rd_vec16(&r, &v) ||
		    (key == DNS_SVC_ECH && (flags & DNS_EDIT_STRIP_ECH) != 0)) {
			s->same = false;
			return;
		}
		if (key != DNS_SVC_IPV4HINT && key != DNS_SVC_IPV6HINT)
			continue;
		if (!answer || rr->class != DNS_CLASS_IN) {
			s->same = false;
			return;
		}
		for (size_t i = 0, n = key == DNS_SVC_IPV4HINT ? 4 : 16; i < v.len; i += n) {
			if (s->nb_addrs == DNS_ANSWERS_MAX) {
				s->same = false;
				return;
			}
			s->addrs[s->nb_addrs++] = (struct dns_edit_addr){ .owner = rr->owner,
			    .rdata = dns_off(o, &v) + i, .ttl = dns_ttl(rr->ttl),
			    .family = n == 4 ? 4 : 6 };
		}
	}
}

/*
 * mandatory (RFC 9460 s8): a non-empty list of u16 keys in strictly increasing order, not
 * listing mandatory itself.
 */
static bool
svcb_mandatory_ok(struct rd v)
{
	int32_t prev = -1;
	uint16_t k;

	if (v.len == 0 || v.len % 2 != 0)
		return false;
	while (rd_u16(&v, &k)) {
		if (k == DNS_SVC_MANDATORY || (int32_t)k <= prev)
			return false;
		prev = k;
	}
	return true;
}

/*
 * Keys strictly increasing (s2.2: otherwise the RR is malformed); ipv4hint a non-empty list
 * of 4-byte addresses and ipv6hint of 16-byte ones (s7.3). Other values are not looked into.
 */
bool
dns_edit_svcb_check(const uint8_t *p, size_t len)
{
	struct rd r = rd_make(p, len), v;
	int32_t prev = -1;
	uint16_t prio, key;

	if (!rd_u16(&r, &prio) || !svcb_target(&r))
		return false;
	while (r.len > 0) {
		if (!rd_u16(&r, &key) || !rd_vec16(&r, &v) || (int32_t)key <= prev)
			return false;
		prev = key;
		if ((key == DNS_SVC_MANDATORY && !svcb_mandatory_ok(v)) ||
		    (key == DNS_SVC_IPV4HINT && (v.len == 0 || v.len % 4 != 0)) ||
		    (key == DNS_SVC_IPV6HINT && (v.len == 0 || v.len % 16 != 0)))
			return false;
	}
	return true;
}

/*
 * A key removed from the record may not stay in its mandatory list (RFC 9460 s8: a client
 * must then ignore the whole RR). The param at e->w + at is mandatory; removed has bit k
 * set for each key k removed. Keys are dropped from its value, the param itself when none
 * is left, and the rest of the RDATA moved up. Nothing points into SvcParams: no name there.
 */
static void
svcb_mandatory_fix(struct dns_edit *e, size_t at, uint32_t removed)
{
	uint8_t *m = e->w + at;
	size_t len = dns_edit_rd16(m + 2), kept = 0, from = at + 4 + len, to;

	for (size_t i = 0; i < len; i += 2) {
		uint16_t k = dns_edit_rd16(m + 4 + i);

		if (k < 32 && (removed & (uint32_t)1 << k) != 0)
			continue;
		memmove(m + 4 + kept, m + 4 + i, 2);
		kept += 2;
	}
	if (kept == len)
		return;
	to = kept == 0 ? at : at + 4 + kept;
	if (kept != 0)
		dns_edit_wr16(m + 2, kept);
	memmove(e->w + to, e->w + from, e->wlen - from);
	e->wlen -= from - to;
}

/*
 * Hints (RFC 9460 s7.3) of a record on the chain: each address goes to keep(); the param
 * keeps those it says yes to, and goes when none is left (an empty hint is malformed).
 */
static bool
svcb_hints(struct dns_edit *e, uint16_t key, struct rd v, uint32_t ttl, uint32_t *removed)
{
	size_t at = e->wlen, n = key == DNS_SVC_IPV4HINT ? 4 : 16;

	if (!dns_edit_put(e, v.p - 4, 4))
		return false;
	for (size_t i = 0; i < v.len; i += n) {
		if (dns_edit_offer(e, n == 4 ? 4 : 6, v.p + i, ttl) && !dns_edit_put(e, v.p + i, n))
			return false;
	}
	if (e->wlen == at + 4) {
		e->wlen = at;
		*removed |= (uint32_t)1 << key;
	} else {
		dns_edit_wr16(e->w + at + 2, e->wlen - at - 4);
	}
	return true;
}

/*
 * AliasMode (SvcPriority 0, s2.4.2) records should have no SvcParams and clients must
 * ignore any: they are dropped, so no client that does not ignore them uses an address or
 * an ECH key nobody judged. Hints of a record off the chain go too, as its A/AAAA would
 * (nothing asked for them, so nothing binds them); ech goes from every record when asked.
 */
bool
dns_edit_svcb_write(struct dns_edit *e, const struct dns_edit_rr *rr, const uint32_t *chain_ttl)
{
	struct rd r = rd_make(e->o + rr->rdata, rr->rdlen), v;
	uint32_t ttl = chain_ttl != NULL ? dns_min(dns_ttl(rr->ttl), *chain_ttl) : 0;
	uint32_t removed = 0;
	size_t mandatory = SIZE_MAX;
	uint16_t prio, key;

	/* Checked by dns_edit_svcb_check(): none of these reads can fail. */
	if (!rd_u16(&r, &prio) || !svcb_target(&r)) {
		e->bad = true;
		return false;
	}
	if (!dns_edit_put(e, e->o + rr->rdata, 2) || !dns_edit_name(e, rr->rdata + 2))
		return false;
	while (r.len > 0) {
		if (!rd_u16(&r, &key) || !rd_vec16(&r, &v)) {
			e->bad = true;
			return false;
		}
		if (prio == 0) {
			if (key == DNS_SVC_IPV4HINT || key == DNS_SVC_IPV6HINT)
				e->st->addrs_removed += (uint32_t)(v.len /
				    (key == DNS_SVC_IPV4HINT ? 4 : 16));
			else if (key == DNS_SVC_ECH)
				e->st->ech_removed++;
			continue;
		}
		if (key == DNS_SVC_ECH && (e->flags & DNS_EDIT_STRIP_ECH) != 0) {
			e->st->ech_removed++;
			removed |= (uint32_t)1 << key;
			continue;
		}
		if ((key == DNS_SVC_IPV4HINT || key == DNS_SVC_IPV6HINT) && chain_ttl == NULL) {
			/* nobody asked for them, so nothing binds them: the VM gets none */
			e->st->addrs_removed += (uint32_t)(v.len / (key == DNS_SVC_IPV4HINT ? 4 : 16));
			removed |= (uint32_t)1 << key;
			continue;
		}
		if (key == DNS_SVC_IPV4HINT || key == DNS_SVC_IPV6HINT) {
			if (!svcb_hints(e, key, v, ttl, &removed))
				return false;
			continue;
		}
		if (key == DNS_SVC_MANDATORY)
			mandatory = e->wlen;
		if (!dns_edit_put(e, v.p - 4, 4 + v.len))
			return false;
	}
	if (mandatory != SIZE_MAX && removed != 0)
		svcb_mandatory_fix(e, mandatory, removed);
	return true;
}

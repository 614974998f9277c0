/*
 * DNS_EDIT_SAME_LEN (sni/dns_edit.h): the bytes an edit saved become EDNS Padding (RFC
 * 7830) in the OPT record the build wrote, or one record of a private-use type, so that a
 * TCP stream keeps its length. Internal to the answer editor (dns_edit.c).
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

#define DNS_EDNS_PADDING	12	/* RFC 7830 s3 */
#define DNS_TYPE_PAD		65280	/* the first private-use type (RFC 6895 s3.1) */
#define DNS_PAD_RR_MIN		11	/* root owner | type | class | ttl | rdlength */

/* Move the in-place pointer of the name at *p by d if it goes to ins or past; step over. */
static bool
edit_shift_name(struct dns_edit *e, size_t *p, size_t ins, size_t d)
{
	size_t q = *p, t;

	while (q < e->wlen) {
		uint8_t b = e->w[q];

		if ((b & 0xc0) == 0xc0) {
			if (q + 1 >= e->wlen)
				return false;
			if ((t = (size_t)(b & 0x3f) << 8 | e->w[q + 1]) >= ins) {
				if ((t += d) >= DNS_PTR_REACH)
					return false;
				dns_edit_wr16(e->w + q, 0xc000 | t);
			}
			*p = q + 2;
			return true;
		}
		q += 1 + (size_t)b;
		if (b == 0) {
			*p = q;
			return true;
		}
	}
	return false;
}

/*
 * d bytes went in at ins, inside the OPT RDATA: the n records from p on, which follow it,
 * may point at names past it. Their names are what edit_build() wrote, so they read.
 */
static bool
edit_shift(struct dns_edit *e, size_t p, unsigned int n, size_t ins, size_t d)
{
	for (unsigned int i = 0; i < n; i++) {
		const struct dns_edit_shape *s;
		uint16_t rdlen;
		size_t q;

		if (!edit_shift_name(e, &p, ins, d) || e->wlen - p < 10)
			return false;
		s = dns_edit_shape(dns_edit_rd16(e->w + p));
		rdlen = dns_edit_rd16(e->w + p + 8);
		p += 10;
		if (s != NULL && rdlen != 0) {
			q = p + s->pre;
			for (unsigned int j = 0; j < s->strs && q < e->wlen; j++)
				q += 1 + (size_t)e->w[q];
			for (unsigned int j = 0; j < s->names; j++) {
				if (!edit_shift_name(e, &q, ins, d))
					return false;
			}
		}
		p += rdlen;
	}
	return true;
}

/*
 * DNS_EDIT_SAME_LEN without an OPT record: the query had none, so RFC 6891 s7 forbids
 * adding one. The d bytes saved become one record of a private-use type, owned by the root,
 * at the end of the additional section: a record of a type it does not know is one a
 * client skips (RFC 3597), and nothing before it moves.
 */
static enum dns_edit_status
edit_pad_rr(struct dns_edit *e, size_t d)
{
	uint8_t *r = e->w + e->wlen;
	uint16_t arcount = dns_edit_rd16(e->w + 10);

	if (d < DNS_PAD_RR_MIN || d - DNS_PAD_RR_MIN > 0xffff || arcount == 0xffff)
		return DNS_EDIT_NO_ROOM;
	memset(r, 0, d);			/* the root, a TTL of 0, zero RDATA */
	dns_edit_wr16(r + 1, DNS_TYPE_PAD);
	dns_edit_wr16(r + 3, DNS_CLASS_IN);
	dns_edit_wr16(r + 9, d - DNS_PAD_RR_MIN);
	dns_edit_wr16(e->w + 10, arcount + 1u);
	e->wlen += d;
	return DNS_EDIT_OK;
}

/*
 * DNS_EDIT_SAME_LEN: the message is len - wlen bytes short. The first Padding option of
 * the OPT RDATA (RFC 7830: zero bytes, u16 code 12 | u16 length | padding) grows by that
 * much, or one is appended; an OPT whose options do not parse is not padded. len <= cap.
 */
enum dns_edit_status
dns_edit_pad(struct dns_edit *e, const struct dns_edit_opt *opt, size_t len)
{
	uint8_t *w = e->w;
	size_t d, rdlen, ins = 0, pad_at = 0;
	struct rd r, v;
	uint16_t code;

	if (e->wlen > len)
		return DNS_EDIT_NO_ROOM;
	if ((d = len - e->wlen) == 0)
		return DNS_EDIT_OK;
	if (!opt->found)
		return edit_pad_rr(e, d);
	rdlen = dns_edit_rd16(w + opt->rdlen_at);
	r = rd_make(w + opt->rdlen_at + 2, rdlen);
	while (r.len > 0) {
		if (!rd_u16(&r, &code) || !rd_vec16(&r, &v))
			return DNS_EDIT_NO_ROOM;
		if (code == DNS_EDNS_PADDING && pad_at == 0) {
			pad_at = (size_t)(v.p - w) - 2;
			ins = (size_t)(v.p - w) + v.len;
		}
	}
	if (rdlen + d > 0xffff || (pad_at != 0 && dns_edit_rd16(w + pad_at) + d > 0xffff) ||
	    (pad_at == 0 && d < 4))
		return DNS_EDIT_NO_ROOM;
	if (pad_at == 0)
		ins = opt->end;
	memmove(w + ins + d, w + ins, e->wlen - ins);
	memset(w + ins, 0, d);
	if (pad_at != 0) {
		dns_edit_wr16(w + pad_at, dns_edit_rd16(w + pad_at) + d);
	} else {
		dns_edit_wr16(w + ins, DNS_EDNS_PADDING);
		dns_edit_wr16(w + ins + 2, d - 4);
	}
	dns_edit_wr16(w + opt->rdlen_at, rdlen + d);
	e->wlen += d;
	return edit_shift(e, opt->end + d, opt->after, ins, d) ? DNS_EDIT_OK : DNS_EDIT_NO_ROOM;
}

/*
 * The DNS answer editor's writer, below both its passes over records (dns_edit.c) and over
 * HTTPS/SVCB RDATA (dns_edit_svcb.c): bytes appended, names copied through the old -> new
 * offset map, and addresses offered to keep().
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sni/dns.h"
#include "dns_edit_int.h"

bool
dns_edit_put(struct dns_edit *e, const void *p, size_t n)
{
	if (e->cap - e->wlen < n) {
		e->full = true;
		return false;
	}
	memcpy(e->w + e->wlen, p, n);
	e->wlen += n;
	return true;
}

/*
 * Copy the labels of the name at old offset off. At a compression pointer: if the label it
 * points to was written, point there; it reads on as the old one did, since every label is
 * mapped where it was written followed by the rest of its own name. Otherwise (the bytes
 * went with a removed record, or sat in RDATA copied as it is) the name is written out
 * from there. A new pointer is only ever written where the old name had one, so the hops
 * of a name never grow, and it goes to a label written by an earlier name: strictly
 * backwards, as dns_name_read() demands of the result.
 */
bool
dns_edit_name(struct dns_edit *e, size_t off)
{
	for (unsigned int steps = 0; steps <= DNS_PTR_HOPS_MAX + DNS_NAME_WIRE_MAX; steps++) {
		uint8_t b, ptr[2];
		size_t t;

		if (off >= e->olen)
			break;
		b = e->o[off];
		if ((b & 0xc0) == 0xc0) {
			if (off + 1 >= e->olen)
				break;
			t = (size_t)(b & 0x3f) << 8 | e->o[off + 1];
			if (t < e->map_len && e->map[t] != 0) {
				ptr[0] = (uint8_t)(0xc0 | e->map[t] >> 8);
				ptr[1] = (uint8_t)e->map[t];
				return dns_edit_put(e, ptr, 2);
			}
			off = t;
			continue;
		}
		if ((b & 0xc0) != 0 || b > e->olen - off - 1)
			break;
		if (off < e->map_len && e->map[off] == 0 && e->wlen < DNS_PTR_REACH)
			e->map[off] = (uint16_t)e->wlen;
		if (!dns_edit_put(e, e->o + off, 1 + (size_t)b))
			return false;
		if (b == 0)
			return true;
		off += 1 + (size_t)b;
	}
	e->bad = true;
	return false;
}

bool
dns_edit_offer(struct dns_edit *e, uint8_t family, const uint8_t *addr, uint32_t ttl)
{
	struct dns_addr a = { .family = family, .ttl = ttl };

	memcpy(a.addr, addr, family == 4 ? 4 : 16);
	return dns_edit_offer_addr(e, &a);
}

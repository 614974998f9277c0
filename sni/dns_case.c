/*
 * The letter case of a DNS name (RFC 4343): which letters a client spelled in upper case,
 * and a name given back that spelling. namegate sends every question in lower case, so
 * that the case carries no bits to the resolver, and restores the client's spelling in the
 * answer, so that a stub that randomises it (0x20, draft-vixie-dnsext-dns0x20) still finds
 * its question echoed byte for byte.
 */
#include <stdint.h>
#include <string.h>

#include "dns_int.h"
#include "sni/dns.h"

/*
 * Only ASCII letters have a case in DNS (RFC 4343 s3). A length byte is at most 63 and so
 * never a letter: the whole wire form can be walked byte by byte, labels and lengths alike.
 */
static bool
dns_is_letter(uint8_t c)
{
	return (uint8_t)((c | 0x20) - 'a') <= 'z' - 'a';
}

void
dns_name_caps(const uint8_t *name, size_t len, uint8_t caps[DNS_CASE_BYTES])
{
	size_t i = 0;

	memset(caps, 0, DNS_CASE_BYTES);
	if (len > DNS_NAME_WIRE_MAX)
		len = DNS_NAME_WIRE_MAX;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* eight bytes a caps byte: the multiply gathers byte k's high bit into bit k */
	for (; i + 8 <= len; i += 8)
		caps[i / 8] = (uint8_t)(((dns_upper8(name + i) >> 7) * 0x0102040810204080ull) >> 56);
	/* the tail as the last eight bytes, the ones before it shifted out */
	if (i < len && len >= 8) {
		caps[i / 8] = (uint8_t)((((dns_upper8(name + len - 8) >> (8 * (8 - (len - i)))) >>
		    7) * 0x0102040810204080ull) >> 56);
		return;
	}
#endif
	for (; i < len; i++)
		if (dns_is_letter(name[i]) && !(name[i] & 0x20))
			caps[i / 8] |= (uint8_t)(1u << (i % 8));
}

void
dns_name_spell(uint8_t *name, size_t len, const uint8_t caps[DNS_CASE_BYTES])
{
	for (size_t i = 0; i < len && i < DNS_NAME_WIRE_MAX; i++)
		if (dns_is_letter(name[i]))
			name[i] = (caps[i / 8] >> (i % 8) & 1) ? (uint8_t)(name[i] & ~0x20) :
			    (uint8_t)(name[i] | 0x20);
}

bool
dns_name_has_upper(const uint8_t *name, size_t len)
{
	size_t i = 0;

	for (; i + 8 <= len; i += 8)
		if (dns_upper8(name + i) != 0)
			return true;
	/* the tail as the last eight bytes, some looked at twice: any letter is one */
	if (i < len && len >= 8)
		return dns_upper8(name + len - 8) != 0;
	for (; i < len; i++)
		if ((uint8_t)(name[i] - 'A') <= 'Z' - 'A')
			return true;
	return false;
}

/* Are the len bytes at a and b one name in wire form, letter case aside? */
static bool
dns_name_same_nocase(const uint8_t *a, const uint8_t *b, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (a[i] != b[i] && !(dns_is_letter(a[i]) && (a[i] ^ b[i]) == 0x20))
			return false;
	return true;
}

/*
 * Skip the name at *off: labels up to the root, or up to a pointer (2 bytes) that ends it.
 * Sets *plain when the name had no pointer. False when it runs past len.
 */
static bool
dns_name_skip(const uint8_t *msg, size_t len, size_t *off, bool *plain)
{
	*plain = true;
	while (*off < len) {
		uint8_t b = msg[*off];

		if ((b & 0xc0) == 0xc0) {
			*plain = false;
			*off += 2;
			return *off <= len;
		}
		if (b & 0xc0)
			return false;
		*off += 1 + (size_t)b;
		if (b == 0)
			return *off <= len;
	}
	return false;
}

/*
 * Answer (RFC 1035 s4.1.3): owner | type u16 | class u16 | ttl u32 | rdlength u16 | rdata.
 * An owner that is a pointer to the question name takes the new spelling with it; one
 * that copies it in full is spelled too; one that copies some labels and points at the
 * rest is left as it is (no resolver writes that). With caps, each name is spelled as it
 * is found; with at, its offset is listed there (max at most, max + 1 returned when there
 * are more): one walk for both, so the names listed are exactly those spelled.
 */
static size_t
dns_spell_walk(uint8_t *msg, size_t len, size_t qname_len, const uint8_t *caps, size_t *at,
    size_t max)
{
	const uint8_t *qname = msg + DNS_HDR_LEN;
	size_t off = DNS_HDR_LEN + qname_len + 4, owner, n = 0;
	unsigned int ancount;
	bool plain;

	if (len < off || qname_len == 0 || qname_len > DNS_NAME_WIRE_MAX)
		return 0;
	ancount = (unsigned int)msg[6] << 8 | msg[7];
	for (unsigned int i = 0; i <= ancount; i++) {
		owner = off;
		if (i == 0) {
			owner = DNS_HDR_LEN;	/* the question itself */
		} else if (!dns_name_skip(msg, len, &off, &plain) || len - off < 10) {
			break;
		} else {
			if (!plain || off - owner != qname_len ||
			    !dns_name_same_nocase(msg + owner, qname, qname_len))
				owner = 0;
			off += 10 + ((size_t)msg[off + 8] << 8 | msg[off + 9]);
		}
		if (owner == 0)
			continue;
		if (caps != NULL)
			dns_name_spell(msg + owner, qname_len, caps);
		if (at != NULL && n == max)
			return max + 1;
		if (at != NULL)
			at[n] = owner;
		n++;
	}
	return n;
}

void
dns_msg_spell(uint8_t *msg, size_t len, size_t qname_len, const uint8_t caps[DNS_CASE_BYTES])
{
	(void)dns_spell_walk(msg, len, qname_len, caps, NULL, 0);
}

size_t
dns_msg_spell_names(const uint8_t *msg, size_t len, size_t qname_len, size_t *at, size_t max)
{
	/* no caps: nothing is written */
	return dns_spell_walk((uint8_t *)(uintptr_t)msg, len, qname_len, NULL, at, max);
}

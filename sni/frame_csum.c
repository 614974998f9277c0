/*
 * Internet checksum (RFC 1071) and its incremental update (RFC 1624), for the frames of
 * frame.c and the DNS ID rewrite on the forwarding path.
 */
#include <string.h>

#include "frame_int.h"
#include "sni/csum.h"
#include "sni/frame.h"
#include "sni/rd.h"

#define UDP_CSUM_OFF	6
#define TCP_CSUM_OFF	16
#define FRAME_DNS_SPELL_NAMES	16	/* copies of a question summed one by one */

uint32_t
frame_csum_add(uint32_t sum, const void *buf, size_t len)
{
	uint16_t host = csum_fold(csum_sum(buf, len, 0));
	uint64_t acc;

	/* csum_sum adds host-order words: read in network order, the sum's bytes swap */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	host = frame_swap16(host);
#endif
	acc = sum + host;
	while (acc >> 16)
		acc = (acc & 0xffff) + (acc >> 16);
	return (uint32_t)acc;
}

uint16_t
frame_csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/*
 * Eqn 3, not RFC 1141's HC' = HC + m + ~m' (eqn 2): that one gives 0xffff where a full
 * recomputation gives 0x0000 (RFC 1624 s3's example: 0xdd2f, 0x5555 -> 0x3285).
 */
uint16_t
frame_csum_update16(uint16_t csum, uint16_t old, uint16_t new)
{
	uint32_t sum = (uint32_t)(uint16_t)~csum + (uint16_t)~old + new;

	return frame_csum_fold(sum);
}

/*
 * frame_csum_update16() inline, on words as memory holds them (loaded whole, not byte by
 * byte in network order): a sum of byte-swapped words is the swapped sum (RFC 1071 s2(B)),
 * so the result, stored as it came, is the same bytes. Two folds are all a sum below
 * 3 * 2^16 needs: the first leaves at most 0xffff + 2.
 */
static inline uint16_t
frame_csum_patch(uint16_t csum, uint16_t old, uint16_t new)
{
	uint32_t sum = (uint32_t)(uint16_t)~csum + (uint16_t)~old + new;

	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~(sum + (sum >> 16));
}

/*
 * Store v at field and patch the checksum at csum_at, of data starting at base; returns
 * the field's old value. A field at an odd offset from base straddles two words, low byte
 * of one and high byte of the next; its share of the sum is then its bytes swapped.
 */
static inline __attribute__((always_inline)) uint16_t
frame_csum_rewrite16(const uint8_t *base, uint8_t *csum_at, uint8_t *field, uint16_t v,
    bool udp)
{
	uint16_t old, csum, put;
	uint8_t was[2];

	memcpy(was, field, 2);
	memcpy(&old, field, 2);
	memcpy(&csum, csum_at, 2);
	wr16(field, v);
	memcpy(&put, field, 2);
	if (!udp || csum != 0) {	/* a UDP checksum of 0: none to keep right */
		csum = ((size_t)(field - base) & 1) != 0 ?
		    frame_csum_patch(csum, frame_swap16(old), frame_swap16(put)) :
		    frame_csum_patch(csum, old, put);
		if (udp && csum == 0)
			csum = 0xffff;
		memcpy(csum_at, &csum, 2);
	}
	return rd_be16(was);
}

uint16_t
frame_dns_rewrite_id(uint8_t *udp_hdr, uint8_t *dns, uint16_t new_id)
{
	return frame_csum_rewrite16(udp_hdr, udp_hdr + UDP_CSUM_OFF, dns, new_id, true);
}

uint16_t
frame_dns_rewrite_id_tcp(uint8_t *tcp_hdr, uint8_t *dns, uint16_t new_id)
{
	return frame_csum_rewrite16(tcp_hdr, tcp_hdr + TCP_CSUM_OFF, dns, new_id, false);
}

/* The names the spelling may change, summed as they sit in the message (swapped when odd). */
static uint32_t
frame_dns_names_sum(const uint8_t *dns, const size_t *at, size_t n, size_t name_len)
{
	uint32_t sum = 0, part;

	for (size_t i = 0; i < n; i++) {
		part = frame_csum_add(0, dns + at[i], name_len);
		sum += (at[i] & 1) != 0 ? frame_swap16((uint16_t)part) : part;
	}
	return sum;
}

/* Are caps all zero: lower case asked? */
static bool
frame_dns_caps_lower(const uint8_t caps[DNS_CASE_BYTES])
{
	uint64_t any = 0, w;

	for (size_t i = 0; i < DNS_CASE_BYTES; i += 8) {
		memcpy(&w, caps + i, 8);
		any |= w;
	}
	return any == 0;
}

/* Are caps all zero, and the n names at dns + at[i] lower case already? */
static bool
frame_dns_spelled(const uint8_t *dns, const size_t *at, size_t n, size_t name_len,
    const uint8_t caps[DNS_CASE_BYTES])
{
	if (!frame_dns_caps_lower(caps))
		return false;
	for (size_t i = 0; i < n; i++)
		if (dns_name_has_upper(dns + at[i], name_len))
			return false;
	return true;
}

/*
 * The message sums to a 16-bit word before and after like any one field (RFC 1624 holds
 * for a sum of words as for one word), swapped when it starts at an odd offset. Only the
 * names the spelling touches are summed: the rest of the message adds the same to both.
 */
void
frame_dns_spell(uint8_t *udp_hdr, uint8_t *dns, size_t len, size_t qname_len,
    const uint8_t caps[DNS_CASE_BYTES])
{
	uint16_t csum = rd_be16(udp_hdr + UDP_CSUM_OFF), before, after;
	bool odd = ((size_t)(dns - udp_hdr) & 1) != 0;
	size_t at[FRAME_DNS_SPELL_NAMES], n, sum_len = qname_len;

	/*
	 * Given only the question (an answer as it came, dp_dns_answer.c), it is the one name
	 * the walk would list: lower case asked and none in it, nothing changes, unwalked.
	 */
	if (len == DNS_HDR_LEN + qname_len + 4 && qname_len != 0 &&
	    qname_len <= DNS_NAME_WIRE_MAX && frame_dns_caps_lower(caps) &&
	    !dns_name_has_upper(dns + DNS_HDR_LEN, qname_len))
		return;
	n = dns_msg_spell_names(dns, len, qname_len, at, FRAME_DNS_SPELL_NAMES);
	if (n <= FRAME_DNS_SPELL_NAMES && frame_dns_spelled(dns, at, n, qname_len, caps))
		return;		/* lower case asked and every name is: nothing changes */
	if (n > FRAME_DNS_SPELL_NAMES) {
		/* more copies of the question than we list: the whole message, as it sums */
		n = 1;
		at[0] = 0;
		sum_len = len;
	}
	before = (uint16_t)~frame_csum_fold(frame_dns_names_sum(dns, at, n, sum_len));
	dns_msg_spell(dns, len, qname_len, caps);
	if (csum == 0)
		return;		/* no checksum to keep right */
	after = (uint16_t)~frame_csum_fold(frame_dns_names_sum(dns, at, n, sum_len));
	csum = odd ? frame_csum_update16(csum, frame_swap16(before), frame_swap16(after)) :
	    frame_csum_update16(csum, before, after);
	wr16(udp_hdr + UDP_CSUM_OFF, csum == 0 ? 0xffff : csum);
}

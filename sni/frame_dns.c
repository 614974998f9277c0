/*
 * DNS refusals (SPEC s4 step 2): namegate answers a query it will not forward, in the name of
 * the resolver the VM asked, over UDP or TCP.
 */
#include <string.h>

#include "sni/frame.h"
#include "frame_int.h"

#define DNS_FLAG_QR	0x8000
#define DNS_FLAG_RD	0x0100
#define DNS_FLAG_RA	0x0080
#define DNS_OPT_FIXED	11	/* OPT RR without RDATA: root name, type, class, ttl, rdlength */
#define EDE_DATA_LEN(t)	(2 + (t))		/* INFO-CODE + EXTRA-TEXT of t bytes */
#define EDE_OPT_LEN(t)	(4 + EDE_DATA_LEN(t))	/* OPTION-CODE, OPTION-LENGTH, data */
#define DP_TCP_WINDOW	65535

/*
 * Size the refusal of q (parsed from msg, msg_len bytes); 0 when it must not be sent.
 * *question is the query's own question, to copy as it came (case included), or NULL to
 * rebuild it from q: a question whose name took other than qname_len bytes was compressed
 * (legal for nothing in a query, but cheap to survive).
 */
static size_t
frame_dns_refusal_len(const uint8_t *msg, size_t msg_len, const struct dns_msg *q, uint8_t rcode,
    bool ede, size_t text_len, const uint8_t **question)
{
	size_t n = DNS_HDR_LEN;

	*question = NULL;
	if (msg == NULL || q->qr || rcode > 0xf)
		return 0;
	if (q->has_question) {
		if (q->question_end > msg_len || q->question_end < DNS_HDR_LEN ||
		    q->qname_len == 0)
			return 0;
		if (q->question_end - DNS_HDR_LEN == (size_t)q->qname_len + 4)
			*question = msg + DNS_HDR_LEN;
		n += (size_t)q->qname_len + 4;
	}
	if (ede)
		n += DNS_OPT_FIXED + EDE_OPT_LEN(text_len);
	return n;
}

/*
 * Header (RFC 1035 s4.1.1): id | QR opcode AA TC RD RA Z AD CD rcode | qd | an | ns | ar,
 * the question (s4.1.2), then with ede an OPT RR (RFC 6891 s6.1.2):
 *   root | type 41 | class = UDP size | ttl = ext-rcode 0, version 0, DO 0, Z 0 | rdlength
 *   | option (RFC 8914 s2): code 15 | length | INFO-CODE | EXTRA-TEXT (UTF-8, no NUL)
 */
static void
frame_dns_put_refusal(uint8_t *d, const struct dns_msg *q, const uint8_t *question, uint8_t rcode,
    bool ede, const char *text, size_t text_len)
{
	uint16_t flags = DNS_FLAG_QR | (uint16_t)((q->opcode & 0xf) << 11) |
	    (q->flags & DNS_FLAG_RD) | DNS_FLAG_RA | rcode;
	size_t off = DNS_HDR_LEN;

	wr16(d, q->id);
	wr16(d + 2, flags);
	wr16(d + 4, q->has_question ? 1 : 0);
	wr16(d + 6, 0);
	wr16(d + 8, 0);
	wr16(d + 10, ede ? 1 : 0);
	if (q->has_question) {
		if (question != NULL) {
			memcpy(d + off, question, (size_t)q->qname_len + 4);
		} else {
			memcpy(d + off, q->qname, q->qname_len);
			wr16(d + off + q->qname_len, q->qtype);
			wr16(d + off + q->qname_len + 2, q->qclass);
		}
		off += (size_t)q->qname_len + 4;
	}
	if (!ede)
		return;
	d[off] = 0;
	wr16(d + off + 1, DNS_TYPE_OPT);
	wr16(d + off + 3, FRAME_DNS_EDNS_UDP_SIZE);
	wr32(d + off + 5, 0);
	wr16(d + off + 9, (uint16_t)EDE_OPT_LEN(text_len));
	off += DNS_OPT_FIXED;
	wr16(d + off, FRAME_DNS_EDE_OPTION);
	wr16(d + off + 2, (uint16_t)EDE_DATA_LEN(text_len));
	wr16(d + off + 4, FRAME_DNS_EDE_BLOCKED);
	memcpy(d + off + 6, text, text_len);
}

int
frame_dns_refusal(const uint8_t *in, size_t len, const struct pkt *p,
    const struct dns_msg *q, uint8_t rcode, bool ede, uint8_t *out, size_t cap)
{
	return frame_dns_refusal_text(in, len, p, q, rcode, ede, FRAME_DNS_EDE_TEXT, out, cap);
}

int
frame_dns_refusal_text(const uint8_t *in, size_t len, const struct pkt *p,
    const struct dns_msg *q, uint8_t rcode, bool ede, const char *text, uint8_t *out,
    size_t cap)
{
	size_t l2, l4, dlen, n, text_len = strnlen(text, FRAME_DNS_EDE_TEXT_MAX + 1);
	const uint8_t *question;
	uint16_t csum;

	if (text_len > FRAME_DNS_EDE_TEXT_MAX || p->proto != PKT_PROTO_UDP || p->fragment ||
	    (l2 = frame_l2_len(in, len, p)) == 0 ||
	    (dlen = frame_dns_refusal_len(p->payload, p->payload_len, q, rcode, ede, text_len,
	    &question)) == 0)
		return -1;
	n = l2 + frame_l3_len(p) + FRAME_UDP_HDR_LEN + dlen;
	if (n > cap)
		return -1;
	/* UDP (RFC 768): sport | dport | length | checksum */
	l4 = frame_put_hdrs(in, l2, p, true, PKT_PROTO_UDP, FRAME_UDP_HDR_LEN + dlen, out);
	wr16(out + l4, p->dport);
	wr16(out + l4 + 2, p->sport);
	wr16(out + l4 + 4, (uint16_t)(FRAME_UDP_HDR_LEN + dlen));
	wr16(out + l4 + 6, 0);
	frame_dns_put_refusal(out + l4 + FRAME_UDP_HDR_LEN, q, question, rcode, ede, text,
	    text_len);
	csum = frame_l4_csum(out + l2, p->family, PKT_PROTO_UDP, out + l4, FRAME_UDP_HDR_LEN + dlen);
	wr16(out + l4 + 6, csum == 0 ? 0xffff : csum);	/* 0 would mean "none" */
	return (int)n;
}

int
frame_dns_refusal_tcp(const uint8_t *in, size_t len, const struct pkt *p,
    const uint8_t *msg, size_t msg_len, const struct dns_msg *q, uint8_t rcode, bool ede,
    uint8_t *out, size_t cap)
{
	const uint8_t *question;
	size_t l2, l4, dlen, n;

	if (p->proto != PKT_PROTO_TCP || p->fragment || !(p->tcp_flags & PKT_TCP_ACK) ||
	    (p->tcp_flags & (PKT_TCP_SYN | PKT_TCP_RST)) ||
	    (l2 = frame_l2_len(in, len, p)) == 0 ||
	    (dlen = frame_dns_refusal_len(msg, msg_len, q, rcode, ede,
	    sizeof(FRAME_DNS_EDE_TEXT) - 1, &question)) == 0)
		return -1;
	n = l2 + frame_l3_len(p) + FRAME_TCP_HDR_LEN + 2 + dlen;
	if (n > cap)
		return -1;
	l4 = frame_put_hdrs(in, l2, p, true, PKT_PROTO_TCP, FRAME_TCP_HDR_LEN + 2 + dlen, out);
	frame_put_tcp(out + l4, p->dport, p->sport, p->ack, p->seq + frame_tcp_seg_len(p),
	    PKT_TCP_PSH | PKT_TCP_ACK, DP_TCP_WINDOW);
	wr16(out + l4 + FRAME_TCP_HDR_LEN, (uint16_t)dlen);	/* RFC 1035 s4.2.2 framing */
	frame_dns_put_refusal(out + l4 + FRAME_TCP_HDR_LEN + 2, q, question, rcode, ede,
	    FRAME_DNS_EDE_TEXT, sizeof(FRAME_DNS_EDE_TEXT) - 1);
	wr16(out + l4 + 16, frame_l4_csum(out + l2, p->family, PKT_PROTO_TCP, out + l4,
	    FRAME_TCP_HDR_LEN + 2 + dlen));
	return (int)n;
}

/*
 * The lengths (IPv4 total length and header checksum, or IPv6 payload length; UDP length)
 * then the UDP checksum over the pseudo-header (RFC 768; RFC 8200 s8.1) and the datagram,
 * in full: the payload changed too much for RFC 1624. A checksum the sender left at 0
 * ("none", IPv4) is computed all the same, which RFC 768 allows; a computed 0 is sent as
 * 0xffff. An IPv6 datagram with a routing header would need its final destination in the
 * pseudo-header: pkt_decode() hands over none, so the header's destination is used. Any
 * extension headers or IPv4 options between l3 and l4 are kept and counted.
 */
size_t
frame_udp_resize(uint8_t *l3, uint8_t family, uint8_t *l4, size_t payload_len)
{
	size_t udp_len = FRAME_UDP_HDR_LEN + payload_len;
	size_t ip_len = (size_t)(l4 - l3) + udp_len;
	uint16_t csum;

	if (family == 4) {
		size_t ihl = (size_t)(l3[0] & 0xf) * 4;

		wr16(l3 + 2, (uint16_t)ip_len);
		wr16(l3 + 10, 0);
		wr16(l3 + 10, frame_csum_fold(frame_csum_add(0, l3, ihl)));
	} else {
		wr16(l3 + 4, (uint16_t)(ip_len - FRAME_IPV6_HDR_LEN));
	}
	wr16(l4 + 4, (uint16_t)udp_len);
	wr16(l4 + 6, 0);
	csum = frame_l4_csum(l3, family, PKT_PROTO_UDP, l4, udp_len);
	wr16(l4 + 6, csum == 0 ? 0xffff : csum);
	return ip_len;
}

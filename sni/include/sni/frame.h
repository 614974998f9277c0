/*
 * frame: frames namegate sends on its own behalf (a DNS refusal, a TCP RST, an ICMP port
 * unreachable), the checksum arithmetic they and the DNS ID rewrite need, and the table of
 * addresses DNS may never bind. libc and sni/ only: no DPDK, no allocation, no logging, so
 * it runs on the packet path and in unit tests alike.
 *
 * Every builder takes the received frame in (len bytes, from the destination MAC) and the
 * struct pkt that pkt_decode() filled from it (its pointers alias in), and writes one whole
 * Ethernet frame into out (cap bytes). out must not overlap in. The builders return the
 * frame length, or -1 when they cannot or must not answer; on -1 nothing was written. The
 * frame keeps the input's VLAN tags (PCP and DEI included) and, for a reply, swaps the MACs.
 * IPv4 headers carry no options, ID 0 with DF (an atomic datagram, RFC 6864 s4.1), TTL 64;
 * IPv6 headers no extension headers, hop limit 64. Every checksum is computed in software.
 */
#ifndef SNI_FRAME_H
#define SNI_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sni/dns.h"
#include "sni/pkt.h"

#define FRAME_DNS_EDNS_UDP_SIZE	1232	/* DNS flag day 2020 */
#define FRAME_DNS_EDE_OPTION	15	/* RFC 8914 s2 */
#define FRAME_DNS_EDE_BLOCKED	15	/* RFC 8914 s4.16 */
#define FRAME_DNS_EDE_TEXT		"blocked by namegate policy"
#define FRAME_DNS_EDE_TEXT_MAX		128	/* longer texts are refused */

#define FRAME_ICMP4_QUOTE_TOTAL	576	/* RFC 1812 s4.3.2.3: whole ICMP datagram */
#define FRAME_ICMP6_QUOTE_TOTAL	1280	/* RFC 4443 s2.4(c): IPv6 minimum MTU */

/*
 * One's-complement arithmetic (RFC 1071). Sums are of big-endian 16-bit words, held in host
 * order, so the result is stored with a big-endian write whatever the CPU.
 */

/*
 * Add len bytes at buf to the running sum and return it folded to 16 bits. A trailing odd
 * byte counts as the high half of a word (RFC 1071 s4.1), so every chunk but the last must
 * have an even length. Start from 0.
 */
uint32_t frame_csum_add(uint32_t sum, const void *buf, size_t len);

/* Fold the carries of sum and complement it: the value for a checksum field. */
uint16_t frame_csum_fold(uint32_t sum);

/*
 * The checksum csum after one 16-bit word of the data changes from old to new (RFC 1624
 * eqn 3, HC' = ~(~HC + ~m + m')). It equals a full recomputation bit for bit unless the new
 * data is all zeroes. It knows nothing of UDP's "0 means none"; see frame_dns_rewrite_id().
 */
uint16_t frame_csum_update16(uint16_t csum, uint16_t old, uint16_t new);

/*
 * Replace the ID of the DNS message at dns (inside the UDP datagram whose header is at
 * udp_hdr, any byte offset) with new_id and patch the UDP checksum to match. A checksum of
 * 0 ("none", IPv4 only: RFC 768) stays 0; a result of 0 is sent as 0xffff (RFC 768, RFC 8200
 * s8.1). Returns the old ID.
 */
uint16_t frame_dns_rewrite_id(uint8_t *udp_hdr, uint8_t *dns, uint16_t new_id);

/* The same for a DNS message inside a TCP segment (header at tcp_hdr): there, 0 is a value. */
uint16_t frame_dns_rewrite_id_tcp(uint8_t *tcp_hdr, uint8_t *dns, uint16_t new_id);

/*
 * frame_dns_rewrite_id() of a DNS message right behind its UDP header (at dns - 8), which
 * puts the ID at an even offset of the summed data: no byte swap to choose, and inline,
 * where every forwarded query and answer paid a call twice its body. With it one of the
 * header's ports, port (dns - 8 the source, dns - 6 the destination), is set to new_port:
 * a query leaves from namegate's port, its answer goes back to the VM's, and the checksum
 * is patched once for both. The old values are not returned. The checksum is patched as
 * memory holds it (RFC 1624 eqn 3 on words loaded whole: a sum of swapped words is the
 * swapped sum, RFC 1071 s2(B)).
 */
static inline void
frame_dns_udp_set_id_port(uint8_t *dns, uint16_t new_id, uint8_t *port, uint16_t new_port)
{
	uint8_t *csum_at = dns - 8 + 6;
	const uint8_t id[2] = { (uint8_t)(new_id >> 8), (uint8_t)new_id };
	const uint8_t pt[2] = { (uint8_t)(new_port >> 8), (uint8_t)new_port };
	uint16_t old, put, old_port, put_port, csum;
	uint32_t sum;

	memcpy(&old, dns, 2);
	memcpy(&put, id, 2);
	memcpy(&old_port, port, 2);
	memcpy(&put_port, pt, 2);
	memcpy(&csum, csum_at, 2);
	memcpy(dns, id, 2);
	memcpy(port, pt, 2);
	if (csum == 0)		/* none to keep right (IPv4, RFC 768) */
		return;
	sum = (uint32_t)(uint16_t)~csum + (uint16_t)~old + put + (uint16_t)~old_port + put_port;
	sum = (sum & 0xffff) + (sum >> 16);
	csum = (uint16_t)~(sum + (sum >> 16));
	if (csum == 0)
		csum = 0xffff;	/* a result of 0 is sent as all ones (RFC 768, RFC 8200 s8.1) */
	memcpy(csum_at, &csum, 2);
}

/*
 * dns_msg_spell() the DNS message at dns (len bytes, inside the UDP datagram whose header
 * is at udp_hdr, any byte offset) and patch the UDP checksum to match, as
 * frame_dns_rewrite_id() does: all-zero caps send a question in lower case, the caps of the
 * client's own question give its answer the client's spelling back.
 */
void frame_dns_spell(uint8_t *udp_hdr, uint8_t *dns, size_t len, size_t qname_len,
    const uint8_t caps[DNS_CASE_BYTES]);

/*
 * Recompute the checksum of the TCP segment at tcp (tcp_len bytes, header included, behind
 * the IP header at ip) after its payload was changed in place.
 */
void frame_tcp_csum_set(uint8_t *ip, uint8_t family, uint8_t *tcp, size_t tcp_len);

/*
 * A UDP datagram whose DNS payload changed length: set the UDP length, the IPv4 total
 * length and header checksum or the IPv6 payload length, and recompute the UDP checksum
 * (over the new payload). l3 is the IP header (family 4 or 6), l4 the UDP header;
 * payload_len the new DNS length. The checksum is computed in full with the pseudo-header,
 * also where the sender left 0 ("none"); a computed 0 is sent as 0xffff (RFC 768). Returns
 * the new IP datagram length.
 */
size_t frame_udp_resize(uint8_t *l3, uint8_t family, uint8_t *l4, size_t payload_len);

/*
 * DNS refusal (SPEC s4 step 2): the answer namegate gives in place of the resolver the VM
 * asked, from that resolver's address and port. Header: the query's ID, opcode and RD;
 * QR=1, RA=1, AA=TC=AD=CD=0; rcode (<= 15, e.g. DNS_RCODE_REFUSED, DNS_RCODE_NXDOMAIN).
 * Question: the query's own bytes, so a 0x20 mixed-case name comes back as sent, when
 * q->has_question; none (QDCOUNT 0) otherwise. No answers or authority. With ede (pass
 * q->edns: RFC 6891 s7 forbids an OPT in the answer to a query without one), one OPT RR
 * (UDP size 1232, DO=0) holding an Extended DNS Error (RFC 8914) INFO-CODE 15 "Blocked",
 * EXTRA-TEXT FRAME_DNS_EDE_TEXT.
 *
 * q is dns_msg_parse() of p->payload. Returns -1 for a non-UDP p, a response (q->qr: never
 * answer an answer), rcode > 15, or a q that does not fit the payload.
 */
int frame_dns_refusal(const uint8_t *in, size_t len, const struct pkt *p,
    const struct dns_msg *q, uint8_t rcode, bool ede, uint8_t *out, size_t cap);

/* The same with text (NUL-terminated, at most FRAME_DNS_EDE_TEXT_MAX bytes) as EXTRA-TEXT. */
int frame_dns_refusal_text(const uint8_t *in, size_t len, const struct pkt *p,
    const struct dns_msg *q, uint8_t rcode, bool ede, const char *text, uint8_t *out,
    size_t cap);

/*
 * The same refusal over TCP (RFC 7766): one segment, PSH|ACK, from the resolver side, no
 * options, window 65535, carrying one 2-byte-length-framed message. seq = SEG.ACK (what the
 * VM expects next from the resolver), ack = SEG.SEQ + SEG.LEN: the whole query segment,
 * every message in it and a FIN if set, is acknowledged. msg (msg_len bytes) is the
 * message q was parsed from, as dns_tcp_next() split it off p->payload.
 *
 * Returns -1 as the UDP form does, and for a segment without ACK or with SYN or RST (no
 * synchronized connection to answer in). The real resolver never sees the query nor
 * learns of this answer, so the two directions are out of step with it afterwards: the
 * caller should end the connection toward the resolver (frame_tcp_rst_to_dst() with
 * seg_forwarded false) and forward nothing more on it.
 */
int frame_dns_refusal_tcp(const uint8_t *in, size_t len, const struct pkt *p,
    const uint8_t *msg, size_t msg_len, const struct dns_msg *q, uint8_t rcode, bool ede,
    uint8_t *out, size_t cap);

/*
 * RST to the sender of p, as its peer would send it from a closed port (RFC 9293
 * s3.10.7.1): if the segment has ACK, <SEQ=SEG.ACK><CTL=RST>; otherwise
 * <SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK>, SEG.LEN counting the payload, SYN and FIN.
 * Either is exactly what the sender's RFC 5961 checks accept: SEG.ACK is its RCV.NXT, and
 * SEG.SEQ+SEG.LEN its SND.NXT in SYN-SENT. Window 0, no options, no payload.
 * Returns -1 for a non-TCP p and for an RST (RFC 9293: never answer an RST).
 */
int frame_tcp_rst(const uint8_t *in, size_t len, const struct pkt *p, uint8_t *out,
    size_t cap);

/*
 * RST toward the receiver of p (the server), in p's direction and as if p's sender had
 * sent it: same MACs, addresses and ports as p. The server takes an RST in a synchronized
 * state only if its sequence number is exactly RCV.NXT (RFC 5961 s3.2; Linux does), and
 * answers any other in-window one with a challenge ACK. So the sequence number depends on
 * whether p itself reached the server:
 *   seg_forwarded false (namegate dropped p, e.g. the ClientHello it judged): SEG.SEQ;
 *   seg_forwarded true (p went through before the verdict): SEG.SEQ + SEG.LEN.
 * Either holds only if everything before p reached the server in order; a verdict on an
 * out-of-order segment gets a challenge ACK instead, which the caller sees coming back.
 * With ACK in p: RST|ACK, ack = SEG.ACK (as Linux aborts; the ACK field of an RST is not
 * checked in synchronized states); without: RST, ack 0. Window 0.
 * Returns -1 for a non-TCP p and for an RST.
 */
int frame_tcp_rst_to_dst(const uint8_t *in, size_t len, const struct pkt *p,
    bool seg_forwarded, uint8_t *out, size_t cap);

/*
 * p's segment without its payload, onward to its receiver: the same headers and options
 * (a TCP Fast Open SYN keeps its cookie), lengths and checksums made good. The receiver
 * acknowledges none of the data, so the sender sends it again after the handshake, when
 * it can be held and judged like any other. Returns -1 for a non-TCP p, a fragment, or one
 * without payload.
 */
int frame_tcp_strip(const uint8_t *in, size_t len, const struct pkt *p, uint8_t *out,
    size_t cap);

/*
 * p's segment onward with only its first keep payload bytes (at most all it has), as its
 * sender could have sent them: the same headers and options, lengths and checksums made
 * good, no FIN. A slow writer's unjudged bytes go on this way, all but the last, so that
 * the receiver acknowledges them and the sender's window moves while the verdict waits
 * for that last byte. Returns -1 for a non-TCP p, a fragment, or keep > its payload.
 */
int frame_tcp_prefix(const uint8_t *in, size_t len, const struct pkt *p, size_t keep,
    uint8_t *out, size_t cap);

/*
 * Sequence number modulation (what pf calls modulate state) of one stream, in place: the
 * TCP segment at tcp (its header, options included, hdr_len bytes, within the frame)
 * carries that stream's numbers either as its sequence number (its sender's stream) or as
 * its acknowledgement and the edges of its SACK blocks (RFC 2018; the other direction).
 * frame_tcp_seq_add() adds delta to the first, frame_tcp_ack_add() to the second (SACK
 * blocks up to an option whose length does not fit, where a receiver stops reading too).
 * The checksum is patched (RFC 1624), so that a wrong one stays wrong.
 */
void frame_tcp_seq_add(uint8_t *tcp, uint32_t delta);
void frame_tcp_ack_add(uint8_t *tcp, size_t hdr_len, uint32_t delta);

/*
 * ICMP port unreachable back to the sender of p, from p's destination: IPv4 type 3 code 3
 * quoting the offending IP packet (header and options included, link padding not) up to a
 * 576-byte ICMP datagram (RFC 1812 s4.3.2.3; always more than the header + 8 bytes it
 * requires); IPv6 type 1 code 4 quoting it up to a 1280-byte packet (RFC 4443 s2.4(c)).
 * p must be TCP or UDP. Returns -1 for anything else, a fragment (pkt_decode cannot tell a
 * first one from the rest), and where RFC 1122 s3.2.2 / RFC 4443 s2.4(e,f) forbid an
 * error: a destination in 224/3 (multicast, class E, broadcast) or ff00::/8, a source in
 * 0/8, 127/8, 224/3, ::, ::1 or ff00::/8.
 */
int frame_icmp_unreach(const uint8_t *in, size_t len, const struct pkt *p, uint8_t *out,
    size_t cap);

#define FRAME_EMBEDDED_V4_MAX	4	/* what frame_addr_embedded_v4() finds at most */

/*
 * The IPv4 addresses the IPv6 address a6 (16 bytes) leads a host to: IPv4-mapped
 * ::ffff:0:0/96 (a dual-stack socket), IPv4-compatible ::/96, NAT64 64:ff9b::/96 and
 * 64:ff9b:1::/48 (RFC 8215: every RFC 6052 layout a prefix of 48 to 96 bits gives), 6to4
 * 2002::/16, Teredo 2001::/32 (server and client). Up to max into out; the count.
 */
size_t frame_addr_embedded_v4(const uint8_t *a6, uint8_t out[][4], size_t max);

/*
 * True for an address DNS must never bind (SPEC s4 step 3, anti-rebinding): IPv4 0/8,
 * 127/8, 169.254/16, 224/4, 255.255.255.255; IPv6 ::, ::1, fe80::/10, ff00::/8, and
 * every IPv6 address that embeds one of the IPv4 ones (frame_addr_embedded_v4()). addr holds 4 bytes for family 4, 16
 * for 6; any other family is true (never bind what we cannot classify). Whether addr is
 * one of a VM's own addresses is the caller's check, as is an address pattern that allows
 * one of these anyway.
 */
bool frame_addr_rebind(uint8_t family, const uint8_t *addr);

#endif

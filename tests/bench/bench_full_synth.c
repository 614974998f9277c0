/*
 * bench_full's made-up frames: a DNS lookup (query and answer) that binds a connection's
 * host to its server for its VM, and TCP handshake segments for flows a capture shows only
 * in mid-stream. Every frame is whole, with right lengths and checksums, as a VM's stack
 * and a resolver would send it. Also bench_bind_missing(): the capture's connections whose
 * VM did not resolve their host within the capture get such a lookup just before the SYN,
 * so that each VM resolves what it connects to (SPEC s4 steps 3-5, sni_binding strict).
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "bench_full.h"
#include "sni/dns.h"
#include "sni/frame.h"
#include "sni/pkt.h"
#include "sni/tls.h"

#define BENCH_FRAME_MAX		1600
#define BENCH_BOUND_SLOTS	(1u << 20)	/* (VM, name, address) triples remembered */
#define BENCH_HOST_LOOKAHEAD	4000		/* frames a SYN's first data may be behind it */

static const uint8_t bench_res4[4] = { 1, 1, 1, 1 };
static const uint8_t bench_res6[16] = { 0x26, 0x06, 0x47, 0x00, 0x47, 0x00, [14] = 0x11, 0x11 };

static void
bench_wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void
bench_wr32(uint8_t *p, uint32_t v)
{
	bench_wr16(p, (uint16_t)(v >> 16));
	bench_wr16(p + 2, (uint16_t)v);
}

/*
 * An IP header at ip for l4_len bytes of proto from src to dst; returns its length. IPv4:
 * no options, DF, TTL 64, header checksum set.
 */
static size_t
bench_ip(uint8_t *ip, uint8_t family, const uint8_t *src, const uint8_t *dst, uint8_t proto,
    size_t l4_len)
{
	if (family == 6) {
		memset(ip, 0, 40);
		ip[0] = 0x60;
		bench_wr16(ip + 4, (uint16_t)l4_len);
		ip[6] = proto;
		ip[7] = 64;
		memcpy(ip + 8, src, 16);
		memcpy(ip + 24, dst, 16);
		return 40;
	}
	memset(ip, 0, 20);
	ip[0] = 0x45;
	bench_wr16(ip + 2, (uint16_t)(20 + l4_len));
	ip[6] = 0x40;
	ip[8] = 64;
	ip[9] = proto;
	memcpy(ip + 12, src, 4);
	memcpy(ip + 16, dst, 4);
	bench_wr16(ip + 10, frame_csum_fold(frame_csum_add(0, ip, 20)));
	return 20;
}

/* tmpl's Ethernet header and tags into out, the MACs swapped for a reply; its length. */
static size_t
bench_l2(uint8_t *out, const struct bench_frame *tmpl, const struct pkt *p, bool reply)
{
	memcpy(out, tmpl->data, p->l3_off);
	if (reply) {
		memcpy(out, tmpl->data + 6, 6);
		memcpy(out + 6, tmpl->data, 6);
	}
	return p->l3_off;
}

/* host as an uncompressed, lower-cased wire name at out; its length, 0 if it does not fit. */
static size_t
bench_wire_name(const char *host, uint8_t *out, size_t cap)
{
	size_t n = 0;

	while (*host != '\0') {
		size_t l = strcspn(host, ".");

		if (l == 0 || l > 63 || n + l + 2 > cap)
			return 0;
		out[n++] = (uint8_t)l;
		for (size_t i = 0; i < l; i++)
			out[n++] = (uint8_t)tolower((unsigned char)host[i]);
		host += l + (host[l] == '.');
	}
	out[n++] = 0;
	return n;
}

/* A DNS message at out: query, or an answer with one A/AAAA record of addr. Its length. */
static size_t
bench_dns_msg(uint8_t *out, uint16_t id, const uint8_t *qname, size_t qlen, uint8_t family,
    const uint8_t *addr)
{
	size_t n = 12, alen = family == 4 ? 4 : 16;

	memset(out, 0, 12);
	bench_wr16(out, id);
	bench_wr16(out + 2, addr != NULL ? 0x8180 : 0x0100);
	bench_wr16(out + 4, 1);
	bench_wr16(out + 6, addr != NULL ? 1 : 0);
	memcpy(out + n, qname, qlen);
	n += qlen;
	bench_wr16(out + n, family == 4 ? DNS_TYPE_A : DNS_TYPE_AAAA);
	bench_wr16(out + n + 2, DNS_CLASS_IN);
	n += 4;
	if (addr == NULL)
		return n;
	bench_wr16(out + n, 0xc00c);	/* the question's name */
	bench_wr16(out + n + 2, family == 4 ? DNS_TYPE_A : DNS_TYPE_AAAA);
	bench_wr16(out + n + 4, DNS_CLASS_IN);
	bench_wr32(out + n + 6, 3600);
	bench_wr16(out + n + 10, (uint16_t)alen);
	memcpy(out + n + 12, addr, alen);
	return n + 12 + alen;
}

/*
 * Add a lookup of host by tmpl's VM (tmpl: a frame it sent, to the server host resolves
 * to): a query with ID qid from UDP port port to the resolver of tmpl's family, then the
 * resolver's answer binding tmpl's destination. 0, or -1.
 */
int
bench_synth_dns(struct bench_trace *t, const struct bench_frame *tmpl, const char *host,
    uint16_t qid, uint16_t port)
{
	uint8_t frame[BENCH_FRAME_MAX], qname[DNS_NAME_WIRE_MAX], server[16];
	const struct bench_frame *tf = tmpl;
	struct bench_frame copy = *tmpl;
	const uint8_t *res;
	struct pkt p;
	size_t qlen = bench_wire_name(host, qname, sizeof(qname));

	if (qlen == 0 || pkt_decode(tf->data, tf->len, &p) != PKT_OK)
		return -1;
	res = p.family == 4 ? bench_res4 : bench_res6;
	memcpy(server, p.dst, sizeof(server));
	for (int answer = 0; answer < 2; answer++) {
		size_t l2 = bench_l2(frame, &copy, &p, answer), ip, dns;
		uint8_t *udp;

		/* the IP header is written once its payload's length is known */
		ip = p.family == 4 ? 20 : 40;
		udp = frame + l2 + ip;
		dns = bench_dns_msg(udp + 8, qid, qname, qlen, p.family, answer ? server : NULL);
		bench_wr16(udp, answer ? 53 : port);
		bench_wr16(udp + 2, answer ? port : 53);
		bench_ip(frame + l2, p.family, answer ? res : p.src, answer ? p.src : res,
		    PKT_PROTO_UDP, 8 + dns);
		frame_udp_resize(frame + l2, p.family, udp, dns);
		if (bench_trace_add(t, frame, l2 + ip + 8 + dns) == NULL)
			return -1;
	}
	return 0;
}

/*
 * Add a TCP segment without payload on tmpl's connection (tmpl: a VM-side TCP frame),
 * from the server when reply. SYNs carry MSS and window scale (VM 7, server 14), so that
 * a flow replayed many times never outruns the window it was given.
 */
int
bench_synth_tcp(struct bench_trace *t, const struct bench_frame *tmpl, bool reply,
    uint8_t flags, uint32_t seq, uint32_t ack)
{
	return bench_synth_tcp_data(t, tmpl, reply, flags, seq, ack, 0);
}

/* The same with len bytes of payload (zeros: what they say is nobody's business here). */
int
bench_synth_tcp_data(struct bench_trace *t, const struct bench_frame *tmpl, bool reply,
    uint8_t flags, uint32_t seq, uint32_t ack, size_t len)
{
	uint8_t frame[BENCH_FRAME_MAX], *tcp;
	struct bench_frame copy = *tmpl;
	size_t l2, ip, hlen = (flags & PKT_TCP_SYN) ? 28 : 20;
	struct pkt p;

	if (pkt_decode(copy.data, copy.len, &p) != PKT_OK || p.proto != PKT_PROTO_TCP)
		return -1;
	l2 = bench_l2(frame, &copy, &p, reply);
	if (l2 + 60 + hlen + len > sizeof(frame))
		return -1;
	ip = bench_ip(frame + l2, p.family, reply ? p.dst : p.src, reply ? p.src : p.dst,
	    PKT_PROTO_TCP, hlen + len);
	tcp = frame + l2 + ip;
	memset(tcp, 0, hlen + len);
	bench_wr16(tcp, reply ? p.dport : p.sport);
	bench_wr16(tcp + 2, reply ? p.sport : p.dport);
	bench_wr32(tcp + 4, seq);
	bench_wr32(tcp + 8, ack);
	tcp[12] = (uint8_t)(hlen / 4 << 4);
	tcp[13] = flags;
	bench_wr16(tcp + 14, 65535);
	if (flags & PKT_TCP_SYN) {
		memcpy(tcp + 20, (const uint8_t[]){ 2, 4, 0x05, 0xb4, 1, 3, 3, reply ? 14 : 7 }, 8);
	}
	frame_tcp_csum_set(frame + l2, p.family, tcp, hlen + len);
	return bench_trace_add(t, frame, l2 + ip + hlen + len) != NULL ? 0 : -1;
}

/*
 * The host connection flow goes to, from its VM's first data at or after frame first: the
 * SNI of its ClientHello (one or two segments) or its HTTP request's Host. 0 and host
 * (NUL-terminated), or -1.
 */
int
bench_host_of(const struct bench_trace *t, uint32_t first, uint32_t flow, char *host,
    size_t cap)
{
	static uint8_t stream[4096], scratch[TLS_HELLO_MAX];
	size_t len = 0;
	struct tls_hello h;
	struct pkt p;

	for (uint32_t i = first; i < t->n && i - first < BENCH_HOST_LOOKAHEAD; i++) {
		const struct bench_frame *f = &t->f[i];
		enum sni_status st;
		const char *hdr, *end;

		if (f->side != BENCH_VM || f->flow != flow ||
		    pkt_decode(f->data, f->len, &p) != PKT_OK || p.payload_len == 0)
			continue;
		if (len + p.payload_len > sizeof(stream))
			return -1;
		memcpy(stream + len, p.payload, p.payload_len);
		len += p.payload_len;
		st = tls_hello_parse(stream, len, scratch, sizeof(scratch), &h);
		if (st == SNI_FOUND && h.sni.len < cap) {
			memcpy(host, h.sni.p, h.sni.len);
			host[h.sni.len] = '\0';
			return 0;
		}
		if (st == SNI_NEED_MORE)
			continue;
		stream[len < sizeof(stream) ? len : sizeof(stream) - 1] = '\0';
		if ((hdr = strstr((const char *)stream, "\r\nHost: ")) == NULL)
			return -1;
		hdr += 8;
		end = hdr + strcspn(hdr, "\r\n:");
		if ((size_t)(end - hdr) >= cap)
			return -1;
		memcpy(host, hdr, (size_t)(end - hdr));
		host[end - hdr] = '\0';
		return 0;
	}
	return -1;
}

/* The (VM address, wire name, bound address) triple's hash; never 0. */
static uint64_t
bench_bound_key(const uint8_t *vm, const uint8_t *name, size_t len, const uint8_t *addr)
{
	uint64_t h = 14695981039346656037ull;

	for (int i = 0; i < 16; i++)
		h = (h ^ vm[i]) * 1099511628211ull;
	for (size_t i = 0; i < len; i++)
		h = (h ^ name[i]) * 1099511628211ull;
	for (int i = 0; i < 16; i++)
		h = (h ^ addr[i]) * 1099511628211ull;
	return h | 1;
}

/* Remember key in set (open addressing); true if it was there already. */
static bool
bench_bound_put(uint64_t *set, uint64_t key)
{
	for (uint32_t i = (uint32_t)key & (BENCH_BOUND_SLOTS - 1);; i = (i + 1) & (BENCH_BOUND_SLOTS - 1)) {
		if (set[i] == key)
			return true;
		if (set[i] == 0) {
			set[i] = key;
			return false;
		}
	}
}

/* What answer a binds, by the chain from its question: into set. */
static void
bench_bound_answer(uint64_t *set, const struct bench_frame *a)
{
	struct dns_msg m;
	struct pkt p;

	if (pkt_decode(a->data, a->len, &p) != PKT_OK ||
	    dns_msg_parse(p.payload, p.payload_len, &m) != DNS_OK || !m.has_question)
		return;
	for (unsigned int i = 0; i < m.nb_addrs; i++) {
		uint8_t addr[16] = { 0 };

		memcpy(addr, m.addrs[i].addr, m.addrs[i].family == 4 ? 4 : 16);
		bench_bound_put(set, bench_bound_key(p.dst, m.qname, m.qname_len, addr));
	}
}

/* Is f a SYN from a VM to a port where its host is judged (TLS 443, HTTP 80)? */
static bool
bench_is_syn(const struct bench_frame *f, struct pkt *p)
{
	return f->side == BENCH_VM && f->proto == PKT_PROTO_TCP &&
	    pkt_decode(f->data, f->len, p) == PKT_OK &&
	    (p->tcp_flags & (PKT_TCP_SYN | PKT_TCP_ACK)) == PKT_TCP_SYN &&
	    (p->dport == 443 || p->dport == 80);
}

/*
 * Before each SYN whose VM has not, earlier in the trace, resolved the connection's host
 * to its server, insert that lookup. Returns how many were added, or -1.
 */
int
bench_bind_missing(struct bench_trace *t)
{
	struct bench_trace out = { 0 };
	uint64_t *set = calloc(BENCH_BOUND_SLOTS, sizeof(*set));
	uint8_t qname[DNS_NAME_WIRE_MAX];
	char host[SNI_HOST_MAX + 1];
	int added = 0;

	if (set == NULL)
		return -1;
	for (uint32_t i = 0; i < t->n; i++) {
		struct bench_frame *f = &t->f[i];
		struct pkt p;
		size_t qlen;

		if (f->kind == BF_ANSWER)
			bench_bound_answer(set, f);
		if (bench_is_syn(f, &p) && bench_host_of(t, i + 1, f->flow, host, sizeof(host)) == 0 &&
		    (qlen = bench_wire_name(host, qname, sizeof(qname))) != 0 &&
		    !bench_bound_put(set, bench_bound_key(p.src, qname, qlen, p.dst))) {
			if (bench_synth_dns(&out, f, host, (uint16_t)(0x4000 + added),
			    (uint16_t)(20000 + added % 30000)) != 0)
				goto fail;
			added++;
		}
		/* the frame itself moves over, its data with it */
		if (bench_trace_add(&out, f->data, f->len) == NULL)
			goto fail;
	}
	free(set);
	bench_trace_free(t);
	*t = out;
	bench_trace_link_answers(t);
	return added;
fail:
	free(set);
	bench_trace_free(&out);
	return -1;
}

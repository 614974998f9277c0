/*
 * frame_check: frame building and checking shared by the frame unit tests; see
 * frame_check.h.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "sni/frame.h"
#include "frame_check.h"

static const uint8_t vm_mac[6] = { 0x52, 0x54, 0x00, 0x10, 0x00, 0x01 };
static const uint8_t gw_mac[6] = { 0x02, 0x00, 0x00, 0xee, 0xee, 0x01 };
static const uint8_t vm4[4] = { 10, 10, 0, 11 };
static const uint8_t srv4[4] = { 192, 0, 2, 10 };
static const uint8_t vm6[16] = { 0xfd, 0, 0, 0x10, 0, 0x10, [15] = 0x11 };
static const uint8_t srv6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 0x10 };

void
fc_w16(uint8_t *b, uint16_t v)
{
	b[0] = (uint8_t)(v >> 8);
	b[1] = (uint8_t)v;
}

void
fc_w32(uint8_t *b, uint32_t v)
{
	fc_w16(b, (uint16_t)(v >> 16));
	fc_w16(b + 2, (uint16_t)v);
}

uint16_t
fc_r16(const uint8_t *b)
{
	return (uint16_t)(b[0] << 8 | b[1]);
}

uint32_t
fc_r32(const uint8_t *b)
{
	return (uint32_t)fc_r16(b) << 16 | fc_r16(b + 2);
}

uint32_t
fc_rnd(uint64_t *rng)
{
	*rng ^= *rng >> 12;
	*rng ^= *rng << 25;
	*rng ^= *rng >> 27;
	return (uint32_t)((*rng * 0x2545f4914f6cdd1dull) >> 32);
}

/* Byte by byte, weighted by position, folded once at the end: too plain to share a bug. */
uint16_t
fc_ref_sum(const uint8_t *b, size_t n, uint64_t acc)
{
	for (size_t i = 0; i < n; i++)
		acc += (i & 1) ? b[i] : (uint64_t)b[i] << 8;
	while (acc > 0xffff)
		acc = (acc >> 16) + (acc & 0xffff);
	return (uint16_t)acc;
}

uint64_t
fc_ref_pseudo(const uint8_t *ip, uint8_t family, uint8_t proto, size_t l4_len)
{
	if (family == 4)
		return fc_ref_sum(ip + 12, 8, 0) + (uint64_t)proto + l4_len;
	return fc_ref_sum(ip + 8, 32, 0) + (uint64_t)proto + (l4_len >> 16) + (l4_len & 0xffff);
}

uint16_t
fc_ref_csum(const uint8_t *b, size_t n, uint64_t pseudo)
{
	return (uint16_t)~fc_ref_sum(b, n, pseudo);
}

void
fc_frame_build(struct fc_frame *f, const struct fc_frame_spec *s)
{
	const uint8_t *src = s->src ? s->src : s->family == 4 ? vm4 : vm6;
	const uint8_t *dst = s->dst ? s->dst : s->family == 4 ? srv4 : srv6;
	uint8_t *b = f->b, *ip, *l4;
	size_t n, l4_hdr, l4_len, ext = 0, iphl;

	memset(f, 0, sizeof(*f));
	memcpy(b, gw_mac, 6);
	memcpy(b + 6, vm_mac, 6);
	n = 12;
	if (s->tags == 2) {
		fc_w16(b + n, 0x88a8);
		fc_w16(b + n + 2, 0x0064);		/* S-VLAN 100 */
		n += 4;
	}
	if (s->tags >= 1) {
		fc_w16(b + n, 0x8100);
		fc_w16(b + n + 2, 0xb00a);		/* PCP 5, DEI 1, VLAN 10 */
		n += 4;
	}
	fc_w16(b + n, s->family == 4 ? 0x0800 : 0x86dd);
	f->l2 = n += 2;
	ip = b + n;
	l4_hdr = s->proto == PKT_PROTO_TCP ? 20 : s->proto == PKT_PROTO_UDP ? 8 : 0;
	l4_len = l4_hdr + s->payload_len;
	if (s->family == 4) {
		iphl = 20 + 4 * (size_t)s->ip_opts;
		ip[0] = (uint8_t)(0x40 | iphl / 4);
		fc_w16(ip + 2, (uint16_t)(iphl + l4_len));
		fc_w16(ip + 4, 0x1234);
		fc_w16(ip + 6, s->mf ? 0x2000 : 0);
		ip[8] = 63;
		ip[9] = s->proto;
		memcpy(ip + 12, src, 4);
		memcpy(ip + 16, dst, 4);
		memset(ip + 20, 1, iphl - 20);		/* NOPs */
		fc_w16(ip + 10, fc_ref_csum(ip, iphl, 0));
	} else {
		ext = s->ip_opts ? 8 : 0;
		iphl = 40 + ext;
		fc_w32(ip, 0x6a012345);			/* traffic class, flow label set */
		fc_w16(ip + 4, (uint16_t)(ext + l4_len));
		ip[6] = ext ? 0 : s->proto;
		ip[7] = 63;
		memcpy(ip + 8, src, 16);
		memcpy(ip + 24, dst, 16);
		if (ext) {				/* hop-by-hop, PadN */
			static const uint8_t hbh[6] = { 0, 0, 1, 4, 0, 0 };

			memcpy(ip + 40, hbh, 6);
			ip[40] = s->proto;
		}
	}
	n += iphl;
	l4 = b + n;
	f->l4 = n;
	if (s->proto == PKT_PROTO_TCP) {
		fc_w16(l4, s->sport);
		fc_w16(l4 + 2, s->dport);
		fc_w32(l4 + 4, s->seq);
		fc_w32(l4 + 8, s->ack);
		l4[12] = 0x50;
		l4[13] = s->flags;
		fc_w16(l4 + 14, 0x7210);
	} else if (s->proto == PKT_PROTO_UDP) {
		fc_w16(l4, s->sport);
		fc_w16(l4 + 2, s->dport);
		fc_w16(l4 + 4, (uint16_t)l4_len);
	}
	if (s->payload_len)
		memcpy(l4 + l4_hdr, s->payload, s->payload_len);
	if (s->proto == PKT_PROTO_TCP) {
		fc_w16(l4 + 16, fc_ref_csum(l4, l4_len,
		    fc_ref_pseudo(ip, s->family, s->proto, l4_len)));
	} else if (s->proto == PKT_PROTO_UDP) {
		uint16_t c = fc_ref_csum(l4, l4_len,
		    fc_ref_pseudo(ip, s->family, s->proto, l4_len));

		fc_w16(l4 + 6, c ? c : 0xffff);
	}
	n += l4_len + s->pad;
	assert_true(n <= FC_FRAME_MAX);
	f->len = n;
	f->st = pkt_decode(f->b, f->len, &f->p);
	if ((s->proto == PKT_PROTO_TCP || s->proto == PKT_PROTO_UDP) && !s->mf)
		assert_int_equal(f->st, PKT_OK);
}

size_t
fc_check_frame(const struct fc_frame *in, const uint8_t *out, size_t n, bool reply,
    uint8_t proto, struct pkt *op)
{
	const uint8_t *ip = out + in->l2, *l4;
	const uint8_t *src = reply ? in->p.dst : in->p.src, *dst = reply ? in->p.src : in->p.dst;
	size_t hl, l4_len;

	if (reply) {
		assert_memory_equal(out, in->b + 6, 6);
		assert_memory_equal(out + 6, in->b, 6);
	} else {
		assert_memory_equal(out, in->b, 12);
	}
	assert_memory_equal(out + 12, in->b + 12, in->l2 - 12);
	if (in->p.family == 4) {
		hl = 20;
		assert_int_equal(ip[0], 0x45);
		assert_int_equal(ip[1], 0);
		assert_int_equal(fc_r16(ip + 2), n - in->l2);
		assert_int_equal(fc_r16(ip + 4), 0);
		assert_int_equal(fc_r16(ip + 6), 0x4000);
		assert_int_equal(ip[8], 64);
		assert_int_equal(ip[9], proto);
		assert_int_equal(fc_ref_sum(ip, 20, 0), 0xffff);
		assert_memory_equal(ip + 12, src, 4);
		assert_memory_equal(ip + 16, dst, 4);
	} else {
		hl = 40;
		assert_int_equal(fc_r32(ip), 0x60000000);
		assert_int_equal(fc_r16(ip + 4), n - in->l2 - 40);
		assert_int_equal(ip[6], proto);
		assert_int_equal(ip[7], 64);
		assert_memory_equal(ip + 8, src, 16);
		assert_memory_equal(ip + 24, dst, 16);
	}
	l4 = ip + hl;
	l4_len = n - in->l2 - hl;
	if (proto == FC_PROTO_ICMP)
		assert_int_equal(fc_ref_sum(l4, l4_len, 0), 0xffff);
	else
		assert_int_equal(fc_ref_sum(l4, l4_len,
		    fc_ref_pseudo(ip, in->p.family, proto, l4_len)), 0xffff);
	if (proto == PKT_PROTO_UDP)
		assert_int_not_equal(fc_r16(l4 + 6), 0);

	assert_int_equal(pkt_decode(out, n, op),
	    proto == PKT_PROTO_TCP || proto == PKT_PROTO_UDP ? PKT_OK : PKT_OTHER);
	assert_int_equal(op->vlan, in->p.vlan);
	assert_int_equal(op->family, in->p.family);
	assert_int_equal(op->proto, proto);
	assert_false(op->fragment);
	assert_memory_equal(op->src, src, 16);
	assert_memory_equal(op->dst, dst, 16);
	assert_memory_equal(op->src_mac, reply ? in->p.dst_mac : in->p.src_mac, 6);
	assert_memory_equal(op->dst_mac, reply ? in->p.src_mac : in->p.dst_mac, 6);
	if (proto == PKT_PROTO_TCP || proto == PKT_PROTO_UDP) {
		assert_int_equal(op->sport, reply ? in->p.dport : in->p.sport);
		assert_int_equal(op->dport, reply ? in->p.sport : in->p.dport);
	}
	return in->l2 + hl;
}

int
fc_call_build(const struct fc_call *c, uint8_t *out, size_t cap)
{
	const struct fc_frame *f = c->f;

	switch (c->kind) {
	case FC_CALL_DNS:
		return frame_dns_refusal(f->b, f->len, &f->p, c->q, c->rcode, c->ede, out, cap);
	case FC_CALL_DNS_TCP:
		return frame_dns_refusal_tcp(f->b, f->len, &f->p, c->msg, c->msg_len, c->q,
		    c->rcode, c->ede, out, cap);
	case FC_CALL_RST:
		return frame_tcp_rst(f->b, f->len, &f->p, out, cap);
	case FC_CALL_RST_DST:
		return frame_tcp_rst_to_dst(f->b, f->len, &f->p, c->fwd, out, cap);
	case FC_CALL_ICMP:
		return frame_icmp_unreach(f->b, f->len, &f->p, out, cap);
	}
	return -2;
}

int
fc_call_guarded(const struct fc_call *c, uint8_t *buf, size_t cap)
{
	int n;

	memset(buf, 0xa5, cap + FC_GUARD);
	n = fc_call_build(c, buf, cap);
	for (size_t i = n < 0 ? 0 : cap; i < cap + FC_GUARD; i++)
		assert_int_equal(buf[i], 0xa5);
	return n;
}

void
fc_check_caps(const struct fc_call *c, size_t need)
{
	uint8_t buf[FC_FRAME_MAX + FC_GUARD], ref[FC_FRAME_MAX];
	uint8_t *exact = malloc(need);

	assert_true(need <= FC_FRAME_MAX && exact != NULL);
	for (size_t cap = 0; cap < need; cap++)
		assert_int_equal(fc_call_guarded(c, buf, cap), -1);
	assert_int_equal(fc_call_guarded(c, buf, need), need);
	memcpy(ref, buf, need);
	assert_int_equal(fc_call_guarded(c, buf, FC_FRAME_MAX), need);
	assert_memory_equal(buf, ref, need);
	assert_int_equal(fc_call_build(c, exact, need), need);	/* valgrind sees overruns */
	assert_memory_equal(exact, ref, need);
	free(exact);
}

void
fc_check_refused(const struct fc_call *c)
{
	uint8_t buf[FC_FRAME_MAX + FC_GUARD];

	assert_int_equal(fc_call_guarded(c, buf, FC_FRAME_MAX), -1);
}

static size_t
name_wire(uint8_t *b, const char *name)
{
	size_t n = 0;

	while (*name) {
		const char *dot = strchr(name, '.');
		size_t l = dot ? (size_t)(dot - name) : strlen(name);

		b[n++] = (uint8_t)l;
		memcpy(b + n, name, l);
		n += l;
		name += l + (dot != NULL);
	}
	b[n++] = 0;
	return n;
}

size_t
fc_dns_query(uint8_t *b, uint16_t id, uint16_t flags, const char *name, uint16_t qtype,
    unsigned int qd, bool edns)
{
	static const uint8_t opt[11] = { 0, 0, 41, 0x10, 0, 0, 0, 0x80, 0, 0, 0 };
	size_t n = 12;

	memset(b, 0, 12);
	fc_w16(b, id);
	fc_w16(b + 2, flags);
	fc_w16(b + 4, (uint16_t)qd);
	fc_w16(b + 10, edns);
	for (unsigned int i = 0; i < qd; i++) {
		n += name_wire(b + n, name);
		fc_w16(b + n, qtype);
		fc_w16(b + n + 2, DNS_CLASS_IN);
		n += 4;
	}
	if (edns) {
		memcpy(b + n, opt, sizeof(opt));
		n += sizeof(opt);
	}
	return n;
}

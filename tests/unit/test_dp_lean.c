/*
 * The lean path of a frame from the VM port or the uplink (dp_lean.h) held to the general
 * one it stands for: random frames over IPv4 and IPv6 and every edge its checks draw
 * (tags, IPv4 options, an IPv6 extension header, fragments, lengths that do not fit, the
 * version, the protocol or next header, wrong checksums, what the port says of them, SYN
 * (its window scale), FIN, RST, another's source, an unknown MAC, a VM with a VLAN, one
 * without the frame's family's address, UDP), untagged and behind a VM's own 802.1Q tag
 * (then also another VLAN, another inner type, a priority), go through both, each way. A
 * frame the lean path takes must be one the general first stage (dp_rx_decode(), the VM
 * by MAC, dp_decide_vm_plain() or _uplink_plain(), dp_conn_key()) lets go on with the same
 * VM and key, decoding as dp_lean_decode() says (its TCP header and payload where
 * dp_lean_th() and dp_lean_payload() say, its IP length dp_lean_ip_bytes(), the hash
 * dp_lean_hashed() makes of its key the lookup's, dp_ft_hash()); and on any flow the lean
 * steady stage must do what dp_conn_vm() or dp_conn_uplink() does: the same flows steady
 * (never a SYN, a FIN or an RST), the same verdict, the flow left the same; the others
 * left alone for the general way.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "dp_conn.h"
#include "dp_decide.h"
#include "dp_lean.h"
#include "frame_check.h"

#define T_FRAMES	200000
#define T_INDEX		64		/* the (vlan, MAC) index's entries */

enum { T_VM, T_VM_VLAN, T_VM_NO4, T_VM_TAGGED, T_NVMS };

static struct dp_vm vms[T_NVMS + 1];
static uint64_t index_keys[T_INDEX];
static uint16_t index_slots[T_INDEX];
static struct dp_gen gen = { .vms = vms, .max_vms = T_NVMS, .nvms = T_NVMS,
	.vm_keys = index_keys, .vm_slots = index_slots, .vm_index_mul = 0x9e3779b97f4a7c15ull,
	.vm_index_mask = T_INDEX - 1, .vm_index_shift = 58 };
static const uint8_t mac_vlan[6] = { 2, 0, 0, 0, 0, 0x20 }, mac_no4[6] = { 2, 0, 0, 0, 0, 0x30 };
static const uint8_t mac_unknown[6] = { 2, 0, 0, 0, 0, 0x40 };
static const uint8_t mac_tagged[6] = { 2, 0, 0, 0, 0, 0x50 };
static unsigned int drops;
static bool any_called;

void
dp_drop(struct dp_worker *w, struct rte_mbuf *m, enum dp_drop d)
{
	(void)w;
	(void)m;
	(void)d;
	drops++;
}

/* The general flow stage: not steady. Marks that it was asked, and leaves the flow be. */
struct dp_fate
dp_conn_vm_any(struct dp_worker *w, const struct pkt *p, const struct dp_flow_key *k,
    uint32_t h, struct dp_flow *f, struct dp_flow **fp)
{
	(void)w;
	(void)p;
	(void)h;
	(void)k;
	(void)f;
	(void)fp;
	any_called = true;
	return dp_fate_drop(DP_DROP_MALFORMED);
}

struct dp_fate
dp_conn_uplink_any(struct dp_worker *w, const struct pkt *p, const struct dp_flow_key *k,
    struct dp_flow *f, struct dp_flow **fp)
{
	return dp_conn_vm_any(w, p, k, 0, f, fp);
}

static void
t_vm(uint16_t slot, const uint8_t *mac, uint16_t vlan, bool has, const uint8_t *ip4,
    const uint8_t *ip6)
{
	uint64_t key = dp_gen_vm_key(vlan, mac);
	uint64_t i = dp_gen_vm_index_at(&gen, key);

	vms[slot] = (struct dp_vm){ .name = "vm", .present = true, .id.vlan = vlan,
		.id.has4 = has, .id.has6 = has };
	memcpy(vms[slot].id.mac, mac, 6);
	memcpy(vms[slot].id.ip4, ip4, 4);	/* there but not its own, unless has */
	memcpy(vms[slot].id.ip6, ip6, 16);
	while (index_keys[i] != DP_VM_INDEX_EMPTY)
		i = (i + 1) & gen.vm_index_mask;
	index_keys[i] = key;
	index_slots[i] = slot;
}

/*
 * The frames' own VM; one with a VLAN found untagged (no configuration indexes it so: the
 * lean path asks all the same); one without addresses; one on VLAN 10, the tag the frames
 * have when tagged (fc_frame_build()). Each holds the frames' IPv4 and IPv6 sources as
 * its addresses (f, an IPv4 frame).
 */
static void
t_gen(const struct fc_frame *f)
{
	struct fc_frame f6;

	fc_frame_build(&f6, &(struct fc_frame_spec){ .family = 6, .proto = PKT_PROTO_TCP });
	for (unsigned int i = 0; i < T_INDEX; i++)
		index_keys[i] = DP_VM_INDEX_EMPTY;
	t_vm(T_VM, f->b + 6, 0, true, f->p.src, f6.p.src);
	t_vm(T_VM_VLAN, mac_vlan, 20, true, f->p.src, f6.p.src);	/* not found untagged */
	t_vm(T_VM_NO4, mac_no4, 0, false, f->p.src, f6.p.src);
	t_vm(T_VM_TAGGED, mac_tagged, 10, true, f->p.src, f6.p.src);
}

/* An IPv6 frame's TCP checksum (its header at ip) made right after an edit. */
static void
t_fix_sum6(uint8_t *ip, size_t room)
{
	size_t tl = fc_r16(ip + 4);

	if (ip[6] != PKT_PROTO_TCP || tl < 18 || 40 + tl > room)
		return;
	fc_w16(ip + 56, 0);
	fc_w16(ip + 56, fc_ref_csum(ip + 40, tl, fc_ref_pseudo(ip, 6, PKT_PROTO_TCP, tl)));
}

/*
 * The IPv4 and TCP (or IPv6's TCP) checksums of a frame, untagged or with one tag, made
 * right after an edit.
 */
static void
t_fix_sums(uint8_t *b, size_t len)
{
	size_t l2 = fc_r16(b + 12) == 0x8100 ? 18 : 14;
	uint8_t *ip = b + l2, *th;
	size_t ihl = (size_t)(ip[0] & 0xf) * 4, tl;

	if (fc_r16(ip - 2) == 0x86dd && l2 + 40 <= len)
		t_fix_sum6(ip, len - l2);
	if (fc_r16(ip - 2) != 0x0800 || ihl < 20 || l2 + ihl > len)
		return;
	fc_w16(ip + 10, 0);
	fc_w16(ip + 10, fc_ref_csum(ip, ihl, 0));
	th = ip + ihl;
	tl = fc_r16(ip + 2) >= ihl ? fc_r16(ip + 2) - ihl : 0;
	if (ip[9] != PKT_PROTO_TCP || tl < 18 || l2 + ihl + tl > len)
		return;
	fc_w16(th + 16, 0);
	fc_w16(th + 16, fc_ref_csum(th, tl, fc_ref_pseudo(ip, 4, PKT_PROTO_TCP, tl)));
}

static const uint64_t t_ol[] = { 0, 0, 0, 0,
	RTE_MBUF_F_RX_IP_CKSUM_GOOD | RTE_MBUF_F_RX_L4_CKSUM_GOOD,
	RTE_MBUF_F_RX_IP_CKSUM_GOOD, RTE_MBUF_F_RX_L4_CKSUM_GOOD,
	RTE_MBUF_F_RX_IP_CKSUM_BAD | RTE_MBUF_F_RX_L4_CKSUM_GOOD,
	RTE_MBUF_F_RX_IP_CKSUM_GOOD | RTE_MBUF_F_RX_L4_CKSUM_BAD,
	RTE_MBUF_F_RX_IP_CKSUM_NONE | RTE_MBUF_F_RX_L4_CKSUM_NONE,
	RTE_MBUF_F_RX_IP_CKSUM_GOOD | RTE_MBUF_F_RX_L4_CKSUM_NONE };

/*
 * Frame i: mostly the lean shape (an ACK with or without data), else edited at one of
 * the places a lean check looks, its sums made right again or not; a third of them over
 * IPv6, a third with the 802.1Q tag of the VM on VLAN 10, each edit then at its place
 * past the tag and in its family's header. Toward the VM (up), its MACs the other way
 * round.
 */
static void
t_frame(uint64_t *rng, struct fc_frame *f, size_t *len, uint64_t *ol, bool up)
{
	static const uint8_t ends[] = { PKT_TCP_SYN, PKT_TCP_FIN, PKT_TCP_RST,
		PKT_TCP_SYN | PKT_TCP_ACK, PKT_TCP_FIN | PKT_TCP_ACK };
	static uint8_t payload[1400];
	uint32_t r = fc_rnd(rng), edit = fc_rnd(rng) % 48;
	bool tagged = fc_rnd(rng) % 3 == 0 || (edit >= 33 && edit <= 35);
	struct fc_frame_spec s = { .family = fc_rnd(rng) % 3 == 0 ? 6 : 4, .proto = PKT_PROTO_TCP,
		.sport = (uint16_t)fc_rnd(rng), .dport = 443, .flags = PKT_TCP_ACK,
		.seq = fc_rnd(rng), .ack = fc_rnd(rng), .payload = payload,
		.payload_len = r % 3 == 0 ? 0 : fc_rnd(rng) % sizeof(payload) };
	uint8_t *ip = f->b + 14 + 4 * tagged, *vm_mac = f->b + (up ? 0 : 6), mac[6];
	bool v6 = s.family == 6;
	uint8_t *th;

	for (size_t i = 0; i < s.payload_len; i++)
		payload[i] = (uint8_t)fc_rnd(rng);
	switch (edit) {
	case 1: s.flags = ends[fc_rnd(rng) % sizeof(ends)]; break;
	case 2: s.flags = (uint8_t)fc_rnd(rng); break;
	case 3: s.tags = 1 + fc_rnd(rng) % 2; break;
	case 31: case 32: s.tags = 1; break;
	case 4: s.ip_opts = 1 + fc_rnd(rng) % 10; break;
	case 5: s.mf = true; break;
	case 6: s.family = v6 ? 4 : 6; v6 = !v6; break;		/* the other one */
	case 7: s.proto = PKT_PROTO_UDP; break;
	case 8: s.proto = FC_PROTO_ICMP; break;
	case 9: s.pad = 1 + fc_rnd(rng) % 30; break;
	case 10: s.src = (const uint8_t *)"\x0a\x0a\x00\x0c"; break;
	case 36:	/* a SYN (or SYN-ACK) whose options (data offset below) scale */
		s.flags = ends[fc_rnd(rng) % 2 ? 0 : 3];
		s.payload_len = 4 + fc_rnd(rng) % 64;
		memcpy(payload, "\x01\x03\x03", 3);
		payload[3] = (uint8_t)(fc_rnd(rng) % 20);
		break;
	}
	if (tagged && s.tags == 0)
		s.tags = 1;
	fc_frame_build(f, &s);
	th = ip + (v6 ? 40 : 20);
	if (up) {
		memcpy(mac, f->b, 6);
		memcpy(f->b, f->b + 6, 6);
		memcpy(f->b + 6, mac, 6);
	}
	*len = f->len;
	if (tagged)
		memcpy(vm_mac, mac_tagged, 6);
	*ol = t_ol[fc_rnd(rng) % (sizeof(t_ol) / sizeof(t_ol[0]))];
	switch (edit) {
	case 11: memcpy(vm_mac, mac_vlan, 6); break;
	case 12: memcpy(vm_mac, mac_no4, 6); break;
	case 13: memcpy(vm_mac, mac_unknown, 6); break;
	case 31: memcpy(vm_mac, mac_tagged, 6); break;		/* its own tag */
	case 32: f->b[14] = f->b[15] = 0; break;			/* a priority tag */
	case 14:	/* IPv4's fragment offset; IPv6's flow label (lean) */
		if (v6)
			fc_w16(ip + 2, (uint16_t)fc_rnd(rng));
		else
			fc_w16(ip + 6, (uint16_t)(fc_rnd(rng) & 0x3fff));
		break;
	case 15: fc_w16(ip + 6 - 6 * v6, v6 ? 0x6b00 : 0x4000); break;	/* DF, class: lean */
	case 16:	/* the IP length past the frame, or short of the segment */
		fc_w16(ip + 2 + 2 * v6, (uint16_t)(fc_r16(ip + 2 + 2 * v6) + 1 + fc_rnd(rng) % 8));
		break;
	case 17:
		fc_w16(ip + 2 + 2 * v6, (uint16_t)(fc_rnd(rng) % (fc_r16(ip + 2 + 2 * v6) + 1)));
		break;
	case 18: th[12] = (uint8_t)(fc_rnd(rng) << 4); break;		/* data offset */
	case 19: th[12] = (uint8_t)((5 + fc_rnd(rng) % 11) << 4); break;
	case 20: *len = fc_rnd(rng) % (f->len + 1); break;		/* cut short */
	case 21: ip[0] = (uint8_t)((v6 ? 0x60 : 0x40) | fc_rnd(rng) % 16); break;
	case 22: ip[0] = (uint8_t)fc_rnd(rng); break;
	case 23: ip[v6 ? 6 : 9] = (uint8_t)fc_rnd(rng); break;		/* protocol */
	case 24: fc_w16(f->b + 12, (uint16_t)fc_rnd(rng)); break;
	case 25: f->b[12 + fc_rnd(rng) % 2] ^= 0x80; break;
	case 33: fc_w16(f->b + 16, (uint16_t)fc_rnd(rng)); break;		/* inner type */
	case 34: fc_w16(f->b + 14, (uint16_t)fc_rnd(rng)); break;		/* another VLAN */
	case 35: fc_w16(f->b + 14, (uint16_t)((fc_rnd(rng) & 0xf000) | 10)); break; /* PCP, DEI */
	case 26: f->b[fc_rnd(rng) % f->len] ^= (uint8_t)(1 + fc_rnd(rng) % 255); break;
	case 27: ip[v6 ? 8 + fc_rnd(rng) % 16 : 12 + fc_rnd(rng) % 4] ^= 1; break; /* source */
	case 28: ip[v6 ? 24 + fc_rnd(rng) % 16 : 16 + fc_rnd(rng) % 4] ^= 1; break; /* dst: lean */
	case 36: th[12] = 6 << 4; break;
	}
	if (edit != 26 && fc_rnd(rng) % 4 != 0)
		t_fix_sums(f->b, f->len);
	else if (edit == 29)
		th[16] ^= 1;							/* TCP sum */
	else if (edit == 30)
		ip[10] ^= 1;							/* IP sum */
}

/* An mbuf-shaped wrapper of frame b, just what the receive path reads. */
static void
t_mbuf(struct rte_mbuf *m, uint8_t *b, size_t len, uint64_t ol)
{
	memset(m, 0, sizeof(*m));
	m->buf_addr = b;
	m->data_len = (uint16_t)len;
	m->pkt_len = (uint32_t)len;
	m->nb_segs = 1;
	m->ol_flags = ol;
}

/*
 * What the general first stage makes of m, from the VM or toward it (up): does it go on to
 * its flow, with *vm and *k?
 */
static bool
t_general(struct rte_mbuf *m, struct pkt *p, uint16_t *vm, struct dp_flow_key *k, bool up)
{
	struct dp_worker w = { .gen = &gen };
	enum pkt_status st;
	struct dp_fate fate;
	int slot;

	memset(p, 0, sizeof(*p));
	if (dp_rx_decode(&w, m, p, &st) != DP_RX_PLAIN)
		return false;
	slot = dp_gen_vm_by_mac(&gen, p->vlan, up ? p->dst_mac : p->src_mac);
	fate = up ? dp_decide_uplink_plain(&gen, p, slot) : dp_decide_vm_plain(&gen, p, slot);
	if (!dp_fate_eq(fate, dp_fate(DP_FATE_CONTINUE)))
		return false;
	*vm = (uint16_t)slot;
	dp_conn_key(k, *vm, p, !up);
	return true;
}

/* Flow states around those a steady frame meets, each byte of the steady word moved. */
static void
t_flow(uint64_t *rng, struct dp_flow *f, const struct dp_flow_key *k, uint32_t seq,
    uint32_t ack)
{
	uint32_t r = fc_rnd(rng);

	memset(f, (int)fc_rnd(rng), sizeof(*f));
	f->key = *k;
	f->in_use = true;
	f->gen = r % 8 == 0 ? fc_rnd(rng) : 7;
	f->tls = r % 8 == 1 ? (uint8_t)(fc_rnd(rng) % 9) : DP_TLS_NONE;
	f->budgets = r % 8 == 2 ? (uint8_t)fc_rnd(rng) : 0;
	f->judged = r % 8 == 3 ? fc_rnd(rng) : 0;
	f->would_block = r & 0x100;
	f->vm_nxt = (r & 0x200 ? seq : ack) + (fc_rnd(rng) % 4096) - 2048;
	f->peer_ack = ack + (fc_rnd(rng) % 4096) - 2048;
	f->peer_synced = r & 0x400;
	f->peer_wscale = (uint8_t)(fc_rnd(rng) % 15);
}

static void
t_steady_same(uint64_t *rng, const struct pkt *p, const struct dp_flow_key *k,
    const struct dp_lean *ln, bool up, unsigned int *steady)
{
	struct dp_gen g = { .id = 7 };
	struct dp_worker w = { .gen = &g, .now = 1234 };
	uint64_t key = dp_conn_steady_key(&w);
	struct dp_flow lean_f, gen_f, before, *fp = NULL;
	struct dp_fate fate;
	bool lean;

	t_flow(rng, &lean_f, k, p->seq, p->ack);
	memcpy(&before, &lean_f, sizeof(before));
	memcpy(&gen_f, &lean_f, sizeof(gen_f));
	any_called = false;
	fate = up ? dp_conn_uplink(&w, p, k, &gen_f, &fp, key) :
	    dp_conn_vm(&w, p, k, 0, &gen_f, &fp, key);
	lean = dp_lean_steady(key, &lean_f, ln, !up);
	assert_int_equal(lean, !any_called);
	if (lean && up) {
		dp_conn_uplink_steady(&w, &lean_f, true, ln->flags, ln->ack, ln->win);
		assert_true(dp_fate_eq(fate, dp_fate(DP_FATE_INGRESS)));
	} else if (lean) {
		enum dp_verdict v = dp_conn_vm_steady(&w, &lean_f, true, ln->seq, ln->payload_len);

		assert_true(dp_fate_eq(fate, dp_fate_egress(v)));
	}
	*steady += lean;
	assert_memory_equal(&lean_f, lean ? &gen_f : &before, sizeof(lean_f));
}

static void
t_lean_is_general(bool up)
{
	uint64_t rng = up ? 0x0b1ea4 : 0x1ea4;
	/* the index a hash is made for, its seed and the words added to the key's (the start's) */
	const struct dp_ft ft = { .seed = 0x5eed1ea4 };
	unsigned int took = 0, tagged = 0, v6 = 0, steady = 0, general = 0, ends = 0, scaled = 0;
	struct fc_frame f;
	size_t len;
	uint64_t ol;

	fc_frame_build(&f, &(struct fc_frame_spec){ .family = 4, .proto = PKT_PROTO_TCP });
	t_gen(&f);
	for (unsigned int i = 0; i < DP_HASH_CRC_WORDS; i++)
		dp_hash_crc_words[i] = UINT64_C(0x9e3779b97f4a7c15) * (i + 1);
	for (unsigned int i = 0; i < T_FRAMES; i++) {
		struct dp_flow_key lean_k, gen_k;
		struct rte_mbuf m;
		uint32_t h;
		struct dp_lean ln;
		struct pkt p, lp;
		uint16_t vm;
		bool goes_on;
		int slot;

		t_frame(&rng, &f, &len, &ol, up);
		t_mbuf(&m, f.b, len, ol);
		slot = dp_lean_hashed(&gen, &m, &lean_k, &ln, !up, &ft, &h);
		goes_on = t_general(&m, &p, &vm, &gen_k, up);
		general += goes_on;
		if (slot < 0)
			continue;
		took++;
		tagged += fc_r16(f.b + 12) == 0x8100;
		v6 += lean_k.family == 6;
		ends += (ln.flags & DP_LEAN_TCP_ENDS) != 0;
		if (!goes_on)
			fail_msg("frame %u: lean took one the general path stops", i);
		assert_int_equal(slot, vm);
		assert_memory_equal(&lean_k, &gen_k, sizeof(lean_k));
		assert_int_equal(h, dp_ft_hash(&ft, &gen_k));	/* the lookup's, of its words */
		assert_int_equal(ln.flags, p.tcp_flags);
		assert_int_equal(ln.payload_len, p.payload_len);	/* padding none of it */
		if (up) {
			assert_int_equal(ln.ack, p.ack);
			assert_int_equal(ln.win, p.tcp_win);
			assert_int_equal(dp_lean_seq(&m, &ln), p.seq);
		} else {
			assert_int_equal(ln.seq, p.seq);
		}
		memset(&lp, 0, sizeof(lp));
		dp_lean_decode(&m, &ln, &lp, !up);
		assert_memory_equal(&lp, &p, sizeof(lp));
		assert_ptr_equal(dp_lean_th(&m, &ln), f.b + p.l4_off);
		assert_ptr_equal(dp_lean_payload(&m, &ln), p.payload);
		assert_int_equal(dp_lean_ip_bytes(&m), dp_ip_bytes(&p));
		scaled += lp.tcp_wscale != PKT_WSCALE_NONE;
		t_steady_same(&rng, &p, &lean_k, &ln, up, &steady);
		t_steady_same(&rng, &p, &lean_k, &ln, up, &steady);
	}
	print_message("%s: %u frames, %u lean (%u tagged, %u IPv6, %u SYN, FIN or RST, %u scaled),"
	    " %u go on, %u steady\n", up ? "uplink" : "VM port", T_FRAMES, took, tagged, v6, ends,
	    scaled, general, steady);
	/* many frames are of the lean shape, tagged or not, either family, not every one */
	assert_true(took > T_FRAMES / 8 && took < general);
	assert_true(tagged > took / 5 && tagged < took / 2);
	assert_true(v6 > took / 5 && v6 < 2 * took / 3);
	assert_true(steady > took / 2 && steady < 2 * took);
	/* a connection's ends too, a SYN's window scale read */
	assert_true(ends > took / 50 && scaled > took / 200);
}

static void
test_lean_is_general_vm(void **state)
{
	(void)state;
	t_lean_is_general(false);
}

static void
test_lean_is_general_uplink(void **state)
{
	(void)state;
	t_lean_is_general(true);
}

/* A frame in more than one segment is the general path's (it makes it contiguous). */
static void
test_lean_one_segment(void **state)
{
	struct dp_flow_key k;
	struct rte_mbuf m;
	struct fc_frame f;
	struct dp_lean ln;

	(void)state;
	fc_frame_build(&f, &(struct fc_frame_spec){ .family = 4, .proto = PKT_PROTO_TCP,
		.flags = PKT_TCP_ACK });
	t_gen(&f);
	t_mbuf(&m, f.b, f.len, 0);
	assert_int_equal(dp_lean(&gen, &m, &k, &ln, true), T_VM);
	m.nb_segs = 2;
	assert_int_equal(dp_lean(&gen, &m, &k, &ln, true), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lean_is_general_vm),
		cmocka_unit_test(test_lean_is_general_uplink),
		cmocka_unit_test(test_lean_one_segment),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * The stateless stages of the per-frame decision (dataplane/worker/dp_decide.c) as tables:
 * a generation built by hand (two VMs, one audited, one resolver), frames described field
 * by field, and the fate each must get: act, reason or drop, verdict, reply, event, audit
 * count. No EAL and no buffers: deciding touches neither.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "dp_decide.h"
#include "dp_gen.h"

#define VM_PLAIN	0
#define VM_AUDIT	1

#define T_MAX_VMS	1024

static struct dp_vm vms[T_MAX_VMS + 1];
static struct dp_gen gen;

static const uint8_t ip_plain[4] = { 10, 0, 0, 2 }, ip_audit[4] = { 10, 0, 0, 3 };
static const uint8_t ip_resolver[4] = { 10, 0, 0, 53 }, ip_peer[4] = { 192, 0, 2, 7 };
static const uint8_t mac_plain[6] = { 2, 0, 0, 0, 0, 1 }, mac_audit[6] = { 2, 0, 0, 0, 0, 2 };

static void
gen_init(bool on_block_reset, bool quic_inspect)
{
	struct pol_addr resolver = { .family = 0 };

	memset(vms, 0, sizeof(vms));
	memset(&gen, 0, sizeof(gen));
	vms[VM_PLAIN] = (struct dp_vm){ .name = "plain", .present = true, .id.has4 = true };
	memcpy(vms[VM_PLAIN].id.ip4, ip_plain, 4);
	memcpy(vms[VM_PLAIN].id.mac, mac_plain, 6);
	vms[VM_AUDIT] = (struct dp_vm){ .name = "audit", .present = true, .id.has4 = true,
		.id.vlan = 20, .audit = true };
	memcpy(vms[VM_AUDIT].id.ip4, ip_audit, 4);
	memcpy(vms[VM_AUDIT].id.mac, mac_audit, 6);
	gen.vms = vms;
	gen.max_vms = T_MAX_VMS;
	gen.nvms = 2;
	resolver.family = 4;
	memcpy(resolver.a, ip_resolver, 4);
	dp_gen_resolvers_set(&gen, &resolver, 1);
	gen.on_block_reset = on_block_reset;
	gen.quic_inspect = quic_inspect;
}

/* A TCP or UDP IPv4 frame from vm (its own source and tag unless a case changes them). */
static struct pkt
pkt_from(int vm, uint8_t proto, const uint8_t *dst, uint16_t dport)
{
	struct pkt p = { .ethertype = 0x0800, .family = 4, .proto = proto, .sport = 40000,
		.dport = dport, .l3_off = 14, .hop_limit = 64 };

	if (vm == VM_AUDIT) {
		memcpy(p.src, ip_audit, 4);
		p.vlan = 20;
		p.nb_vlans = 1;
	} else {
		memcpy(p.src, ip_plain, 4);
	}
	memcpy(p.dst, dst, 4);
	if (proto == PKT_PROTO_TCP)
		p.tcp_flags = PKT_TCP_SYN;
	return p;
}

struct want {
	enum dp_fate_act act;
	uint8_t why;
	enum dp_verdict verdict;
	enum dp_fate_reply reply;
	bool log, counted;
};

static void
assert_fate(const char *what, struct dp_fate got, struct want w)
{
	if (got.act != w.act || got.why != w.why || got.reply != w.reply || got.log != w.log ||
	    got.counted != w.counted ||
	    (w.act == DP_FATE_EGRESS && got.verdict != w.verdict))
		fail_msg("%s: act %u why %u verdict %u reply %u log %d counted %d; want act %u "
		    "why %u verdict %u reply %u log %d counted %d", what, got.act, got.why,
		    got.verdict, got.reply, got.log, got.counted, w.act, w.why, w.verdict,
		    w.reply, w.log, w.counted);
}

static const struct want CONTINUE = { .act = DP_FATE_CONTINUE };
static const struct want SPOOFED = { .act = DP_FATE_BLOCK, .why = DP_REASON_SPOOFED,
	.log = true };

static void
test_vm_frame(void **state)
{
	uint8_t arp[28] = { 0, 1, 8, 0, 6, 4, 0, 1 };
	struct pkt p;

	(void)state;
	gen_init(true, false);

	p = pkt_from(VM_PLAIN, PKT_PROTO_TCP, ip_peer, 443);
	assert_fate("own source, untagged", dp_decide_vm_frame(&gen, &p, VM_PLAIN, NULL, 0),
	    CONTINUE);
	assert_fate("no VM has this MAC", dp_decide_vm_frame(&gen, &p, -1, NULL, 0), SPOOFED);

	p = pkt_from(VM_PLAIN, PKT_PROTO_TCP, ip_peer, 443);
	p.src[3] = 99;
	assert_fate("another's source", dp_decide_vm_frame(&gen, &p, VM_PLAIN, NULL, 0),
	    SPOOFED);

	p = pkt_from(VM_PLAIN, PKT_PROTO_TCP, ip_peer, 443);
	p.nb_vlans = 1;
	p.vlan = 0;
	assert_fate("priority tag", dp_decide_vm_frame(&gen, &p, VM_PLAIN, NULL, 0), CONTINUE);
	p.nb_vlans = 2;
	assert_fate("two tags on an untagged VM", dp_decide_vm_frame(&gen, &p, VM_PLAIN, NULL, 0),
	    SPOOFED);

	p = pkt_from(VM_AUDIT, PKT_PROTO_TCP, ip_peer, 443);
	p.nb_vlans = 2;
	assert_fate("a tag inside the VM's own", dp_decide_vm_frame(&gen, &p, VM_AUDIT, NULL, 0),
	    SPOOFED);

	p = pkt_from(VM_PLAIN, PKT_PROTO_TCP, ip_peer, 443);
	p.fragment = true;
	assert_fate("a fragment", dp_decide_vm_frame(&gen, &p, VM_PLAIN, NULL, 0),
	    (struct want){ .act = DP_FATE_REASSEMBLE });

	p = (struct pkt){ .ethertype = 0x88cc };
	assert_fate("not IP", dp_decide_vm_frame(&gen, &p, VM_PLAIN, NULL, 0),
	    (struct want){ .act = DP_FATE_DROP, .why = DP_DROP_NOT_IP });

	p = (struct pkt){ .ethertype = 0x0806 };
	memcpy(arp + 8, mac_plain, 6);
	memcpy(arp + 14, ip_plain, 4);
	assert_fate("ARP from the VM itself", dp_decide_vm_frame(&gen, &p, VM_PLAIN, arp,
	    sizeof(arp)), (struct want){ .act = DP_FATE_EGRESS, .verdict = DP_ALLOWED });
	arp[14 + 3] = 99;
	assert_fate("ARP for another's address", dp_decide_vm_frame(&gen, &p, VM_PLAIN, arp,
	    sizeof(arp)), SPOOFED);
	assert_fate("ARP cut short", dp_decide_vm_frame(&gen, &p, VM_PLAIN, arp, 27), SPOOFED);
}

static void
test_vm_nd_shape(void **state)
{
	static const uint8_t solicit[24] = { 135 };	/* hop limit 64: no ND a host sends */
	struct pkt p = { .ethertype = 0x86dd, .family = 6, .proto = 58, .hop_limit = 64,
		.payload = solicit, .payload_len = sizeof(solicit) };

	(void)state;
	gen_init(true, false);
	vms[VM_PLAIN].id.has6 = true;
	vms[VM_PLAIN].id.ip6[0] = 0xfd;
	p.src[0] = 0xfd;
	assert_fate("ND-typed in no ND shape", dp_decide_vm_frame(&gen, &p, VM_PLAIN, NULL, 0),
	    SPOOFED);
}

static void
test_vm_datagram(void **state)
{
	struct pkt p;

	(void)state;
	gen_init(true, false);

	p = pkt_from(VM_PLAIN, PKT_PROTO_UDP, ip_resolver, 53);
	assert_fate("DNS to the resolver", dp_decide_vm_datagram(&gen, &p, PKT_OK, VM_PLAIN),
	    (struct want){ .act = DP_FATE_DNS });
	p = pkt_from(VM_PLAIN, PKT_PROTO_UDP, ip_peer, 53);
	assert_fate("DNS elsewhere", dp_decide_vm_datagram(&gen, &p, PKT_OK, VM_PLAIN),
	    (struct want){ .act = DP_FATE_BLOCK, .why = DP_REASON_DNS_DENIED,
		.reply = DP_FATE_REPLY_ICMP, .log = true });
	p = pkt_from(VM_AUDIT, PKT_PROTO_UDP, ip_peer, 53);
	assert_fate("DNS elsewhere, audited", dp_decide_vm_datagram(&gen, &p, PKT_OK, VM_AUDIT),
	    (struct want){ .act = DP_FATE_EGRESS, .why = DP_REASON_DNS_DENIED,
		.verdict = DP_WOULD_BLOCK, .log = true, .counted = true });

	p = pkt_from(VM_PLAIN, PKT_PROTO_UDP, ip_peer, 443);
	assert_fate("QUIC, quic: block", dp_decide_vm_datagram(&gen, &p, PKT_OK, VM_PLAIN),
	    (struct want){ .act = DP_FATE_BLOCK, .why = DP_REASON_QUIC,
		.reply = DP_FATE_REPLY_ICMP, .log = true });
	p = pkt_from(VM_AUDIT, PKT_PROTO_UDP, ip_peer, 443);
	assert_fate("QUIC audited: noted, then admitted", dp_decide_vm_datagram(&gen, &p,
	    PKT_OK, VM_AUDIT), (struct want){ .act = DP_FATE_CONTINUE, .why = DP_REASON_QUIC,
		.log = true, .counted = true });

	p = pkt_from(VM_PLAIN, PKT_PROTO_TCP, ip_peer, 443);
	p.src_route = true;
	assert_fate("source-routed", dp_decide_vm_datagram(&gen, &p, PKT_OK, VM_PLAIN),
	    (struct want){ .act = DP_FATE_BLOCK, .why = DP_REASON_SOURCE_ROUTE, .log = true });
	p.src_route = false;
	assert_fate("ICMP and others", dp_decide_vm_datagram(&gen, &p, PKT_OTHER, VM_PLAIN),
	    (struct want){ .act = DP_FATE_SLOW });
	assert_fate("TCP to a peer", dp_decide_vm_datagram(&gen, &p, PKT_OK, VM_PLAIN),
	    CONTINUE);

	/* with on_block: drop the VM hears nothing; with quic: inspect QUIC is admitted */
	gen_init(false, true);
	p = pkt_from(VM_PLAIN, PKT_PROTO_UDP, ip_peer, 53);
	assert_fate("DNS elsewhere, on_block: drop", dp_decide_vm_datagram(&gen, &p, PKT_OK,
	    VM_PLAIN), (struct want){ .act = DP_FATE_BLOCK, .why = DP_REASON_DNS_DENIED,
		.log = true });
	p = pkt_from(VM_PLAIN, PKT_PROTO_UDP, ip_peer, 443);
	assert_fate("QUIC, quic: inspect", dp_decide_vm_datagram(&gen, &p, PKT_OK, VM_PLAIN),
	    CONTINUE);
}

static void
test_uplink(void **state)
{
	struct pkt p;

	(void)state;
	gen_init(true, false);

	p = pkt_from(VM_PLAIN, PKT_PROTO_TCP, ip_peer, 443);
	memcpy(p.src, ip_peer, 4);
	memcpy(p.dst, ip_plain, 4);
	assert_fate("to a VM", dp_decide_uplink_frame(&gen, &p, VM_PLAIN), CONTINUE);
	assert_fate("to no VM", dp_decide_uplink_frame(&gen, &p, -1),
	    (struct want){ .act = DP_FATE_DROP, .why = DP_DROP_NOT_IP });
	p.nb_vlans = 1;
	p.vlan = 20;
	assert_fate("tagged toward an untagged VM", dp_decide_uplink_frame(&gen, &p, VM_PLAIN),
	    (struct want){ .act = DP_FATE_DROP, .why = DP_DROP_NOT_IP });
	p.nb_vlans = 0;
	p.fragment = true;
	assert_fate("a fragment", dp_decide_uplink_frame(&gen, &p, VM_PLAIN),
	    (struct want){ .act = DP_FATE_REASSEMBLE });

	p = (struct pkt){ .ethertype = 0x0806 };
	assert_fate("ARP to a VM", dp_decide_uplink_frame(&gen, &p, VM_PLAIN),
	    (struct want){ .act = DP_FATE_INGRESS });
	assert_fate("ARP broadcast", dp_decide_uplink_frame(&gen, &p, -1),
	    (struct want){ .act = DP_FATE_FLOOD });

	p = pkt_from(VM_PLAIN, PKT_PROTO_UDP, ip_plain, 40000);
	memcpy(p.src, ip_resolver, 4);
	p.sport = 53;
	assert_fate("the resolver's answer", dp_decide_uplink_datagram(&gen, &p, PKT_OK),
	    (struct want){ .act = DP_FATE_DNS });
	p.src[3] = 54;
	assert_fate("port 53 from another server: its flow decides",
	    dp_decide_uplink_datagram(&gen, &p, PKT_OK), CONTINUE);
	p.src_route = true;
	assert_fate("source-routed toward a VM", dp_decide_uplink_datagram(&gen, &p, PKT_OK),
	    (struct want){ .act = DP_FATE_DISCARD, .why = DP_REASON_SOURCE_ROUTE });
	p.src_route = false;
	assert_fate("ICMP toward a VM", dp_decide_uplink_datagram(&gen, &p, PKT_OTHER),
	    (struct want){ .act = DP_FATE_SLOW });
}

static void
test_refuse(void **state)
{
	struct pkt tcp = pkt_from(VM_PLAIN, PKT_PROTO_TCP, ip_peer, 443);
	struct pkt udp = pkt_from(VM_PLAIN, PKT_PROTO_UDP, ip_peer, 9);

	(void)state;
	gen_init(true, false);
	assert_int_equal(dp_fate_refusal(&gen, &tcp), DP_FATE_REPLY_RST);
	assert_int_equal(dp_fate_refusal(&gen, &udp), DP_FATE_REPLY_ICMP);
	assert_fate("refused", dp_fate_refuse(&vms[VM_PLAIN], DP_REASON_NO_BINDING,
	    DP_FATE_REPLY_RST), (struct want){ .act = DP_FATE_BLOCK, .why = DP_REASON_NO_BINDING,
		.reply = DP_FATE_REPLY_RST, .log = true });
	assert_fate("refused, audited: no reply", dp_fate_refuse(&vms[VM_AUDIT],
	    DP_REASON_NO_BINDING, DP_FATE_REPLY_RST), (struct want){ .act = DP_FATE_EGRESS,
		.why = DP_REASON_NO_BINDING, .verdict = DP_WOULD_BLOCK, .log = true,
		.counted = true });
	gen_init(false, false);
	assert_int_equal(dp_fate_refusal(&gen, &tcp), DP_FATE_REPLY_NONE);
}

/* The plain frame's fates, one way and the other: the same, field for field. */
static void
assert_plain(const char *what, const struct pkt *p, int vm)
{
	struct dp_fate two = dp_decide_vm_frame(&gen, p, vm, NULL, 0);

	if (two.act == DP_FATE_CONTINUE)
		two = dp_decide_vm_datagram(&gen, p, PKT_OK, (uint16_t)vm);
	if (!dp_fate_eq(dp_decide_vm_plain(&gen, p, vm), two))
		fail_msg("from the VM, %s: the plain decision is not the two stages'", what);
	two = dp_decide_uplink_frame(&gen, p, vm);
	if (two.act == DP_FATE_CONTINUE)
		two = dp_decide_uplink_datagram(&gen, p, PKT_OK);
	if (!dp_fate_eq(dp_decide_uplink_plain(&gen, p, vm), two))
		fail_msg("from the uplink, %s: the plain decision is not the two stages'", what);
}

/*
 * dp_decide.h's plain decisions against the two stages they stand for, frame by frame,
 * both ways, under both settings: every port that has a path of its own (DNS, QUIC), to
 * and from the resolver and a peer, every VM (none, plain, audited), every tag count,
 * another's source, IPv6.
 */
static void
test_plain(void **state)
{
	static const uint16_t ports[] = { 53, 443, 80, 40000 };
	const uint8_t *addrs[] = { ip_resolver, ip_peer };
	char what[96];

	(void)state;
	for (int conf = 0; conf < 4; conf++) {
		gen_init(conf & 1, conf & 2);
		vms[VM_PLAIN].id.has6 = true;
		vms[VM_PLAIN].id.ip6[0] = 0xfd;
		for (int vm = -1; vm <= VM_AUDIT; vm++)
		for (uint8_t proto = PKT_PROTO_TCP; proto <= PKT_PROTO_UDP; proto += 11)
		for (size_t a = 0; a < 2; a++)
		for (size_t i = 0; i < sizeof(ports) / sizeof(ports[0]); i++)
		for (int shape = 0; shape < 6; shape++) {
			struct pkt p = pkt_from(vm < 0 ? VM_PLAIN : vm, proto, addrs[a], ports[i]);

			p.sport = ports[(i + 1) % 4];
			if (shape == 1)
				p.src[3] = 99;			/* another's source */
			if (shape == 2)
				p.nb_vlans++;			/* a tag inside */
			if (shape == 3) {
				p.nb_vlans = 1;			/* a tag on an untagged VM */
				p.vlan = 20;
			}
			if (shape == 4) {			/* from the peer's address */
				memcpy(p.src, addrs[a], 4);
				p.sport = ports[i];
			}
			if (shape == 5) {
				p.family = 6;
				p.ethertype = 0x86dd;
				memset(p.src, 0, 16);
				p.src[0] = 0xfd;
			}
			snprintf(what, sizeof(what), "conf %d VM %d proto %u to %u.%u port %u "
			    "shape %d", conf, vm, proto, addrs[a][0], addrs[a][3], ports[i], shape);
			assert_plain(what, &p, vm);
		}
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vm_frame),
		cmocka_unit_test(test_vm_nd_shape),
		cmocka_unit_test(test_vm_datagram),
		cmocka_unit_test(test_uplink),
		cmocka_unit_test(test_refuse),
		cmocka_unit_test(test_plain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

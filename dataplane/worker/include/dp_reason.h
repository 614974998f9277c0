/*
 * Why a frame was blocked or dropped: one list, so counters, metrics and events agree.
 * The first group are SPEC s6's reason label values (per VM); the rest are counted per
 * port, for frames that never reached a VM's decision.
 */
#ifndef DP_REASON_H
#define DP_REASON_H

#define DP_REASONS(X)							\
	X(SPOOFED,	"spoofed",	"unknown MAC, or a source not the VM's") \
	X(NO_BINDING,	"no_binding",	"destination not bound, or port not allowed") \
	X(SNI_DENIED,	"sni_denied",	"ClientHello names a host the VM may not reach") \
	X(NOT_TLS,	"not_tls",	"first bytes on a TLS port are not a ClientHello") \
	X(NO_SNI,	"no_sni",	"ClientHello without server_name") \
	X(DNS_DENIED,	"dns_denied",	"name not allowed, or another server") \
	X(QUIC,		"quic",		"QUIC blocked, or a long header namegate cannot read") \
	X(UNSOLICITED,	"unsolicited",	"no flow or remembered query for this packet") \
	X(FLOW_LIMIT,	"flow_limit",	"flow table (or the VM's share of it) is full") \
	X(REBIND,	"rebind",	"an address DNS must never bind") \
	X(SOURCE_ROUTE,	"source_route",	"IPv4 LSRR/SSRR option or IPv6 routing header") \
	X(REWRITE,	"rewrite",	"a segment rewrites judged stream bytes, or takes one out (urgent data)") \
	X(VM_LIMIT,	"vm_limit",	"the VM's share of a table other than flows is full") \
	X(HOST_DENIED,	"host_denied",	"an HTTP request's Host the VM may not reach, or one not framed") \
	X(DNS_BUDGET,	"dns_budget",	"a new name under a wildcard past its dns.max_names_per_suffix") \
	X(BUDGET,	"budget",	"a flow or datagram counted in an egress budget its VM has spent in the window")

enum dp_reason {
#define X(name, label, text) DP_REASON_##name,
	DP_REASONS(X)
#undef X
	DP_REASON_MAX,		/* how many: the size of every counter and label table */
	/*
	 * No reason: what a judge returns for "may pass". A value of its own, past the
	 * counted ones, so no counter, label or event can mistake it for a reason (and a
	 * judge's verdict stays one small value in a register).
	 */
	DP_REASON_ALLOWED
};

/* Frames dropped before or outside any VM's decision, counted per worker. */
#define DP_DROPS(X)							\
	X(MALFORMED,	"malformed",	"headers whose lengths do not fit the frame") \
	X(NOT_IP,	"not_ip",	"an ethertype namegate does not forward") \
	X(SLOW_PATH,	"slow_path",	"ICMP, fragments, other protocols") \
	X(DNS_BAD,	"dns_malformed", "a DNS message that does not parse") \
	X(TX_FULL,	"tx_full",	"the output queue was full") \
	X(NO_MBUF,	"no_mbuf",	"no buffer for a reply") \
	X(TABLE_FULL,	"table_full",	"a binding or pending-query table is full") \
	X(BAD_CSUM,	"bad_checksum",	"an IPv4 header, TCP or UDP checksum is wrong") \
	X(OUT_OF_WINDOW, "out_of_window", "a segment the receiver's window cannot accept") \
	X(HELLO_WAIT,	"hello_wait",	"a client's bytes after its TLS hello, before the server answered it (its TCP sends them again)") \
	X(FRAG_BAD,	"fragment_invalid", "overlapping, oversized or malformed fragments") \
	X(FRAG_TIMEOUT,	"fragment_timeout", "a datagram whose fragments did not all arrive") \
	X(ND_INVALID,	"nd_invalid",	"ND-typed ICMPv6 toward a VM in no shape ND has") \
	X(SLOW_QUEUE_FULL, "slow_queue_full", "an exception-path frame finding its queue between worker and main lcore full") \
	X(BIND_QUEUE_FULL, "bind_queue_full", "a DNS answer whose bindings the main lcore had no room for (the VM asks again)") \
	X(HA_STANDBY,	"ha_standby",	"a frame that came while this box's HA gate was shut (not master, a peer of higher priority forwarding, or held after a stall)") \
	X(HA_BEACON,	"ha_beacon",	"an HA pair's beacon, taken to the main lcore and never forwarded")

enum dp_drop {
#define X(name, label, text) DP_DROP_##name,
	DP_DROPS(X)
#undef X
	DP_DROP_MAX
};

#endif

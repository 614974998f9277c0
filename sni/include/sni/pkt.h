/*
 * pkt: decode an Ethernet frame down to its TCP or UDP payload. Handles 802.1Q and
 * 802.1ad tags, IPv4 options, and the IPv6 extension headers a host may legally send
 * before TCP/UDP. No allocation; every pointer aliases the frame.
 */
#ifndef SNI_PKT_H
#define SNI_PKT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum pkt_status {
	PKT_OK,			/* TCP or UDP, headers valid, payload located */
	PKT_OTHER,		/* valid, but not TCP/UDP over IP (ARP, ICMP, a non-first fragment...) */
	PKT_MALFORMED,		/* a header's lengths do not fit the frame */
};

#define PKT_VLAN_MAX	2
#define PKT_PROTO_TCP	6
#define PKT_PROTO_UDP	17

#define PKT_TCP_FIN	0x01
#define PKT_TCP_SYN	0x02
#define PKT_TCP_RST	0x04
#define PKT_TCP_PSH	0x08
#define PKT_TCP_ACK	0x10
#define PKT_TCP_URG	0x20

#define PKT_WSCALE_NONE	0xff

struct pkt {
	const uint8_t *dst_mac, *src_mac;	/* into the frame (6 bytes each): read them
					 * before anything rewrites the frame's */
	uint8_t src[16], dst[16];	/* network order; IPv4 in the first 4 bytes */
	uint16_t vlan;			/* outermost VLAN ID, the one the frame arrived on and
					 * leaves on; 0 when untagged */
	uint8_t nb_vlans;		/* tags before the ethertype */
	uint8_t hop_limit;		/* IPv4 TTL, IPv6 hop limit */
	uint16_t ethertype;		/* after the VLAN tags */
	uint16_t l3_off;		/* where the header after the ethertype starts */
	uint8_t family;			/* 4 or 6; 0 when not IP */
	uint8_t proto;			/* IP protocol of the transport header */
	bool fragment;			/* any IP fragment; only the first carries ports.
					 * An IPv6 atomic fragment (offset 0, M 0) is whole. */
	bool src_route;			/* IPv4 LSRR/SSRR, or an IPv6 routing header that
					 * routes (type 0, or segments left) */
	uint16_t l4_off;		/* where the transport header starts */
	uint16_t l4_len;		/* from there to the end of the IP packet */
	uint16_t sport, dport;
	uint8_t tcp_flags;
	uint8_t tcp_wscale;		/* a SYN's window scale option; PKT_WSCALE_NONE */
	uint16_t tcp_win;		/* TCP only, unscaled */
	uint32_t seq, ack;		/* TCP only */
	const uint8_t *payload;		/* transport payload, trimmed to the IP length; for
					 * other protocols, what follows the IP headers */
	size_t payload_len;
};

/* Decode frame (len bytes, starting at the destination MAC). Fills *out on PKT_OK and as
 * far as it got on PKT_OTHER. Inline: sni/pkt_fast.h. */
enum pkt_status pkt_decode(const uint8_t *frame, size_t len, struct pkt *out);

#endif

/*
 * A new master's announcements (ctl_ha.h): frames that make both segments' switches learn
 * the new path at once, instead of sending to the dead box until their entries age out.
 * Toward the uplink, each VM's own gratuitous ARP and unsolicited NA; toward the VMs, a
 * RARP from each uplink station, which no host answers or takes an address from.
 */
#include <string.h>

#include "ctl_ha.h"

#define ETH_ARP		0x0806
#define ETH_RARP	0x8035
#define ETH_IPV6	0x86dd
#define ETH_VLAN	0x8100
#define ETH_MIN		60	/* a frame's shortest, without its FCS */

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* dst, src, the VLAN tag when vlan is not 0, and type: the header's length. */
static size_t
ctl_ha_eth(uint8_t *buf, const uint8_t *dst, const uint8_t *src, uint16_t vlan, uint16_t type)
{
	size_t n = 12;

	memcpy(buf, dst, 6);
	memcpy(buf + 6, src, 6);
	if (vlan != 0) {
		put16(buf + n, ETH_VLAN);
		put16(buf + n + 2, vlan & 0xfff);
		n += 4;
	}
	put16(buf + n, type);
	return n + 2;
}

/* Padded to the shortest frame, as a NIC would. */
static size_t
ctl_ha_pad(uint8_t *buf, size_t n)
{
	if (n < ETH_MIN) {
		memset(buf + n, 0, ETH_MIN - n);
		n = ETH_MIN;
	}
	return n;
}

/* ARP or RARP over Ethernet (RFC 826, RFC 903): the fixed part, then the four addresses. */
static size_t
ctl_ha_arp(uint8_t *buf, size_t n, uint16_t op, const uint8_t *sha, const uint8_t *spa,
    const uint8_t *tha, const uint8_t *tpa)
{
	put16(buf + n, 1);		/* hardware: Ethernet */
	put16(buf + n + 2, 0x0800);	/* protocol: IPv4 */
	buf[n + 4] = 6;
	buf[n + 5] = 4;
	put16(buf + n + 6, op);
	memcpy(buf + n + 8, sha, 6);
	memcpy(buf + n + 14, spa, 4);
	memcpy(buf + n + 18, tha, 6);
	memcpy(buf + n + 24, tpa, 4);
	return ctl_ha_pad(buf, n + 28);
}

static const uint8_t ctl_ha_bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

size_t
ctl_ha_garp(uint8_t *buf, const uint8_t *mac, uint16_t vlan, const uint8_t *ip4)
{
	static const uint8_t zero[6];
	size_t n = ctl_ha_eth(buf, ctl_ha_bcast, mac, vlan, ETH_ARP);

	/* a request, sender and target address both ip4: RFC 5227's announcement */
	return ctl_ha_arp(buf, n, 1, mac, ip4, zero, ip4);
}

size_t
ctl_ha_rarp(uint8_t *buf, const uint8_t *mac, uint16_t vlan)
{
	static const uint8_t zero4[4];
	size_t n = ctl_ha_eth(buf, ctl_ha_bcast, mac, vlan, ETH_RARP);

	return ctl_ha_arp(buf, n, 3, mac, zero4, mac, zero4);	/* 3: request reverse */
}

/* The ICMPv6 checksum over the pseudo-header (RFC 8200 s8.1) and len bytes at icmp. */
static uint16_t
ctl_ha_csum6(const uint8_t *src, const uint8_t *dst, const uint8_t *icmp, size_t len)
{
	uint32_t sum = (uint32_t)len + 58;

	for (int i = 0; i < 16; i += 2)
		sum += (uint32_t)(src[i] << 8 | src[i + 1]) + (uint32_t)(dst[i] << 8 | dst[i + 1]);
	for (size_t i = 0; i < len; i += 2)
		sum += (uint32_t)(icmp[i] << 8 | (i + 1 < len ? icmp[i + 1] : 0));
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

size_t
ctl_ha_una(uint8_t *buf, const uint8_t *mac, uint16_t vlan, const uint8_t *ip6)
{
	static const uint8_t all_nodes[16] = { 0xff, 0x02, [15] = 1 };
	static const uint8_t all_nodes_mac[6] = { 0x33, 0x33, 0, 0, 0, 1 };
	size_t n = ctl_ha_eth(buf, all_nodes_mac, mac, vlan, ETH_IPV6);
	uint8_t *ip = buf + n, *icmp = ip + 40;
	const size_t icmp_len = 32;	/* NA 24 bytes, target link-layer option 8 */

	memset(ip, 0, 40 + icmp_len);
	ip[0] = 0x60;
	put16(ip + 4, icmp_len);
	ip[6] = 58;			/* ICMPv6 */
	ip[7] = 255;			/* RFC 4861 s7.1.2: a receiver drops any other */
	memcpy(ip + 8, ip6, 16);
	memcpy(ip + 24, all_nodes, 16);
	icmp[0] = 136;			/* Neighbor Advertisement */
	icmp[4] = 0x20;			/* override; not solicited, so not to one asker */
	memcpy(icmp + 8, ip6, 16);
	icmp[24] = 2;			/* target link-layer address */
	icmp[25] = 1;			/* in 8-byte units */
	memcpy(icmp + 26, mac, 6);
	put16(icmp + 2, ctl_ha_csum6(ip6, all_nodes, icmp, icmp_len));
	return n + 40 + icmp_len;
}

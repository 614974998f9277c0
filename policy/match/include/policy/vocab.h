/*
 * The words every room shares, in one shape: an address, and what a VM is on the wire.
 * The policy file gives them, the fast path matches frames against them, nftables builds
 * its rules from them. Copied whole, never field by field. libc only.
 */
#ifndef POLICY_VOCAB_H
#define POLICY_VOCAB_H

#include <stdbool.h>
#include <stdint.h>

struct pol_addr {
	uint8_t family;		/* 4 or 6 */
	uint8_t a[16];		/* network order; IPv4 in the first 4 bytes, rest zero */
};

struct pol_vm_id {
	uint8_t mac[6];
	uint16_t vlan;			/* 0: untagged */
	bool has4, has6;
	uint8_t ip4[4], ip6[16];	/* network order */
};

#endif

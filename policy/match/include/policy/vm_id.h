/*
 * What a VM is on the wire, in the one shape every room uses: the policy file gives it,
 * the fast path matches frames against it, nftables builds its rules from it. Copied
 * whole, never field by field. libc only.
 */
#ifndef POLICY_VM_ID_H
#define POLICY_VM_ID_H

#include <stdbool.h>
#include <stdint.h>

struct pol_vm_id {
	uint8_t mac[6];
	uint16_t vlan;			/* 0: untagged */
	bool has4, has6;
	uint8_t ip4[4], ip6[16];	/* network order */
};

#endif

/*
 * The prefixes DNS may never bind (SPEC s4 step 3), as compares on an address's bytes:
 * frame_addr_rebind() is made of these, and a caller that has an IPv6 address's embedded
 * IPv4 ones at hand already (frame_addr_embedded_v4()) asks them itself, inline.
 */
#ifndef SNI_FRAME_REBIND_H
#define SNI_FRAME_REBIND_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/*
 * The IPv4 prefixes DNS may never bind (SPEC s4 step 3), as compares on the address's
 * word: an IPv4 answer's address costs no table walk and no stack frame.
 */
static inline bool
frame_rebind4(const uint8_t *addr)
{
	uint32_t a = (uint32_t)addr[0] << 24 | (uint32_t)addr[1] << 16 |
	    (uint32_t)addr[2] << 8 | addr[3];

	return (a >> 24) == 0x00 ||	/* "this network", RFC 1122 s3.2.1.3 */
	    (a >> 24) == 0x7f ||	/* loopback */
	    (a >> 16) == 0xa9fe ||	/* link local, RFC 3927 */
	    (a >> 28) == 0xe ||		/* multicast */
	    a == 0xffffffff;		/* limited broadcast */
}

/*
 * The IPv6 prefixes DNS may never bind, as compares on the address's bytes (the first
 * fifteen read as two words): no table walk, no memcmp() call.
 */
static inline bool
frame_rebind6(const uint8_t *addr)
{
	uint64_t head, tail;

	memcpy(&head, addr, 8);
	memcpy(&tail, addr + 7, 8);
	return (head == 0 && tail == 0 && addr[15] <= 1) ||	/* unspecified, loopback */
	    (addr[0] == 0xfe && (addr[1] & 0xc0) == 0x80) ||	/* link local, fe80::/10 */
	    addr[0] == 0xff;					/* multicast */
}

#endif

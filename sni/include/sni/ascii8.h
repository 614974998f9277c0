/*
 * ASCII letter case eight bytes at a time, for the names the hot path lowers and compares
 * (DNS names, policy keys): one word's work for eight bytes, with no byte's answer leaking
 * into the next.
 */
#ifndef SNI_ASCII8_H
#define SNI_ASCII8_H

#include <stdint.h>

/*
 * The high bit of each byte of w (memory order, low byte first) that is an upper-case
 * ASCII letter. With the high bits cleared, adding 0x3f sets a byte's high bit from 'A' up,
 * adding 0x25 from '[' up, and no byte carries into the next; a byte's own high bit set
 * is not ASCII.
 */
static inline uint64_t
ascii_upper8(uint64_t w)
{
	uint64_t x = w & 0x7f7f7f7f7f7f7f7full;

	return (x + 0x3f3f3f3f3f3f3f3full) & ~(x + 0x2525252525252525ull) & ~w &
	    0x8080808080808080ull;
}

/* w with its upper-case ASCII letters lowered (a letter's 0x20 set), every other byte kept. */
static inline uint64_t
ascii_lower8(uint64_t w)
{
	return w | ascii_upper8(w) >> 2;
}

#endif

/*
 * rd: a bounds-checked read cursor over a byte buffer.
 *
 * Every wire read in sni/ goes through one of these. A nested length-prefixed vector is
 * split off as its own cursor, so a parser can never read past the vector it is in, let
 * alone past the buffer. All functions return false, and leave *r unspecified, when the
 * bytes are not there.
 */
#ifndef SNI_RD_H
#define SNI_RD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rd {
	const uint8_t *p;
	size_t len;		/* bytes left */
};

static inline struct rd
rd_make(const uint8_t *p, size_t len)
{
	return (struct rd){ .p = p, .len = len };
}

/* Big-endian numbers at p, which the caller has bounds-checked. */
static inline uint16_t
rd_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t
rd_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline bool
rd_skip(struct rd *r, size_t n)
{
	if (r->len < n)
		return false;
	r->p += n;
	r->len -= n;
	return true;
}

static inline bool
rd_u8(struct rd *r, uint8_t *v)
{
	if (r->len < 1)
		return false;
	*v = r->p[0];
	r->p++;
	r->len--;
	return true;
}

static inline bool
rd_u16(struct rd *r, uint16_t *v)
{
	if (r->len < 2)
		return false;
	*v = (uint16_t)(r->p[0] << 8 | r->p[1]);
	r->p += 2;
	r->len -= 2;
	return true;
}

static inline bool
rd_u24(struct rd *r, uint32_t *v)
{
	if (r->len < 3)
		return false;
	*v = (uint32_t)r->p[0] << 16 | (uint32_t)r->p[1] << 8 | r->p[2];
	r->p += 3;
	r->len -= 3;
	return true;
}

static inline bool
rd_u32(struct rd *r, uint32_t *v)
{
	if (r->len < 4)
		return false;
	*v = (uint32_t)r->p[0] << 24 | (uint32_t)r->p[1] << 16 | (uint32_t)r->p[2] << 8 | r->p[3];
	r->p += 4;
	r->len -= 4;
	return true;
}

/*
 * A QUIC variable-length integer (RFC 9000 s16): the top two bits of the first byte give
 * the length, 1, 2, 4 or 8 bytes, and the remaining bits the value, big-endian.
 */
static inline bool
rd_varint(struct rd *r, uint64_t *v)
{
	uint8_t b;
	size_t n;

	if (!rd_u8(r, &b))
		return false;
	n = (size_t)1 << (b >> 6);
	*v = b & 0x3f;
	for (size_t i = 1; i < n; i++) {
		if (!rd_u8(r, &b))
			return false;
		*v = *v << 8 | b;
	}
	return true;
}

/* Split off the next n bytes as *sub. */
static inline bool
rd_sub(struct rd *r, size_t n, struct rd *sub)
{
	if (r->len < n)
		return false;
	*sub = rd_make(r->p, n);
	r->p += n;
	r->len -= n;
	return true;
}

/* Split off a vector with an 8-bit length prefix. */
static inline bool
rd_vec8(struct rd *r, struct rd *sub)
{
	uint8_t n;

	return rd_u8(r, &n) && rd_sub(r, n, sub);
}

/* Split off a vector with a 16-bit length prefix. */
static inline bool
rd_vec16(struct rd *r, struct rd *sub)
{
	uint16_t n;

	return rd_u16(r, &n) && rd_sub(r, n, sub);
}

/* Split off a vector with a 24-bit length prefix. */
static inline bool
rd_vec24(struct rd *r, struct rd *sub)
{
	uint32_t n;

	return rd_u24(r, &n) && rd_sub(r, n, sub);
}

#endif

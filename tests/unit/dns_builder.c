/* The DNS unit tests' byte writer (dns_builder.h). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "dns_builder.h"

void
mb_u8(struct mb *m, unsigned int v)
{
	assert_true(m->len < sizeof(m->b));
	m->b[m->len++] = (uint8_t)v;
}

void
mb_u16(struct mb *m, unsigned int v)
{
	mb_u8(m, v >> 8 & 0xff);
	mb_u8(m, v & 0xff);
}

void
mb_u32(struct mb *m, uint32_t v)
{
	mb_u16(m, v >> 16);
	mb_u16(m, v & 0xffff);
}

void
mb_bytes(struct mb *m, const void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		mb_u8(m, ((const uint8_t *)p)[i]);
}

void
mb_question(struct mb *m, const char *label, size_t n)
{
	mb_u8(m, (unsigned int)n);
	mb_bytes(m, label, n);
	mb_u8(m, 7);
	mb_bytes(m, "example", 7);
	mb_u8(m, 3);
	mb_bytes(m, "com", 3);
	mb_u8(m, 0);
	mb_u16(m, 1);			/* A */
	mb_u16(m, 1);			/* IN */
}

void
mb_query(struct mb *m, uint16_t id, const char *label, size_t n)
{
	mb_u16(m, id);
	mb_u16(m, 0x0100);
	mb_u16(m, 1);
	mb_u16(m, 0);
	mb_u16(m, 0);
	mb_u16(m, 0);
	mb_question(m, label, n);
}

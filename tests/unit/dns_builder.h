/*
 * A byte writer for the DNS unit tests: messages are built field by field, each write
 * checked against the buffer (a test that overruns it fails, it never corrupts).
 */
#ifndef TEST_DNS_BUILDER_H
#define TEST_DNS_BUILDER_H

#include <stddef.h>
#include <stdint.h>

struct mb {
	uint8_t b[8192];
	size_t len;
};

void mb_u8(struct mb *m, unsigned int v);
void mb_u16(struct mb *m, unsigned int v);
void mb_u32(struct mb *m, uint32_t v);
void mb_bytes(struct mb *m, const void *p, size_t n);

/* The question label.example.com A IN, label n bytes as they are. */
void mb_question(struct mb *m, const char *label, size_t n);
/* A query (ID id, RD) for label (n bytes).example.com. */
void mb_query(struct mb *m, uint16_t id, const char *label, size_t n);

#endif

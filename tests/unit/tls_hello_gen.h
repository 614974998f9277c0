/* Random ClientHello messages (tls_hello_gen.c) for test_tls_hello_model. */
#ifndef NAMEGATE_TESTS_TLS_HELLO_GEN_H
#define NAMEGATE_TESTS_TLS_HELLO_GEN_H

#include <stddef.h>
#include <stdint.h>

#define MSG_MAX		4096	/* the longest message gen_msg() writes */

/* xorshift64*: the next number from *rng; one below n. */
uint32_t rnd(uint64_t *rng);
uint32_t rnd_below(uint64_t *rng, uint32_t n);

/* v as two big-endian bytes at p. */
void put16(uint8_t *p, size_t v);

/* A ClientHello handshake message at m (header included), its length; fields now and then wrong. */
size_t gen_msg(uint64_t *rng, uint8_t *m);

#endif

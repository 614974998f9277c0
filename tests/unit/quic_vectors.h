/*
 * Real QUIC Initials as fixed hex vectors, and the hex reader (quic_vectors.c): for the sni
 * parser's test and, through quic_fixture.h, the dp_quic tests.
 */
#ifndef QUIC_VECTORS_H
#define QUIC_VECTORS_H

#include <stddef.h>
#include <stdint.h>

/* Fixed real Initials: one (SNI ledgerbolt.com, 1250 bytes); a pair carrying one hello in two. */
extern const char qf_real_initial_hex[];
extern const char qf_pair1_hex[];
extern const char qf_pair2_hex[];

/* Hex digits into out (at most cap bytes); returns the byte count. */
size_t qf_unhex(const char *hex, uint8_t *out, size_t cap);

#endif

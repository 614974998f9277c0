/*
 * JSON-lines output for namegate-dump: one object per line, built with the helpers below
 * into a FILE. Strings from the wire are escaped, never trusted.
 */
#ifndef DUMP_OUT_H
#define DUMP_OUT_H

#include <stdint.h>
#include <stdio.h>

#include "sni/pkt.h"

/* Write s (len bytes, any content) as a JSON string, quotes included. */
void dump_json_str(FILE *f, const uint8_t *s, size_t len);

/* Write "src":"ADDR:PORT","dst":"ADDR:PORT" for the packet (IPv6 as [ADDR]:PORT). */
void dump_json_endpoints(FILE *f, const struct pkt *p);

/* Write an address (4 or 16 bytes by family) as a JSON string. */
void dump_json_addr(FILE *f, uint8_t family, const uint8_t *addr);

/* Write bytes as a lower-case hex JSON string. */
void dump_json_hex(FILE *f, const uint8_t *p, size_t len);

#endif

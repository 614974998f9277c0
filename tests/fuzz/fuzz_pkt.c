/*
 * Fuzz target for the frame decoder: any bytes in; on PKT_OK the payload must lie inside
 * the frame, past the headers.
 */
#include <stdint.h>
#include <stdlib.h>

#include "sni/pkt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pkt p;

	if (pkt_decode(data, size, &p) != PKT_OK)
		return 0;
	if (p.payload < data + 14 || p.payload + p.payload_len > data + size ||
	    (p.family != 4 && p.family != 6) || p.fragment ||
	    (p.proto != PKT_PROTO_TCP && p.proto != PKT_PROTO_UDP))
		abort();
	return 0;
}

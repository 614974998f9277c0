/*
 * Fuzz target for the frame decoder: any bytes in; on PKT_OK the payload must lie inside
 * the frame, past the headers; and the straight-through decoder of the common shape must
 * say exactly what the general walk says (pkt_int.h).
 */
#include <stdint.h>
#include <stdlib.h>

#include "pkt_int.h"
#include "sni/pkt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pkt p, walked;
	enum pkt_status st = pkt_decode(data, size, &p);

	if (st != pkt_decode_walk(data, size, &walked) ||
	    (st != PKT_MALFORMED && !pkt_same(&p, &walked)))
		abort();
	if (st != PKT_OK)
		return 0;
	if (p.payload < data + 14 || p.payload + p.payload_len > data + size ||
	    (p.family != 4 && p.family != 6) || p.fragment ||
	    (p.proto != PKT_PROTO_TCP && p.proto != PKT_PROTO_UDP))
		abort();
	return 0;
}

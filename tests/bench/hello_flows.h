/*
 * hello_flows: a capture of TCP client streams (hello.pcap) preloaded into memory and
 * grouped by flow, with the SNI namegate's own parsers read from each flow's stream, so a
 * benchmark of another inspector can time it over the same frames and check its answers
 * against ours. Loading allocates; nothing after it does.
 */
#ifndef BENCH_HELLO_FLOWS_H
#define BENCH_HELLO_FLOWS_H

#include <stddef.h>
#include <stdint.h>

#include "sni/tls.h"

struct hello_frame {
	const uint8_t *l3;		/* the IP header (after any VLAN tags), inside the arena */
	uint16_t l3_len;		/* from there to the end of the captured frame */
	uint64_t ts_ms;			/* capture time */
};

struct hello_flow {
	uint32_t first;			/* its frames: frames[first .. first + nb_frames) */
	uint32_t nb_frames;		/* in capture order */
	enum sni_status st;		/* what tls_hello_parse made of the reassembled stream */
	uint16_t sni_len;		/* SNI_FOUND only */
	char sni[SNI_HOST_MAX + 1];	/* NUL-terminated copy */
};

struct hello_flows {
	uint8_t *arena;			/* every kept frame, copied back to back */
	struct hello_frame *frames;
	struct hello_flow *flows;
	size_t nb_frames;
	size_t nb_flows;
	size_t skipped;			/* frames that are not TCP with a payload */
};

/*
 * Read every frame of the pcap at path. TCP frames with a payload are kept, grouped by
 * 5-tuple (frames of one flow need not be adjacent), and each flow's segments are put in
 * stream order with namegate's reassembler (the stream starts at the lowest sequence
 * number seen: the capture holds hellos, no SYNs) and parsed with tls_hello_parse.
 * Returns 0, or -1 with a message on stderr. Free with hello_flows_free, also after -1.
 */
int hello_flows_load(const char *path, struct hello_flows *hf);

void hello_flows_free(struct hello_flows *hf);

#endif

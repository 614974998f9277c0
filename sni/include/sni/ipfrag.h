/*
 * ipfrag: bounded, copy-based reassembly of IPv4 (RFC 791) and IPv6 (RFC 8200 s4.5)
 * fragments, and the inverse cut of a whole datagram into fragments.
 *
 * The caller owns all memory: a table and an array of slots, each with a buffer of
 * IPFRAG_BUF_SIZE bytes; nothing is allocated, nothing is logged. One table belongs to one
 * thread. Lookups scan the slots, so a table is meant to stay small (tens of slots).
 *
 * Datagrams are keyed by (owner, family, src, dst, id) and, for IPv4, the protocol
 * (RFC 791 s3.2). The owner is the caller's name for whoever may fill the table (a VM
 * slot); each owner holds at most owner_max datagrams, and a full owner or a full table
 * is refused, never served by evicting someone else's datagram.
 *
 * Fail closed: any overlap between two fragments (identical bytes too: RFC 5722 for IPv6,
 * and the same for IPv4, whose receivers disagree about which copy wins), two different
 * ends, or a fragment beyond the buffer kills the whole datagram. A killed datagram stays
 * in its slot as a tombstone until it times out, so its other fragments are refused with
 * the same status instead of starting a new datagram.
 */
#ifndef SNI_IPFRAG_H
#define SNI_IPFRAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The largest reassembled datagram (IP header included): with 128 bytes of headroom for
 * the L2 header, it fits one 64 KiB mbuf. */
#define IPFRAG_DATAGRAM_MAX	(65535 - 128)
/* Room for the link prefix and the unfragmentable part (IPv4 header with options; IPv6
 * header, hop-by-hop, routing and destination options before the fragment header). Longer
 * is IPFRAG_TOO_BIG. */
#define IPFRAG_HDR_ROOM		512
/* The longest link prefix kept with a datagram (Ethernet with two VLAN tags is 22). */
#define IPFRAG_PRE_MAX		64
/* Bytes of each slot's buffer. */
#define IPFRAG_BUF_SIZE		(IPFRAG_HDR_ROOM + IPFRAG_DATAGRAM_MAX)
/* Fragments held per datagram; one more kills it (IPFRAG_TOO_MANY). */
#define IPFRAG_FRAGS_MAX	64
/* A suggested timeout: RFC 8200 s4.5 says 60 s, but a filter holding other VMs' memory
 * has no reason to wait longer than a sender retransmits. */
#define IPFRAG_TIMEOUT_DEFAULT	5

enum ipfrag_status {
	IPFRAG_NEED_MORE,	/* taken; the datagram is not complete yet */
	IPFRAG_COMPLETE,	/* taken, and it completed the datagram: see ipfrag_add */
	IPFRAG_NOT_FRAGMENT,	/* a valid IP packet, but not a fragment; nothing taken */
	IPFRAG_OVERLAP,		/* overlaps a fragment already held: datagram killed */
	IPFRAG_TOO_BIG,		/* reaches past IPFRAG_DATAGRAM_MAX, or link prefix and
				 * unfragmentable part exceed IPFRAG_HDR_ROOM: killed */
	IPFRAG_TOO_MANY,	/* would be fragment IPFRAG_FRAGS_MAX + 1: datagram killed */
	IPFRAG_OWNER_LIMIT,	/* a new datagram, but its owner has owner_max: refused */
	IPFRAG_TABLE_FULL,	/* a new datagram, but no slot is free: refused */
	IPFRAG_MALFORMED,	/* bad header, checksum or lengths; its datagram, if held,
				 * is killed */
	IPFRAG_TIMEOUT,		/* never returned: the name for what ipfrag_age frees */
	IPFRAG_STATUS_MAX
};

/* Bytes [start, end) of the fragmentable part. */
struct ipfrag_range {
	uint32_t start;
	uint32_t end;
};

/*
 * One datagram in reassembly. The caller sets buf (IPFRAG_BUF_SIZE bytes, any alignment)
 * before ipfrag_init and never touches the rest.
 */
struct ipfrag_slot {
	uint8_t *buf;
	/* private */
	uint8_t state;			/* free, live, dead */
	uint8_t family;			/* 4 or 6 */
	uint8_t proto;			/* IPv4 protocol (key); IPv6: the first fragment's next */
	uint8_t why;			/* dead: the status that killed it */
	uint16_t owner;
	uint16_t hdr_len;		/* unfragmentable part, 0 until the first fragment */
	uint16_t pre_len;		/* the first fragment's link prefix */
	uint16_t nh_pos;		/* IPv6: the next-header byte naming the fragment header */
	uint16_t nb;			/* ranges held */
	uint32_t id;
	uint32_t total;			/* fragmentable bytes once the last one is in, else 0 */
	uint32_t held;			/* bytes held (ranges are disjoint) */
	uint32_t max_end;		/* highest end held */
	bool last_seen;
	uint64_t born;			/* now of the first fragment seen */
	uint8_t src[16], dst[16];
	struct ipfrag_range ranges[IPFRAG_FRAGS_MAX];
};

struct ipfrag_table {
	struct ipfrag_slot *slots;
	uint32_t nb_slots;
	uint32_t owner_max;
	uint64_t timeout;		/* in the caller's ticks */
	uint32_t used;			/* slots not free (live + dead) */
	uint32_t cursor;		/* where ipfrag_age goes on */
};

/*
 * Make t an empty table over slots[0 .. nb_slots), each of whose buf the caller has set.
 * owner_max datagrams per owner (0: none), timeout in the ticks the caller passes as now.
 */
void ipfrag_init(struct ipfrag_table *t, struct ipfrag_slot *slots, uint32_t nb_slots,
    uint32_t owner_max, uint64_t timeout);

/* A completed datagram: ip[0 .. ip_len) is the IP datagram, ip[-pre_len .. 0) the link
 * prefix its first fragment came with. */
struct ipfrag_out {
	const uint8_t *ip;
	size_t ip_len;
	uint16_t pre_len;
};

/*
 * Add one fragment. frame[0 .. pre_len) is an opaque link-layer prefix (at most
 * IPFRAG_PRE_MAX bytes; 0 for none), kept from the first fragment (offset 0) only, so the
 * caller gets the whole frame back in one piece. The IP packet starts at frame + pre_len
 * and runs to its IP length; len may include trailing link padding but not fall short.
 *
 * IPFRAG_COMPLETE: *out is the whole datagram, rewritten as never fragmented: IPv4 total
 * length set, MF and offset cleared (DF and the reserved bit kept from the first
 * fragment, whose header and options are used), header checksum recomputed; IPv6 with the
 * fragment header removed, payload length set, and the header before it naming the
 * fragment header's next header. out->ip aliases a slot's buffer, which is free again: it
 * stays valid until the next ipfrag_add or ipfrag_age on t. On every other status *out is
 * left alone. An IPv6 atomic fragment (offset 0, M clear; RFC 6946) is COMPLETE at once,
 * in a free slot's buffer (IPFRAG_TABLE_FULL if none), and held nowhere.
 *
 * A first fragment must carry the whole header chain and the upper-layer header (RFC
 * 7112; TCP: up to its data offset, others: 8 bytes), a non-final one a non-zero multiple
 * of 8 bytes; an IPv4 header checksum must be right. Otherwise IPFRAG_MALFORMED.
 */
enum ipfrag_status ipfrag_add(struct ipfrag_table *t, const uint8_t *frame, size_t len,
    uint16_t pre_len, uint16_t owner, uint64_t now, struct ipfrag_out *out);

/* Called by ipfrag_age for each incomplete datagram it frees: its owner and how many
 * fragments it held. */
typedef void ipfrag_expired_fn(void *arg, uint16_t owner, uint32_t nb_frags);

/*
 * Look at up to budget slots, going on from where the last call stopped, and free those
 * whose first fragment came timeout ticks or more before now. Incomplete datagrams are
 * reported to fn (may be NULL) and counted; tombstones of killed datagrams go silently
 * (their fragments were already refused). Returns how many incomplete ones were freed.
 */
uint32_t ipfrag_age(struct ipfrag_table *t, uint64_t now, uint32_t budget,
    ipfrag_expired_fn *fn, void *arg);

/* Datagrams (live or dead) held for owner. */
uint32_t ipfrag_owner_count(const struct ipfrag_table *t, uint16_t owner);

/* "need_more", "complete", "not_fragment", "overlap", ... "timeout". */
const char *ipfrag_status_str(enum ipfrag_status st);

/*
 * How ipfrag_cut_one cuts one whole datagram into fragments of at most mtu IP bytes.
 *
 * IPv4: every fragment keeps the datagram's ID; DF is cleared (the datagram only exists
 * here because its sender fragmented it: DF on a reassembled datagram asks for nothing
 * the sender did not already accept). The first fragment carries all options, later
 * ones only those with the copied flag (RFC 791 s3.1), padded with EOL to 4 bytes.
 * IPv6: the unfragmentable part (IPv6 header, hop-by-hop, and up to the last routing
 * header, with the destination options before it) is repeated, followed by a fragment
 * header with the caller's ID.
 */
struct ipfrag_plan {
	uint8_t family;
	uint8_t next;			/* IPv6: the fragment header's next header */
	uint16_t hdr_len;		/* the input's unfragmentable part */
	uint16_t hdr_rest;		/* IPv4: the header of the later fragments */
	uint16_t nh_pos;		/* IPv6: the byte to point at the fragment header */
	uint32_t data_len;		/* the fragmentable part */
	uint32_t first;			/* its bytes in the first fragment */
	uint32_t rest;			/* in each later one but the last */
	uint32_t nb;			/* fragments */
	uint32_t id;			/* IPv6 fragment header ID */
};

/*
 * Plan the cut of pkt (a whole IP datagram, len bytes, trailing padding allowed as in
 * ipfrag_add). Returns the number of fragments, or -EINVAL (not a valid whole datagram:
 * bad header, IPv4 MF/offset set or bad options, an IPv6 fragment header already there,
 * not longer than mtu), -EMSGSIZE (mtu leaves no room for 8 bytes of data after the
 * headers). id is the IPv6 fragment ID (ignored for IPv4).
 */
int ipfrag_cut_plan(const uint8_t *pkt, size_t len, uint16_t mtu, uint32_t id,
    struct ipfrag_plan *plan);

/* Bytes of fragment i of plan (i < plan->nb). */
size_t ipfrag_cut_len(const struct ipfrag_plan *plan, uint32_t i);

/*
 * Write fragment i of plan, cut from the same pkt, into out (cap bytes). Returns its
 * length (ipfrag_cut_len), or 0 if i is out of range or cap too small.
 */
size_t ipfrag_cut_one(const struct ipfrag_plan *plan, const uint8_t *pkt, uint32_t i,
    uint8_t *out, size_t cap);

#endif

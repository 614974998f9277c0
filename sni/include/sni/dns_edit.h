/*
 * Editing a DNS response before it reaches the VM, so that every address it gives is one
 * the VM can connect to and no ECH key makes a client hide the name namegate judges.
 *
 * The addresses an answer gives: every A/AAAA record whose owner is on the CNAME chain
 * from the question name (as dns_msg_parse() follows it, but with no limit on how many),
 * and the ipv4hint/ipv6hint SvcParams (RFC 9460 s7.3) of HTTPS (65) and SVCB (64)
 * records whose owner is on that chain. Each goes to a caller's function that binds it or
 * not; what it does not keep is removed. A/AAAA records anywhere else in the message (off
 * the chain, authority, additional) are removed without asking: nobody asked for them.
 *
 * HTTPS/SVCB records off the chain lose their hints, never offered (nobody asked for
 * them, so nothing binds them); every record loses its ech param when asked. A
 * removed key also leaves the record's mandatory list (RFC 9460 s8), and the mandatory
 * param goes when its list is empty. An AliasMode record (priority 0) loses any SvcParams
 * it carries: RFC 9460 s2.4.2 has clients ignore them, so only a client that should not
 * could see the difference. HTTPS/SVCB RDATA that is not RFC 9460 RDATA (keys out of
 * order, a hint not a whole number of addresses, a compressed TargetName) makes the
 * message DNS_EDIT_MALFORMED, as do names in the RDATA of the types that may hold
 * compressed ones (NS, SOA, MX, SRV, ...) that dns_msg_parse() would not accept.
 *
 * Removal shortens the message; compression pointers that pointed past removed bytes are
 * moved to match, and a name that pointed into removed bytes is written out in full. No
 * allocation and no recursion: the caller gives a scratch buffer, and the editor takes
 * about 36 KB of stack (an old -> new offset table for the 16384 offsets a pointer can
 * reach).
 */
#ifndef SNI_DNS_EDIT_H
#define SNI_DNS_EDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sni/dns.h"

#define DNS_TYPE_SVCB	64
#define DNS_TYPE_HTTPS	65

#define DNS_SVC_IPV4HINT	4
#define DNS_SVC_ECH		5
#define DNS_SVC_IPV6HINT	6

enum dns_edit_flags {
	DNS_EDIT_STRIP_ECH = 1 << 0,	/* remove the ech SvcParam of every HTTPS/SVCB record */
	DNS_EDIT_SAME_LEN = 1 << 1,	/* keep the length (DNS over TCP): see dns_edit() */
	DNS_EDIT_REBUILD = 1 << 2,	/* write the message anew even when nothing changes
					 * (tests compare the two ways) */
};

enum dns_edit_status {
	DNS_EDIT_OK,		/* *out_len is the new length; it may equal the old */
	DNS_EDIT_MALFORMED,	/* not a response dns_msg_parse() accepts */
	DNS_EDIT_NO_ROOM,	/* the edit would not fit cap, or SAME_LEN could not pad */
};

/* Whether to keep address a (ttl: the least TTL on its path from the question name). */
typedef bool (*dns_keep_fn)(void *arg, const struct dns_addr *a);

/* What an edit did, for counters. */
struct dns_edit_stats {
	uint32_t addrs_kept;		/* addresses keep() said yes to */
	uint32_t addrs_removed;		/* addresses keep() said no to, and those never asked */
	uint32_t ech_removed;		/* ech SvcParams removed */
	uint32_t rewritten;		/* 1: the message was written anew, its names too */
};

/*
 * Edit the response msg[0 .. len) in place; cap: bytes msg may hold (at least len). keep is
 * called once for every address the answer gives, in message order (it may bind as it is
 * asked); NULL keeps none. scratch (scratch_len bytes, at least len) is the caller's
 * working space. st, when not NULL, is zeroed and counts what was done.
 *
 * The result is never longer than len, so it still fits the size the client asked for
 * (EDNS or 512): removals only shorten it, and an edit that would lengthen it (a name
 * compressed against bytes that are not a name it keeps, written out in full) is
 * DNS_EDIT_NO_ROOM. Nothing past msg[len] is written. Trailing bytes after the four
 * sections are not part of the message and are dropped.
 *
 * An HTTPS/SVCB record whose hints are all removed loses the ipv4hint/ipv6hint param
 * itself, never the record (the client then resolves A/AAAA, which are judged the same).
 * With DNS_EDIT_SAME_LEN the freed bytes become EDNS Padding (RFC 7830) in the message's
 * OPT record, so a TCP stream keeps its length (fewer than 4 freed bytes and no Padding
 * option to grow: DNS_EDIT_NO_ROOM). With no OPT record they become one record of the
 * private-use type 65280, owned by the root, appended to the additional section (fewer
 * than its 11 bytes freed: DNS_EDIT_NO_ROOM). msg is then unchanged.
 * On any status but DNS_EDIT_OK, msg is as it was (keep may have been called).
 */
enum dns_edit_status dns_edit(uint8_t *msg, size_t len, size_t cap, unsigned int flags,
    dns_keep_fn keep, void *arg, uint8_t *scratch, size_t scratch_len, size_t *out_len,
    struct dns_edit_stats *st);

/*
 * dns_edit() of a message the caller parsed already: m is dns_msg_parse(msg, len), which
 * dns_edit() would otherwise do again. When no address has to go (keep() says yes to every
 * one, all are in the answer on the chain) and nothing else changes the message (no
 * HTTPS/SVCB record, no trailing bytes to pad, no name compressed against bytes the
 * editor would not write), msg is not written and *out_len is m->msg_len: the message a
 * rebuild would write, byte for byte. For a message m->plain, that is known without a
 * further pass over its records.
 */
enum dns_edit_status dns_edit_parsed(uint8_t *msg, size_t len, const struct dns_msg *m,
    size_t cap, unsigned int flags, dns_keep_fn keep, void *arg, uint8_t *scratch,
    size_t scratch_len, size_t *out_len, struct dns_edit_stats *st);

/* The message length below which every offset is a compression pointer's (14 bits). */
#define DNS_EDIT_PLAIN_REACH	0x4000

/*
 * May the caller ask keep() itself of a parsed message's addresses, m->addrs in order, and
 * hand its answers to dns_edit_asked()? When m is plain (struct dns_msg) and the edit could
 * write it anew in place: exactly when dns_edit_parsed() would take its shortcut. The
 * caller's loop then makes no call through a pointer for each address.
 */
static inline bool
dns_edit_plain(const struct dns_msg *m, size_t len, size_t cap, unsigned int flags,
    const uint8_t *scratch, size_t scratch_len)
{
	return m->plain && len < DNS_EDIT_PLAIN_REACH && len <= cap && scratch != NULL &&
	    scratch_len >= len && (flags & DNS_EDIT_REBUILD) == 0 &&
	    ((flags & DNS_EDIT_SAME_LEN) == 0 || m->msg_len == len);
}

/* dns_edit_asked() when an address goes: the scan and the build (dns_edit.c). */
enum dns_edit_status dns_edit_asked_rest(uint8_t *msg, size_t len, const struct dns_msg *m,
    size_t cap, unsigned int flags, uint64_t kept, uint8_t *scratch, size_t scratch_len,
    size_t *out_len, struct dns_edit_stats *st);

/*
 * dns_edit_parsed() of a message dns_edit_plain() took, whose addresses the caller asked
 * keep() about already: bit i of kept is its answer for m->addrs[i] (at most
 * DNS_ADDRS_MAX of them). The same result and counts, keep() not called again. Every one
 * kept: msg is not written and *out_len is m->msg_len, with no call at all. A message
 * dns_edit_plain() does not take is DNS_EDIT_NO_ROOM, msg as it was.
 */
static inline enum dns_edit_status
dns_edit_asked(uint8_t *msg, size_t len, const struct dns_msg *m, size_t cap,
    unsigned int flags, uint64_t kept, uint8_t *scratch, size_t scratch_len, size_t *out_len,
    struct dns_edit_stats *st)
{
	_Static_assert(DNS_ADDRS_MAX < 64, "kept holds a bit an address");
	/* the caller's test again, which the compiler folds into it: fail closed without */
	if (dns_edit_plain(m, len, cap, flags, scratch, scratch_len) &&
	    kept == (1ull << m->nb_addrs) - 1) {
		if (st != NULL)
			*st = (struct dns_edit_stats){ .addrs_kept = m->nb_addrs };
		*out_len = m->msg_len;
		return DNS_EDIT_OK;
	}
	return dns_edit_asked_rest(msg, len, m, cap, flags, kept, scratch, scratch_len, out_len,
	    st);
}

#endif

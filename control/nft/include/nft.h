/*
 * The slow path's kernel half (SPEC §5): namegate owns "table bridge <table>" and keeps in it,
 * per VM, the sets of what that VM may reach, so the kernel bridge that carries the exception
 * path (ICMP, IP fragments, other IP protocols) enforces the same bindings as the fast path.
 * Everything goes through libnftnl over one libmnl socket, never through the nft program;
 * every change is one batch the kernel applies whole or not at all, and every ack is read.
 *
 * What the table does, per VM (from its MAC, and its VLAN if it has one):
 *
 *   <vm>_v4, <vm>_v6		ipv4_addr . inet_proto . inet_service, timeout: the VM may send
 *				this protocol to this address and destination port. Port 0 means
 *				every port of the protocol (0 is no valid TCP/UDP destination port),
 *				and is how a protocol without ports (GRE, ESP...) is allowed.
 *				Checked on unfragmented packets and first fragments.
 *   <vm>_v4addr, <vm>_v6addr	ipv4_addr, timeout: the address is bound for the VM at all. Lets
 *				ICMP through to it and the later fragments of a datagram whose
 *				first fragment the set above passed (they carry no ports).
 *
 * Replies come back statelessly: this kernel has no bridge conntrack, so a frame to the VM
 * passes when it mirrors what the VM may send (source address, protocol and source port in
 * the sets), is an ICMP echo reply from a bound address, or is an ICMP error about a packet
 * the VM sent to a bound address (checked on the quoted header). ARP and neighbour discovery
 * pass only with the VM's own addresses. Everything else is counted and dropped. See
 * nft_rules.c for the rules and why.
 *
 * Named counters: <vm>_accept, <vm>_drop (from the VM), <vm>_in_accept, <vm>_in_drop (to it),
 * and unknown_drop (frames from no VM to no VM).
 *
 * One context per table; all calls from one thread (the main lcore's event loop).
 */
#ifndef NFT_H
#define NFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/vocab.h"

#define NFT_NAME_MAX	64	/* table and VM names: [A-Za-z0-9_.-], 1..63 characters */

struct nft_vm {
	const char *name;
	struct pol_vm_id id;
};

/*
 * One set element. proto 0 is the address form (<vm>_v4addr / _v6addr); any other proto is
 * the address . protocol . port form (<vm>_v4 / _v6), port in host order, 0 for every port.
 * A binding the policy allows on every port is typically three elements: the address,
 * address . tcp . 0 and address . udp . 0; one limited to port 443: the address,
 * address . tcp . 443 and address . udp . 443.
 */
struct nft_elem {
	uint16_t vm;		/* index into the VMs given to nft_open() */
	uint8_t family;		/* 4 or 6 */
	uint8_t proto;		/* 0 or an IPPROTO_* value */
	uint16_t port;
	uint8_t addr[16];	/* the first 4 bytes for family 4, network order */
	uint32_t timeout_ms;	/* remaining TTL of the binding; 0: no timeout */
};

enum nft_state {
	NFT_INTACT,		/* the table is as we last built it */
	NFT_MISSING,		/* someone deleted it */
	NFT_TAMPERED,		/* someone changed its chains, rules, sets, counters or flags */
};

struct nft_stats {
	uint64_t elements;	/* elements the kernel acknowledged (added or refreshed) */
	uint64_t errors;	/* error acks, or 1 for a batch that failed without one */
	uint64_t batches;	/* batches the kernel committed */
	uint64_t builds;	/* successful nft_build() calls */
	uint64_t listings;	/* checks that listed the table: the generation had moved */
};

struct nft_ctx;

/*
 * A context for "table bridge <table>" enforcing for vms[0..nvms). Copies what it needs, so
 * the caller's array and names may go away. Opens the netlink socket; touches no ruleset.
 * Returns NULL with errno EINVAL (bad or clashing names), ENOMEM, or the socket's error.
 */
struct nft_ctx *nft_open(const char *table, const struct nft_vm *vms, uint16_t nvms);

/* Close the socket and free ctx; the table stays (a reload hands it to the next context). */
void nft_close(struct nft_ctx *ctx);

/*
 * Build the table at start, and rebuild it after nft_check() found it missing or changed, in
 * one batch: the old table (if any) goes, the new one with every set, chain, rule and counter
 * comes, filled with elems[0..n) (the live bindings). Nothing is half-applied. Returns 0 or
 * -errno (-EINVAL for a bad element, -EAGAIN if other writers kept changing the ruleset).
 */
int nft_build(struct nft_ctx *ctx, const struct nft_elem *elems, size_t n);

/*
 * Judge only the frames that enter the bridge from interface a or b (the exception path's
 * TAPs); frames of the namespace's other bridges pass the table untouched. Takes effect at
 * the next nft_build(). Without it the table judges every bridged frame of the namespace.
 * 0 or -EINVAL.
 */
int nft_set_ports(struct nft_ctx *ctx, const char *a, const char *b);

/*
 * Add elems[0..n) in one batch, each with its own timeout; an element already in its set gets
 * the new timeout (Linux >= 6.12 updates it in place; older kernels keep the old expiry).
 * Returns 0 once the kernel acknowledged every message (the elements are live), -EINVAL for
 * a bad element (nothing sent), -ESTALE when the table is missing or was changed behind our
 * back, or was never built (nothing added: call nft_build() with the live bindings), or
 * another -errno the kernel returned (counted in nft_stats.errors, logged, nothing added).
 */
int nft_bind(struct nft_ctx *ctx, const struct nft_elem *elems, size_t n);

/*
 * Replace what the sets of the VMs vms[0..nvms) hold (indexes into the VMs given to
 * nft_open()) with elems[0..n), in one batch: the sets are emptied and refilled together,
 * so no frame ever meets them half done, and the table, its chains, rules, counters and
 * every other VM's sets stay as they are. elems should belong to those VMs. Same returns
 * as nft_bind(), and -EINVAL for a VM out of range.
 */
int nft_refill(struct nft_ctx *ctx, const uint16_t *vms, size_t nvms,
    const struct nft_elem *elems, size_t n);

/*
 * Is the table still as built? One GETGEN round trip (about 2 us here) when nothing in the
 * network namespace's ruleset changed since our last batch; otherwise lists the table and
 * compares it with the listing taken right after the build. Set elements are not compared:
 * one added or deleted behind our back goes unnoticed. While the table is gone the kernel
 * bridge forwards everything, so call this often (every 100 ms costs nothing) and
 * nft_build() with the live bindings on anything but NFT_INTACT. Returns an enum nft_state,
 * or -errno when the kernel could not be asked.
 */
int nft_check(struct nft_ctx *ctx);

/* Delete the table (on exit). Returns 0, also when it is already gone, or -errno. */
int nft_destroy(struct nft_ctx *ctx);

void nft_stats_get(const struct nft_ctx *ctx, struct nft_stats *out);

/*
 * The elements every VM's sets hold now, as the kernel lists them (one GETSETELEM dump per
 * set, elements counted, not decoded): what `nft list table` shows, expired ones gone. A
 * set or table that is not there holds 0. Costs about what listing the sets does, so call
 * it at a bounded rate. 0 with *n, or -errno (-EINTR: the ruleset changed meanwhile).
 */
int nft_count(struct nft_ctx *ctx, uint64_t *n);

/* "intact", "missing", "tampered". */
const char *nft_state_str(enum nft_state s);

#endif /* NFT_H */

/*
 * Shared by the nft_*.c files only: the context, the batch and request helpers (nft_batch.c),
 * element encoding (nft_elem.c), object names (nft_obj.c), table building (nft_table.c, with
 * its rules in nft_rules.h) and its fingerprint (nft_watch.c).
 */
#ifndef NFT_INT_H
#define NFT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libmnl/libmnl.h>
#include <libnftnl/batch.h>

#include "nft.h"

#define NFT_FAMILY		7	/* NFPROTO_BRIDGE */
#define NFT_OBJ_NAME_MAX	(NFT_NAME_MAX + 16)	/* "<vm>_in_accept" */
#define NFT_ELEMS_PER_MSG	512	/* an element list nest must stay under 64 KiB */
#define NFT_TRIES		4	/* attempts when other writers race us */
#define NFT_MSG_BOUND		4096	/* no table, chain, set, counter or rule message is longer */
#define NFT_ELEM_BOUND		64	/* nor one element in a set-element list */

#define NFT_BASE_CHAIN		"forward"
#define NFT_UNKNOWN_COUNTER	"unknown_drop"
#define NFT_VM_NAMES		10	/* per VM: 4 sets, 2 chains, 4 counters */

enum nft_set_kind {
	NFT_SET_V4,		/* <vm>_v4 */
	NFT_SET_V4ADDR,		/* <vm>_v4addr */
	NFT_SET_V6,
	NFT_SET_V6ADDR,
	NFT_SET_KINDS
};

struct nft_vmi {
	char name[NFT_NAME_MAX];
	struct pol_vm_id id;
};

/* A growable byte string: the table as the kernel lists it (nft_watch.c). */
struct nft_fp {
	uint8_t *p;
	size_t len, cap;
};

/* Counter values carried over a rebuild, so an operator's totals survive it. */
struct nft_carry {
	char name[NFT_OBJ_NAME_MAX];
	uint64_t pkts, bytes;
};

struct nft_ctx {
	struct mnl_socket *nl;
	uint32_t portid;
	uint32_t seq;
	uint32_t gen;		/* ruleset generation right after our last batch; 0: unknown */
	bool built;		/* ref describes what we built */
	char table[NFT_NAME_MAX];
	char ports[2][16];	/* IFNAMSIZ, zero-padded; "": every bridged frame is ours */
	struct nft_vmi *vms;
	uint16_t nvms;
	struct nft_fp ref;
	struct nft_carry *carry;
	size_t ncarry;
	int rcvbuf, sndbuf;	/* what we asked the socket for so far */
	uint8_t *rx;
	size_t rxlen;
	struct nft_stats st;
};

/* One batch being built: nftnl pages plus the sequence numbers whose acks we must read. */
struct nft_batch {
	struct nftnl_batch *nb;
	uint32_t genid;		/* 0: apply whatever the ruleset generation is */
	uint32_t begin_seq;	/* seq of the batch-begin message */
	uint32_t echo_seq;	/* seq of the message whose NEWGEN echo tells the generation */
	uint32_t nmsgs;		/* messages after begin, each with NLM_F_ACK */
	uint64_t nelems;	/* elements carried, for the stats */
	bool bad;		/* out of memory while building */
};

/* Called for each data message of a reply; returns 0 or -errno (stops the reply). */
typedef int nft_msg_fn(const struct nlmsghdr *nlh, void *data);

/* nft_batch.c */
int nft_sock_open(struct nft_ctx *c);
void nft_sock_close(struct nft_ctx *c);
int nft_batch_start(struct nft_ctx *c, struct nft_batch *b, uint32_t genid);
struct nlmsghdr *nft_batch_hdr(struct nft_ctx *c, struct nft_batch *b, uint16_t type,
    uint16_t flags, size_t bound);
void nft_batch_next(struct nft_batch *b);
int nft_batch_commit(struct nft_ctx *c, struct nft_batch *b);
void nft_batch_free(struct nft_batch *b);
int nft_request(struct nft_ctx *c, uint16_t type, uint16_t flags, uint16_t name_attr,
    const char *name, nft_msg_fn *cb, void *data);
/* nft_request() for a request built by the caller (its seq from c->seq++). */
int nft_talk(struct nft_ctx *c, const struct nlmsghdr *req, nft_msg_fn *cb, void *data);
int nft_gen_get(struct nft_ctx *c, uint32_t *gen);
uint32_t nft_gen_next(uint32_t gen);
void nft_warn(const struct nft_ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* nft_elem.c */
int nft_elems_check(const struct nft_ctx *c, const struct nft_elem *e, size_t n);
int nft_elems_put(struct nft_ctx *c, struct nft_batch *b, const struct nft_elem *e, size_t n);
void nft_set_name(char *buf, size_t len, const struct nft_vmi *v, enum nft_set_kind k);

/* nft_obj.c */
void nft_vm_names(const struct nft_vmi *v, char out[NFT_VM_NAMES][NFT_OBJ_NAME_MAX]);

/* nft_table.c */
int nft_table_put(struct nft_ctx *c, struct nft_batch *b);
int nft_table_del_put(struct nft_ctx *c, struct nft_batch *b);

/* nft_watch.c */
int nft_fp_take(struct nft_ctx *c, struct nft_fp *fp, uint32_t *gen);
void nft_fp_free(struct nft_fp *fp);
int nft_carry_read(struct nft_ctx *c);
int nft_sync(struct nft_ctx *c);

#endif /* NFT_INT_H */

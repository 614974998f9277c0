/*
 * What the DNS modules share: the table of forwarded queries, and judging (dp_dns.c) and
 * learning (dp_dns_answer.c) one message, for datagrams and streams (dp_dns_tcp.c) alike.
 */
#ifndef DP_DNS_INT_H
#define DP_DNS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "dp.h"
#include "dp_flow_tab.h"
#include "sni/copy8.h"
#include "sni/dns.h"
#include "sni/dns_edit.h"
#include "sni/pkt.h"

/*
 * A forwarded query, keyed as its answer will come back: to the port it left from, with
 * its ID, from the resolver. Over UDP both are namegate's, drawn at random (RFC 5452 s9.2:
 * 32 bits an off-path forger must guess, where the VM's own port, which an accomplice may
 * know, left 16); over TCP both are the VM's, in a connection the VM opened.
 */
struct dp_pending_key {
	uint16_t vm;
	uint8_t family;
	uint8_t proto;
	uint16_t port;
	uint16_t id;
	uint8_t resolver[16];
};

/*
 * What judging a query's name found, kept with the query for its answer, which asks the
 * same of the same name (dp_dns_learn()): the policy's ports under generation gen only.
 */
struct dp_dns_judged {
	bool valid;
	bool again;			/* allowed, nothing counted: allowed again under gen */
	uint16_t text_len;		/* dns_name_to_text()'s */
	uint32_t gen;
	uint64_t hash;			/* dp_name_hash() of the text */
	struct pol_ports ports;		/* pol_match_name_ports(); the budget in .budget */
};

struct dp_pending_entry {
	struct dp_pending_key key;
	uint64_t expires;
	uint32_t hash;			/* the index's hash of key (dp_flow_tab.h) */
	uint16_t vm_id;			/* the ID the VM chose, restored in the answer */
	uint16_t vm_port;		/* the port the VM sent from, restored in the answer */
	int32_t same;			/* its question's slots (dp_pending_same_slot()), or -1 */
	uint16_t qtype, qclass;
	uint8_t qname_len;
	bool in_use;
	bool would_block;		/* audit: the name was not allowed */
	bool capped;			/* caps may hold a bit; false: all zero */
	uint8_t qname[DNS_NAME_WIRE_MAX];	/* lower case, as it left */
	uint8_t caps[DNS_CASE_BYTES];	/* the VM's spelling of it, restored in the answer */
	struct dp_dns_judged judged;	/* over UDP; not valid over TCP */
};

#define DP_PENDING_SAME_ROWS	2
#define DP_PENDING_SAME_SLOTS	512	/* a row's: a VM's questions in flight, counted by hash */
#define DP_PENDING_SAME_MAX	8	/* UDP queries of one question a VM may have in flight */

/*
 * A VM's queries in flight on a worker, and the entry of the last one remembered. same:
 * its UDP queries in flight by question (name and type), a count-min sketch: each row
 * counts a question in the slot of its own bits of the question's hash
 * (dp_pending_same_slot()), and the least of its rows' counts is never below the
 * question's own. Each one in flight is one more key a forged answer to that question
 * may hit (RFC 5452 s5, the birthday attack): a VM holding its max_pending_per_vm of one
 * question would take 10 of the 32 bits a forger must guess. Questions sharing a slot in
 * one row share its count: with a single row of 256, a VM with 640 questions in flight
 * was refused one in a few hundred; with two rows of 512 and 1,024 in flight, about one in
 * a million (both slots need eight others).
 */
struct dp_pending_vm {
	uint32_t n;
	uint32_t last;
	/* 16 bits: no slot may wrap, and a worker holds DP_PENDING_CAP (16,384) queries */
	uint16_t same[DP_PENDING_SAME_ROWS][DP_PENDING_SAME_SLOTS];
};

/*
 * A question's slot in each row, row r's in bits 16r and up, from its name's
 * dp_name_hash() (keyed: no VM aims at one); the type spread over every bit, so that a
 * name's A and AAAA share neither slot but by chance.
 */
static inline int32_t
dp_pending_same_slot(uint64_t name_hash, uint16_t qtype)
{
	uint64_t x = name_hash ^ (uint64_t)qtype * 0x9e3779b97f4a7c15u;

	return (int32_t)((x & (DP_PENDING_SAME_SLOTS - 1)) |
	    ((x >> 32) & (DP_PENDING_SAME_SLOTS - 1)) << 16);
}

/* Row r's slot in same (dp_pending_same_slot()'s). */
static inline unsigned int
dp_pending_same_at(int32_t same, unsigned int r)
{
	return ((uint32_t)same >> (16 * r)) & (DP_PENDING_SAME_SLOTS - 1);
}

/* The count of same's question in vm's sketch v: at least its queries in flight. */
static inline unsigned int
dp_pending_same_count(const struct dp_pending_vm *v, int32_t same)
{
	unsigned int least = UINT16_MAX;

	for (unsigned int r = 0; r < DP_PENDING_SAME_ROWS; r++)
		if (v->same[r][dp_pending_same_at(same, r)] < least)
			least = v->same[r][dp_pending_same_at(same, r)];
	return least;
}

/* Count one more (step 1) or one fewer (step -1) of same's question in v. */
static inline void
dp_pending_same_step(struct dp_pending_vm *v, int32_t same, int step)
{
	for (unsigned int r = 0; r < DP_PENDING_SAME_ROWS; r++)
		v->same[r][dp_pending_same_at(same, r)] += (uint16_t)step;
}

/*
 * The flow table's index (dp_flow_tab.h) over an array of entries: a lookup reads a bucket
 * line or two and the entry, where rte_hash cost the fast path three times as much.
 */
struct dp_pending {
	struct dp_ft ft;
	struct dp_pending_entry *e;
	uint32_t *free;			/* entries not in use, a stack of nfree */
	uint32_t nfree;
	uint32_t cap, cursor;
	uint64_t rand;			/* the PRF's bits not yet taken as keys */
	uint64_t draws;			/* PRF outputs drawn: the next one's input */
	unsigned int rand_left;		/* keys in them: two an output */
	uint16_t nvms;
	struct dp_pending_vm *per_vm;	/* by VM slot */
};

/*
 * Remember q, sent by p (msg: the message q was parsed from, for the VM's spelling of the
 * name; NULL when the name holds no upper-case letter, its caps all zero), under a fresh
 * random ID and source port (the caller sends it with them: key.id, key.port), or
 * (as_written: DNS over TCP, where the query leaves as the VM wrote it but for the name's
 * case) under its own. NULL when the table is full or the key is taken (*why
 * DP_REASON_ALLOWED), or when vm has max_per_vm queries in flight on this worker (*why
 * DP_REASON_VM_LIMIT). The datagram's path counts its questions too: dp_pending_add_in().
 */
struct dp_pending_entry *dp_pending_add(struct dp_pending *t, const struct pkt *p, uint16_t vm,
    const struct dns_msg *q, const uint8_t *msg, uint64_t now, bool as_written,
    uint32_t max_per_vm, enum dp_reason *why);

/* Forget e (in t): every answer forgets its query. Inline: the call was a fifth of it. */
static inline void
dp_pending_del(struct dp_pending *t, struct dp_pending_entry *e)
{
	uint32_t i = (uint32_t)(e - t->e);

	dp_ft_delete(&t->ft, e->hash, i);
	t->free[t->nfree++] = i;
	e->in_use = false;
	t->per_vm[e->key.vm].n--;
	if (e->same >= 0)
		dp_pending_same_step(&t->per_vm[e->key.vm], e->same, -1);
}

/* The query the answer a (in p, from a resolver to vm) answers: ID, port, question. */
struct dp_pending_entry *dp_pending_match(struct dp_pending *t, const struct pkt *p,
    uint16_t vm, const struct dns_msg *a);

/*
 * The judgement of vm's last query remembered (over UDP), when it is still in flight and
 * asked q's question name, and says the name is allowed again under generation gen
 * (judged.again): the A and the AAAA question of one name come side by side. Else NULL.
 */
const struct dp_dns_judged *dp_pending_again(const struct dp_pending *t, uint16_t vm,
    const struct dns_msg *q, uint32_t gen);

/* Spelling caps of all zeroes: the name in lower case, as every query leaves. */
extern const uint8_t dp_dns_lower[DNS_CASE_BYTES];

/*
 * The text of name (wire form, len bytes, from the parser) in out (outlen bytes) when every
 * label of it can be a host name's (letters, digits, '-', '_'): its length. -1 and out[0]
 * NUL when not, or when it does not fit (out then untouched).
 */
int dp_dns_host_text(const uint8_t *name, size_t len, char *out, size_t outlen);

/* The same, its scan a word at a time where SSE2 would take it (for the unit test). */
int dp_dns_host_text_words(const uint8_t *name, size_t len, char *out, size_t outlen);

/*
 * The text of name (uncompressed wire form, len bytes, at least the root), when no byte
 * of it is escaped: its labels joined by dots, "." for the root, as dns_name_to_text()
 * writes it, in out (more than len bytes). Its length, and in *dots how many dots it has
 * between labels. Inline: every answer's name is joined, and the call was a fifth of it.
 */
static inline __attribute__((always_inline)) int
dp_dns_join_count(const uint8_t *name, size_t len, char *out, size_t *dots)
{
	size_t n = len - 2, i;

	*dots = 0;
	if (len < 2) {
		memcpy(out, ".", 2);
		return 1;
	}
	copy16((uint8_t *)out, name + 1, n);	/* a name's words: no call */
	for (i = name[0]; i < n; i += 1 + (size_t)name[i + 1]) {
		out[i] = '.';
		(*dots)++;
	}
	out[n] = '\0';
	return (int)n;
}

/*
 * The text of name (wire form, len bytes, at least the root) when no byte of it is escaped
 * (dp_dns_host_text() found so): its labels joined by dots in out (more than len bytes).
 * Its length.
 */
static inline int
dp_dns_join(const uint8_t *name, size_t len, char *out)
{
	size_t dots;

	return dp_dns_join_count(name, len, out, &dots);
}

/*
 * dns_msg_parse() of a VM's query (msg, len bytes) into q, the usual shape (one question
 * written out, at most an OPT record) read in one pass. *upper: false only when the
 * question name is known to hold no upper-case letter (dp_pending_add() then needs no
 * message to find its caps).
 */
enum dns_status dp_dns_query_read(const uint8_t *msg, size_t len, struct dns_msg *q,
    bool *upper);

/*
 * Is q's question name written out in full at DNS_HDR_LEN (no pointer), query or answer?
 * A query has nothing before its question to point at, so a name in one that does not is
 * no name a resolver expects; in an answer, its case is restored in place. Inline: every
 * query and every answer asks.
 */
static inline bool
dp_dns_question_plain(const struct dns_msg *q)
{
	return q->question_end == DNS_HDR_LEN + (size_t)q->qname_len + 4;
}

/*
 * Is q (len bytes) a query vm may send on worker w? Only a plain query (opcode 0) with
 * exactly one question, its name written out, allowed by its policy, and nothing after the
 * message; under a wildcard, within the suffix's budget of new questions. DP_REASON_ALLOWED
 * when it may go, else why not: dns_denied, dns_budget, or vm_limit (no room to remember
 * the name). name gets its text; j, when not NULL, what the answer may reuse (valid when the
 * policy was asked, whatever it said; its hash not yet).
 */
enum dp_reason dp_dns_query_judge(struct dp_worker *w, uint16_t vm, const struct dns_msg *q,
    size_t len, char *name, size_t namelen, struct dp_dns_judged *j);

/*
 * Bind every address answer a (dns_msg_parse() of msg) gives (A/AAAA on its CNAME chain,
 * HTTPS/SVCB hints) to (vm, question name), up to vm's share of the binding table, and
 * edit the message (msg, len bytes, room for cap) so that it gives no other (written only
 * when something changes: dns_edit_parsed()): what could not be bound is removed,
 * and with dns.ech: strip so is every ech SvcParam. same_len: the length may not change
 * (a TCP stream). DNS_EDIT_OK and *out_len, or a status for which the answer must not go.
 * *refused: the main lcore had no room for the bindings' events (dp_evt_bind_room()),
 * counted here; the answer must not go either, whatever the status. *rewritten (when not
 * NULL): the editor wrote the message anew, its names perhaps not as a found them. e: the
 * query a answers, whose judgement (e->judged) is reused when the generation that made it
 * judges.
 */
enum dns_edit_status dp_dns_learn(struct dp_worker *w, uint16_t vm, const struct dns_msg *a,
    const struct dp_pending_entry *e, uint8_t *msg, size_t len, size_t cap, bool same_len,
    size_t *out_len, bool *refused, bool *rewritten);

#endif

/*
 * The table of queries waiting for approval. Small (DP_ASK_SLOTS) and only touched by
 * queries for ask names and by housekeeping, so a linear scan is the whole index.
 */
#include <stdatomic.h>
#include <string.h>

#include "dp_ask.h"

void
dp_ask_init(struct dp_ask *t)
{
	memset(t->e, 0, sizeof(t->e));
	for (unsigned int i = 0; i < DP_ASK_SLOTS; i++)
		atomic_store_explicit(&t->deny[i], 0, memory_order_relaxed);
	t->next_seq = 1;
}

static uint8_t
dp_ask_fold(uint8_t c)
{
	return c >= 'A' && c <= 'Z' ? (uint8_t)(c | 0x20) : c;
}

/* The same question (RFC 4343: names compare without ASCII case; stubs may 0x20 them). */
static bool
dp_ask_same(const struct dp_ask_entry *e, uint16_t vm, const struct dns_msg *q)
{
	if (e->vm != vm || e->qtype != q->qtype || e->qclass != q->qclass ||
	    e->qname_len != q->qname_len)
		return false;
	for (unsigned int i = 0; i < e->qname_len; i++)
		if (dp_ask_fold(e->qname[i]) != dp_ask_fold(q->qname[i]))
			return false;
	return true;
}

enum dp_ask_hold
dp_ask_hold(struct dp_ask *t, uint16_t vm, const struct dns_msg *q, void *frame, uint64_t now,
    uint32_t timeout, uint32_t max_per_vm, uint32_t gen, struct dp_ask_entry **out,
    void **old)
{
	struct dp_ask_entry *free_e = NULL;
	uint32_t mine = 0;

	*out = NULL;
	*old = NULL;
	for (unsigned int i = 0; i < DP_ASK_SLOTS; i++) {
		struct dp_ask_entry *e = &t->e[i];

		if (e->seq == 0) {
			if (free_e == NULL)
				free_e = e;
			continue;
		}
		if (dp_ask_same(e, vm, q)) {
			/* the stub asked again: the answer must reach the query still waiting */
			*old = e->frame;
			e->frame = frame;
			e->absorbed++;
			*out = e;
			return DP_ASK_AGAIN;
		}
		if (e->vm == vm)
			mine++;
	}
	if (mine >= max_per_vm)
		return DP_ASK_VM_LIMIT;
	if (free_e == NULL)
		return DP_ASK_FULL;
	*free_e = (struct dp_ask_entry){
		.frame = frame, .seq = t->next_seq++, .first_seen = now, .deadline = now + timeout,
		.gen = gen, .vm = vm, .qtype = q->qtype, .qclass = q->qclass,
		.qname_len = q->qname_len,
	};
	memcpy(free_e->qname, q->qname, q->qname_len);
	*out = free_e;
	return DP_ASK_NEW;
}

void
dp_ask_forget(struct dp_ask *t, struct dp_ask_entry *e)
{
	(void)t;
	e->seq = 0;
	e->frame = NULL;
}

bool
dp_ask_denied(const struct dp_ask *t, const struct dp_ask_entry *e)
{
	return e->seq != 0 &&
	    atomic_load_explicit(&t->deny[e - t->e], memory_order_acquire) == e->seq;
}

void
dp_ask_deny(struct dp_ask *t, uint32_t slot, uint64_t seq)
{
	if (slot < DP_ASK_SLOTS)
		atomic_store_explicit(&t->deny[slot], seq, memory_order_release);
}

bool
dp_ask_expired(const struct dp_ask_entry *e, uint64_t now)
{
	return e->seq != 0 && now >= e->deadline;
}

uint32_t
dp_ask_count(const struct dp_ask *t, uint16_t vm)
{
	uint32_t n = 0;

	for (unsigned int i = 0; i < DP_ASK_SLOTS; i++)
		n += t->e[i].seq != 0 && t->e[i].vm == vm;
	return n;
}

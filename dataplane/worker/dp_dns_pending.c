/*
 * The table of queries in flight (dp_dns_pending.h): each forwarded query remembered under
 * the ID and port it left with, until its answer comes back or it ages out.
 */
#include <errno.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_malloc.h>

#include "dp_dns_int.h"
#include "dp_dns_pending.h"
#include "dp_dns_pending_add.h"
#include "dp_flow_tab.h"
#include "dp_hash.h"
#include "dp_mem.h"

struct dp_pending *
dp_pending_create(const char *name, uint32_t cap, uint16_t nvms, int socket)
{
	struct dp_pending *t;

	if ((t = rte_zmalloc_socket("dp_pending", sizeof(*t), 0, socket)) == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	t->cap = cap;
	t->nvms = nvms;
	t->e = rte_zmalloc_socket(name, (size_t)cap * sizeof(t->e[0]), 0, socket);
	t->free = rte_malloc_socket("dp_pending_free", (size_t)cap * sizeof(t->free[0]), 0,
	    socket);
	t->per_vm = rte_zmalloc_socket("dp_pending_vm", (size_t)(nvms + 1) *
	    sizeof(t->per_vm[0]), 0, socket);
	if (t->e == NULL || t->free == NULL || t->per_vm == NULL ||
	    dp_ft_init(&t->ft, cap, dp_hash_seed(), socket) != 0) {
		dp_pending_free(t);
		rte_errno = ENOMEM;
		return NULL;
	}
	for (uint32_t i = 0; i < cap; i++)	/* entry 0 on top */
		t->free[i] = cap - 1 - i;
	t->nfree = cap;
	return t;
}

void
dp_pending_free(struct dp_pending *t)
{
	if (t == NULL)
		return;
	dp_ft_fini(&t->ft);
	rte_free(t->per_vm);
	rte_free(t->free);
	rte_free(t->e);
	rte_free(t);
}

unsigned int
dp_pending_age(struct dp_pending *t, uint64_t now, unsigned int budget)
{
	unsigned int n, aged = 0;

	for (n = 0; n < budget && n < t->cap; n++) {
		struct dp_pending_entry *e = &t->e[t->cursor];

		t->cursor = t->cursor + 1 == t->cap ? 0 : t->cursor + 1;
		if (e->in_use && e->expires <= now) {
			dp_pending_del(t, e);
			aged++;
		}
	}
	return aged;
}

struct dp_pending_entry *
dp_pending_add(struct dp_pending *t, const struct pkt *p, uint16_t vm, const struct dns_msg *q,
    const uint8_t *msg, uint64_t now, bool as_written, uint32_t max_per_vm, enum dp_reason *why)
{
	return dp_pending_add_in(t, p, vm, q, msg, now, as_written, -1, max_per_vm, why);
}

/*
 * The n bytes at x and y the same? A word at a time, the tail as the last eight (bytes
 * compared twice compare the same), with no call for a length memcmp() cannot know.
 */
static inline bool
dp_dns_same_name(const uint8_t *x, const uint8_t *y, size_t n)
{
	uint64_t a, b, diff = 0;

	if (n < 8) {
		for (size_t i = 0; i < n; i++)
			diff |= (uint64_t)(x[i] ^ y[i]);
		return diff == 0;
	}
	for (size_t i = 0; i + 8 <= n; i += 8) {
		memcpy(&a, x + i, 8);
		memcpy(&b, y + i, 8);
		diff |= a ^ b;
	}
	memcpy(&a, x + n - 8, 8);
	memcpy(&b, y + n - 8, 8);
	return (diff | (a ^ b)) == 0;
}

/* Does the answer's question equal the one we forwarded? (RFC 5452 s9.1) */
static bool
dp_dns_same_question(const struct dp_pending_entry *e, const struct dns_msg *a)
{
	return a->qr && a->has_question && a->qtype == e->qtype && a->qclass == e->qclass &&
	    a->qname_len == e->qname_len && dp_dns_same_name(a->qname, e->qname, e->qname_len);
}

const struct dp_dns_judged *
dp_pending_again(const struct dp_pending *t, uint16_t vm, const struct dns_msg *q, uint32_t gen)
{
	const struct dp_pending_entry *e;

	if (vm > t->nvms)
		return NULL;
	/* the entry may have been answered since, and hold another VM's query now */
	e = &t->e[t->per_vm[vm].last];
	return e->in_use && e->key.vm == vm && e->judged.valid && e->judged.again &&
	    e->judged.gen == gen && e->qname_len == q->qname_len &&
	    dp_dns_same_name(e->qname, q->qname, q->qname_len) ? &e->judged : NULL;
}

struct dp_pending_entry *
dp_pending_match(struct dp_pending *t, const struct pkt *p, uint16_t vm, const struct dns_msg *a)
{
	struct dp_pending_key k;
	struct dp_pending_entry *e;

	memset(&k, 0, sizeof(k));
	k.vm = vm;
	k.family = p->family;
	k.proto = p->proto;
	k.port = p->dport;
	k.id = a->id;
	dp_pending_resolver(&k, p->family, p->src);
	e = dp_pending_find(t, dp_pending_hash(t, &k), &k);
	return e != NULL && dp_dns_same_question(e, a) ? e : NULL;
}

uint64_t
dp_pending_mem(uint32_t cap, uint16_t nvms)
{
	struct dp_pending *t = NULL;

	return dp_mem_alloc(sizeof(*t)) + dp_mem_alloc((uint64_t)cap * sizeof(t->e[0])) +
	    dp_mem_alloc((uint64_t)cap * sizeof(t->free[0])) +
	    dp_mem_alloc((uint64_t)(nvms + 1) * sizeof(t->per_vm[0])) +
	    dp_mem_alloc((uint64_t)dp_ft_buckets(cap) * sizeof(struct dp_ft_bucket));
}

uint32_t
dp_pending_count(const struct dp_pending *t, uint16_t vm)
{
	return vm <= t->nvms ? t->per_vm[vm].n : 0;
}

/*
 * DNS name budgets: the window arithmetic, and the per-VM memory of names and suffixes.
 */
#include <string.h>

#include <rte_errno.h>
#include <rte_malloc.h>

#include "dp_dns_budget.h"
#include "dp_hash.h"
#include "dp_mem.h"

/* A name a VM asked for: who it is (32 bits of its key) and until when it counts as seen. */
struct dp_name_entry {
	uint32_t tag;
	uint32_t until;			/* seconds since start; 0 or past: free */
};

/* One suffix's count of new names; key 0: never used. */
struct dp_suffix {
	uint64_t key;
	struct dp_window w;
};

struct dp_name_budget {
	uint16_t nvms;
	uint64_t admitted;		/* new questions counted, ever */
	struct dp_name_entry *names;	/* (nvms + 1) regions of DP_NAMES_PER_VM */
	struct dp_suffix *suffixes;	/* (nvms + 1) regions of DP_SUFFIXES_PER_VM */
};

void
dp_window_roll(struct dp_window *w, uint32_t per, uint64_t now)
{
	uint64_t k = now / per;

	if (w->per != per) {
		/* counts taken in other windows say nothing about these: start again */
		*w = (struct dp_window){ .k = k, .per = per };
		return;
	}
	if (k <= w->k)
		return;
	w->prev = k == w->k + 1 ? w->cur : 0;
	w->cur = 0;
	w->k = k;
}

bool
dp_window_room(const struct dp_window *w, uint32_t count, uint64_t now)
{
	uint64_t elapsed = now - w->k * w->per;		/* 0 .. per - 1 after a roll */

	if (elapsed >= w->per)
		elapsed = w->per;
	/* cur + prev * (per - elapsed) / per < count, in integers: multiplied by per */
	return (uint64_t)w->cur * w->per + (uint64_t)w->prev * (w->per - elapsed) <
	    (uint64_t)count * w->per;
}

bool
dp_window_live(const struct dp_window *w, uint64_t now)
{
	struct dp_window c = *w;

	if (w->per == 0)
		return false;
	dp_window_roll(&c, w->per, now);
	return c.cur != 0 || c.prev != 0;
}

struct dp_name_budget *
dp_name_budget_create(uint16_t nvms, int socket)
{
	size_t regions = (size_t)nvms + 1;
	struct dp_name_budget *t;

	if ((t = rte_zmalloc_socket("dp_names", sizeof(*t), 0, socket)) == NULL)
		return NULL;
	t->nvms = nvms;
	t->names = rte_zmalloc_socket("dp_names_e", regions * DP_NAMES_PER_VM *
	    sizeof(t->names[0]), RTE_CACHE_LINE_SIZE, socket);
	t->suffixes = rte_zmalloc_socket("dp_names_sfx", regions * DP_SUFFIXES_PER_VM *
	    sizeof(t->suffixes[0]), RTE_CACHE_LINE_SIZE, socket);
	if (t->names == NULL || t->suffixes == NULL) {
		dp_name_budget_free(t);
		rte_errno = ENOMEM;
		return NULL;
	}
	return t;
}

void
dp_name_budget_forget(struct dp_name_budget *t, uint16_t vm)
{
	if (vm > t->nvms)
		return;
	memset(&t->names[(size_t)vm * DP_NAMES_PER_VM], 0, DP_NAMES_PER_VM * sizeof(t->names[0]));
	memset(&t->suffixes[(size_t)vm * DP_SUFFIXES_PER_VM], 0,
	    DP_SUFFIXES_PER_VM * sizeof(t->suffixes[0]));
}

void
dp_name_budget_free(struct dp_name_budget *t)
{
	if (t == NULL)
		return;
	rte_free(t->suffixes);
	rte_free(t->names);
	rte_free(t);
}

/*
 * vm's counter for the suffix whose key is key: its own, else a slot never used or one
 * whose windows no longer weigh anything. NULL when all DP_SUFFIXES_PER_VM still count.
 */
static struct dp_suffix *
dp_name_budget_suffix(struct dp_name_budget *t, uint16_t vm, uint64_t key, uint64_t now)
{
	struct dp_suffix *s = &t->suffixes[(size_t)vm * DP_SUFFIXES_PER_VM], *free_s = NULL;

	for (unsigned int i = 0; i < DP_SUFFIXES_PER_VM; i++) {
		if (s[i].key == key)
			return &s[i];
		if (free_s == NULL && (s[i].key == 0 || !dp_window_live(&s[i].w, now)))
			free_s = &s[i];
	}
	if (free_s != NULL)
		*free_s = (struct dp_suffix){ .key = key };
	return free_s;
}

enum dp_name_budget_verdict
dp_name_budget_charge(struct dp_name_budget *t, uint16_t vm, const char *name, size_t len,
    uint16_t qtype, size_t suffix_len, uint32_t count, uint32_t per, uint64_t now)
{
	struct dp_name_entry *region, *free_e[2] = { NULL, NULL }, *slot;
	unsigned int nfree[2] = { 0, 0 };
	char canon[POL_NAME_MAX + sizeof(qtype)];
	struct dp_suffix *sx;
	uint32_t tag, b[2];
	uint64_t h;

	if (vm > t->nvms || len == 0 || len > POL_NAME_MAX || suffix_len >= len || per == 0)
		return DP_NB_FULL;	/* no query that was allowed looks like this: refuse */
	/* names are compared canonically (SPEC s3): "A.example.com" is not a new name */
	for (size_t i = 0; i < len; i++)
		canon[i] = name[i] >= 'A' && name[i] <= 'Z' ? (char)(name[i] | 0x20) : name[i];
	memcpy(canon + len, &qtype, sizeof(qtype));	/* the question, not the name */
	h = dp_hash_bytes(canon, len + sizeof(qtype));
	tag = (uint32_t)(h >> 32);
	/*
	 * Two candidate buckets, a new name going to the emptier: with one, the first bucket
	 * to fill refuses its VM at half the region; with two choices, near the end of it.
	 */
	b[0] = (uint32_t)h % DP_NAMES_BUCKETS;
	b[1] = (uint32_t)(h >> 16) % DP_NAMES_BUCKETS;
	if (b[1] == b[0])
		b[1] = (b[0] + 1) % DP_NAMES_BUCKETS;
	region = &t->names[(size_t)vm * DP_NAMES_PER_VM];
	for (unsigned int j = 0; j < 2; j++)
		for (unsigned int i = 0; i < DP_NAMES_WAYS; i++) {
			struct dp_name_entry *e = &region[b[j] * DP_NAMES_WAYS + i];

			if (e->until > now && e->tag == tag) {
				/* asked again: a name in use stays seen, and costs nothing */
				e->until = (uint32_t)(now + per);
				return DP_NB_OK;
			}
			if (e->until <= now && nfree[j]++ == 0)
				free_e[j] = e;
		}
	sx = dp_name_budget_suffix(t, vm, dp_hash_bytes(canon + len - suffix_len, suffix_len) | 1,
	    now);
	if (sx == NULL)
		return DP_NB_FULL;
	/* a spent budget before a full region: it is the limit the operator set */
	dp_window_roll(&sx->w, per, now);
	if (!dp_window_room(&sx->w, count, now))
		return DP_NB_SPENT;
	if ((slot = nfree[1] > nfree[0] ? free_e[1] : free_e[0]) == NULL)
		return DP_NB_FULL;
	sx->w.cur++;
	t->admitted++;
	*slot = (struct dp_name_entry){ .tag = tag, .until = (uint32_t)(now + per) };
	return DP_NB_OK;
}

uint64_t
dp_name_budget_admitted(const struct dp_name_budget *t)
{
	return t->admitted;
}

uint64_t
dp_name_budget_mem(uint16_t nvms)
{
	size_t regions = (size_t)nvms + 1;
	struct dp_name_budget *t = NULL;

	return dp_mem_alloc(sizeof(*t)) +
	    dp_mem_alloc(regions * DP_NAMES_PER_VM * sizeof(t->names[0])) +
	    dp_mem_alloc(regions * DP_SUFFIXES_PER_VM * sizeof(t->suffixes[0]));
}

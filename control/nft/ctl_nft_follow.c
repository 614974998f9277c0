/*
 * A new generation followed into the kernel's sets: each VM's elements are summed up as
 * a digest before the change and after it, and only the VMs whose digest moved get their
 * sets refilled (nft_refill(): one batch, emptied and filled together). So a grant, a
 * revoke or an expiry touches its VM's sets alone, and a reload that keeps the VMs only
 * those its policies changed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_mirror.h"
#include "ctl_nft_feed_int.h"

/*
 * One element as a number, its timeout left out: the key the kernel's set holds. Keyed
 * with the feeder's secret: a VM whose names resolve to addresses it picks could
 * otherwise choose some whose hashes sum to 0, and a revoke that takes them away would
 * leave its digest, and the kernel's sets, unchanged.
 */
static uint64_t
ctl_nft_elem_hash(const struct ctl_nft_feed *f, const struct nft_elem *e)
{
	uint64_t h = f->digest_key[0] ^ ((uint64_t)e->family << 32 | (uint64_t)e->proto << 16 |
	    e->port);

	for (int i = 0; i < 16; i++)
		h = (h ^ e->addr[i]) * 0x100000001b3ULL;
	h ^= f->digest_key[1];
	h = (h ^ h >> 30) * 0xbf58476d1ce4e5b9ULL;	/* every bit of the key into every bit */
	h = (h ^ h >> 27) * 0x94d049bb133111ebULL;
	return h ^ h >> 31;
}

struct ctl_nft_collect {
	struct ctl_nft_feed *f;
	struct ctl_nft_buf *b;
	uint64_t *digest;		/* per VM index: the sum of its elements' hashes */
	const bool *only;		/* NULL, or the VM indexes whose elements to keep */
};

/* A binding's elements: into the digest of its VM, and the list when it is wanted. */
static void
ctl_nft_collect_one(const struct ctl_mirror_ent *e, void *arg)
{
	struct ctl_nft_collect *c = arg;
	struct dp_evt_ports ports = e->ports;
	size_t from = c->b->n;
	int vm;

	if (e->slot >= c->f->nindex || (vm = c->f->index[e->slot]) < 0)
		return;
	ctl_nft_ports_now(c->f, e->gen, e->slot, e->name, &ports);
	ctl_nft_binding(c->f, c->b, e->slot, e->family, e->addr, e->expires, &ports);
	for (size_t i = from; i < c->b->n; i++)
		c->digest[vm] += ctl_nft_elem_hash(c->f, &c->b->v[i]);
	if (c->only == NULL || !c->only[vm])
		c->b->n = from;		/* counted, not kept */
}

/* Every VM's digest into digest[0..nvms); the elements of the VMs only marks into b. */
static void
ctl_nft_collect(struct ctl_nft_feed *f, uint64_t now, uint64_t *digest, const bool *only,
    struct ctl_nft_buf *b)
{
	struct ctl_nft_collect c = { .f = f, .b = b, .digest = digest, .only = only };

	memset(digest, 0, (f->nvms + 1u) * sizeof(digest[0]));
	b->now = now;
	ctl_mirror_walk_all(f->mirror, now, ctl_nft_collect_one, &c);
}

void
ctl_nft_feed_mark(struct ctl_nft_feed *f, uint64_t now)
{
	struct ctl_nft_buf b = { 0 };
	uint64_t *marked;

	f->has_marks = false;
	if (f->nft == NULL)
		return;
	if ((marked = realloc(f->marked, (f->nvms + 1u) * sizeof(marked[0]))) == NULL)
		return;			/* no marks: the follow rebuilds */
	f->marked = marked;
	ctl_nft_feed_flush(f);		/* what was learned goes under the old judgement */
	ctl_nft_collect(f, now, f->marked, NULL, &b);
	free(b.v);
	f->has_marks = true;
}

static bool
ctl_nft_same_vms(const struct ctl_nft_feed *f, const struct ctl_nft_vm *vms, uint16_t n)
{
	if (n != f->nvms)
		return false;
	for (uint16_t i = 0; i < n; i++)
		if (vms[i].slot != f->vms[i].slot || strcmp(vms[i].name, f->vms[i].name) != 0 ||
		    memcmp(&vms[i].id, &f->vms[i].id, sizeof(vms[i].id)) != 0)
			return false;
	return true;
}

/* Refill the VMs whose digest moved since the mark. 0 or -errno (nft_refill()). */
static int
ctl_nft_refill_changed(struct ctl_nft_feed *f, uint64_t now)
{
	uint64_t *digest = calloc(f->nvms + 1u, sizeof(digest[0]));
	bool *changed = calloc(f->nvms + 1u, sizeof(changed[0]));
	uint16_t *vms = calloc(f->nvms + 1u, sizeof(vms[0]));
	struct ctl_nft_buf b = { 0 }, none = { 0 };
	size_t n = 0;
	int rc = -ENOMEM;

	if (digest == NULL || changed == NULL || vms == NULL)
		goto out;
	ctl_nft_collect(f, now, digest, NULL, &none);
	for (uint16_t i = 0; i < f->nvms; i++)
		if ((changed[i] = digest[i] != f->marked[i]))
			vms[n++] = i;
	rc = 0;
	if (n > 0) {
		ctl_nft_collect(f, now, digest, changed, &b);
		rc = nft_refill(f->nft, vms, n, b.v, b.n);
	}
out:
	free(none.v);
	free(b.v);
	free(vms);
	free(changed);
	free(digest);
	return rc;
}

int
ctl_nft_feed_follow(struct ctl_nft_feed *f, const char *table, const struct ctl_nft_vm *vms,
    uint16_t n, const char *slow_a, const char *slow_b, uint64_t now)
{
	int rc;

	if (f->nft == NULL || !f->has_marks || !ctl_nft_same_vms(f, vms, n))
		return ctl_nft_feed_open(f, table, vms, n, slow_a, slow_b, now);
	f->has_marks = false;
	/* -ESTALE: the table is not as built: the next check rebuilds it, bindings and all */
	if ((rc = ctl_nft_refill_changed(f, now)) == -ESTALE)
		f->stale = true;
	if (rc != 0 && rc != -ESTALE) {
		errno = -rc;
		return -1;
	}
	return 0;
}

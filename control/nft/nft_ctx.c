/*
 * The nft context's life: open (names checked once, socket), build and rebuild (one batch),
 * destroy (on exit), stats.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nft_int.h"

/* Names go into nft commands operators type: keep them free of quoting. */
static bool
nft_name_ok(const char *s)
{
	size_t len;

	if (s == NULL || (len = strlen(s)) == 0 || len >= NFT_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		char ch = s[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' || ch == '.'))
			return false;
	}
	return true;
}

static int
nft_strcmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Every name the table will hold must be unique: VM "a_in" would own counter "a_in_accept",
 * which is also VM "a"'s. Checked once here rather than failing a batch later.
 */
static int
nft_names_unique(const struct nft_ctx *c)
{
	size_t n = (size_t)c->nvms * NFT_VM_NAMES + 2;
	char (*buf)[NFT_OBJ_NAME_MAX];
	char **names;
	int rc = 0;

	names = calloc(n, sizeof(*names));
	buf = calloc(n, sizeof(*buf));
	if (names == NULL || buf == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (uint16_t i = 0; i < c->nvms; i++)
		nft_vm_names(&c->vms[i], &buf[(size_t)i * NFT_VM_NAMES]);
	strcpy(buf[n - 2], NFT_BASE_CHAIN);
	strcpy(buf[n - 1], NFT_UNKNOWN_COUNTER);
	for (size_t i = 0; i < n; i++)
		names[i] = buf[i];
	qsort(names, n, sizeof(*names), nft_strcmp);
	for (size_t i = 1; i < n; i++) {
		if (strcmp(names[i - 1], names[i]) == 0) {
			nft_warn(c, "two objects would be named %s", names[i]);
			rc = -EINVAL;
			break;
		}
	}
out:
	free(names);
	free(buf);
	return rc;
}

struct nft_ctx *
nft_open(const char *table, const struct nft_vm *vms, uint16_t nvms)
{
	struct nft_ctx *c;
	int rc = -EINVAL;

	if (!nft_name_ok(table) || (nvms > 0 && vms == NULL)) {
		errno = EINVAL;
		return NULL;
	}
	if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	strcpy(c->table, table);
	if (nvms > 0 && (c->vms = calloc(nvms, sizeof(*c->vms))) == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	c->nvms = nvms;
	for (uint16_t i = 0; i < nvms; i++) {
		struct nft_vmi *v = &c->vms[i];

		if (!nft_name_ok(vms[i].name) || vms[i].id.vlan > 4094) {
			nft_warn(c, "vm %u: bad name or vlan", i);
			goto fail;
		}
		strcpy(v->name, vms[i].name);
		v->id = vms[i].id;
	}
	if ((rc = nft_names_unique(c)) < 0 || (rc = nft_sock_open(c)) < 0)
		goto fail;
	return c;
fail:
	nft_close(c);
	errno = -rc;
	return NULL;
}

void
nft_close(struct nft_ctx *c)
{
	if (c == NULL)
		return;
	nft_sock_close(c);
	nft_fp_free(&c->ref);
	free(c->carry);
	free(c->vms);
	free(c);
}

int
nft_build(struct nft_ctx *c, const struct nft_elem *elems, size_t n)
{
	struct nft_batch b;
	uint32_t gen;
	int rc;

	if ((rc = nft_elems_check(c, elems, n)) < 0)
		return rc;
	for (int tries = 0; tries < NFT_TRIES; tries++) {
		if ((rc = nft_carry_read(c)) < 0 || (rc = nft_gen_get(c, &gen)) < 0)
			return rc;
		if ((rc = nft_batch_start(c, &b, gen)) == 0 &&
		    (rc = nft_table_del_put(c, &b)) == 0 &&
		    (rc = nft_table_put(c, &b)) == 0 &&
		    (rc = nft_elems_put(c, &b, elems, n)) == 0)
			rc = nft_batch_commit(c, &b);
		nft_batch_free(&b);
		if (rc == -ERESTART)
			continue;	/* someone committed between GETGEN and us */
		if (rc < 0)
			return rc;	/* the kernel applied nothing: the old table stands */
		/*
		 * The reference listing must show our commit and nothing after it; if the
		 * generation moved already we cannot tell whose the listing is: build again.
		 */
		c->built = false;
		if ((rc = nft_fp_take(c, &c->ref, &gen)) < 0)
			return rc;
		if (rc == NFT_MISSING || gen != c->gen)
			continue;
		c->built = true;
		c->st.builds++;
		return 0;
	}
	nft_warn(c, "build: the ruleset kept changing under us");
	return -EAGAIN;
}

int
nft_destroy(struct nft_ctx *c)
{
	struct nft_batch b;
	int rc;

	c->built = false;
	if ((rc = nft_batch_start(c, &b, 0)) == 0 && (rc = nft_table_del_put(c, &b)) == 0)
		rc = nft_batch_commit(c, &b);
	nft_batch_free(&b);
	return rc;
}

void
nft_stats_get(const struct nft_ctx *c, struct nft_stats *out)
{
	*out = c->st;
}

const char *
nft_state_str(enum nft_state s)
{
	switch (s) {
	case NFT_INTACT:	return "intact";
	case NFT_MISSING:	return "missing";
	case NFT_TAMPERED:	return "tampered";
	}
	return "?";
}

int
nft_set_ports(struct nft_ctx *ctx, const char *a, const char *b)
{
	if (a == NULL || b == NULL || strlen(a) >= sizeof(ctx->ports[0]) ||
	    strlen(b) >= sizeof(ctx->ports[1]))
		return -EINVAL;
	memset(ctx->ports, 0, sizeof(ctx->ports));
	strcpy(ctx->ports[0], a);
	strcpy(ctx->ports[1], b);
	return 0;
}

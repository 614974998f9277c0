/*
 * vms: the agent VMs, each named by (vlan, MAC) with its own addresses (SPEC s4 step 1).
 * Names, MACs and addresses must be unique over the whole file: one identity per VM, so
 * no VM can ever be taken for another.
 */
#include <arpa/inet.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pol_load_int.h"

#define VM(field)	offsetof(struct pol_vm, field)

static const char *const pol_mode_words[] = { "enforce", "audit", NULL };
_Static_assert(sizeof(enum pol_mode) == sizeof(unsigned int), "enum size");

/*
 * What namegate appends to a VM's name for its nft objects (control/nft/nft_table.c,
 * nft_elem.c): a VM whose name ends in one would share its names with another VM's
 * ("a_in" owns "a_in_accept", which is also "a"'s), and the table could not be built.
 */
static const char *const pol_vm_name_suffixes[] = {
	"_in", "_out", "_accept", "_drop", "_v4", "_v4addr", "_v6", "_v6addr",
};

static const char *
pol_vm_name_suffix(const char *s, size_t len)
{
	for (size_t i = 0; i < sizeof(pol_vm_name_suffixes) / sizeof(pol_vm_name_suffixes[0]);
	    i++) {
		size_t n = strlen(pol_vm_name_suffixes[i]);

		if (len > n && strcmp(s + len - n, pol_vm_name_suffixes[i]) == 0)
			return pol_vm_name_suffixes[i];
	}
	return NULL;
}

/* The name ends up in nft set names ("<vm>_v4addr") and metric labels. */
static int
pol_h_vm_name(struct pol_ctx *c, yaml_node_t *n, const struct pol_field *f, void *obj,
    const char *path)
{
	const char *s, *suffix;
	size_t len;

	if ((s = pol_scalar(c, n, path)) == NULL)
		return -1;
	len = strlen(s);
	if (len == 0 || len > POL_VM_NAME_MAX || !((s[0] | 0x20) >= 'a' && (s[0] | 0x20) <= 'z') ||
	    strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != len)
		return pol_err_node(c, n, "%s: bad VM name \"%s\" (a letter, then letters, digits, "
		    "'_' or '-', at most %d)", path, s, POL_VM_NAME_MAX);
	/* the label of frames from no VM: a VM of that name would share its counters */
	if (strcmp(s, "unknown") == 0)
		return pol_err_node(c, n, "%s: \"unknown\" is the name namegate gives frames "
		    "from no VM: choose another", path);
	if ((suffix = pol_vm_name_suffix(s, len)) != NULL)
		return pol_err_node(c, n, "%s: \"%s\" ends in \"%s\", which namegate appends to "
		    "VM names for its nft objects: choose another", path, s, suffix);
	return pol_h_str(c, n, f, obj, path);
}

static int
pol_hex(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	ch = (char)(ch | 0x20);
	return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

static int
pol_h_mac(struct pol_ctx *c, yaml_node_t *n, const struct pol_field *f, void *obj,
    const char *path)
{
	struct pol_vm *vm = obj;
	uint8_t mac[6];
	const char *s;

	(void)f;
	if ((s = pol_scalar(c, n, path)) == NULL)
		return -1;
	if (strlen(s) != 17)
		goto bad;
	for (int i = 0; i < 6; i++) {
		int hi = pol_hex(s[i * 3]), lo = pol_hex(s[i * 3 + 1]);

		if (hi < 0 || lo < 0 || (i < 5 && s[i * 3 + 2] != ':'))
			goto bad;
		mac[i] = (uint8_t)(hi << 4 | lo);
	}
	if (mac[0] & 1)
		return pol_err_node(c, n, "%s: %s is a multicast MAC, not a VM's", path, s);
	if ((mac[0] | mac[1] | mac[2] | mac[3] | mac[4] | mac[5]) == 0)
		return pol_err_node(c, n, "%s: the all-zero MAC is not a VM's", path);
	memcpy(vm->id.mac, mac, sizeof(mac));
	return 0;
bad:
	return pol_err_node(c, n, "%s: bad MAC \"%s\" (six hex pairs: 02:00:00:00:00:01)", path, s);
}

static int
pol_h_ipv4(struct pol_ctx *c, yaml_node_t *n, const struct pol_field *f, void *obj,
    const char *path)
{
	struct pol_vm *vm = obj;
	const char *s;
	uint8_t a[4];

	(void)f;
	if ((s = pol_scalar(c, n, path)) == NULL)
		return -1;
	if (inet_pton(AF_INET, s, a) != 1)
		return pol_err_node(c, n, "%s: bad IPv4 address \"%s\"", path, s);
	/* A VM's source address: not 0/8, loopback, multicast or broadcast. */
	if (a[0] == 0 || a[0] == 127 || a[0] >= 224)
		return pol_err_node(c, n, "%s: %s is not a unicast host address", path, s);
	memcpy(vm->id.ip4, a, 4);
	vm->id.has4 = true;
	return 0;
}

static int
pol_h_ipv6(struct pol_ctx *c, yaml_node_t *n, const struct pol_field *f, void *obj,
    const char *path)
{
	static const uint8_t loop[16] = { [15] = 1 }, zero[16] = { 0 };
	struct pol_vm *vm = obj;
	const char *s;
	uint8_t a[16];

	(void)f;
	if ((s = pol_scalar(c, n, path)) == NULL)
		return -1;
	if (inet_pton(AF_INET6, s, a) != 1)
		return pol_err_node(c, n, "%s: bad IPv6 address \"%s\"", path, s);
	if (a[0] == 0xff || memcmp(a, loop, 16) == 0 || memcmp(a, zero, 16) == 0)
		return pol_err_node(c, n, "%s: %s is not a unicast host address", path, s);
	memcpy(vm->id.ip6, a, 16);
	vm->id.has6 = true;
	return 0;
}

static int
pol_h_vlan(struct pol_ctx *c, yaml_node_t *n, const struct pol_field *f, void *obj,
    const char *path)
{
	uint32_t v;
	struct pol_field g = *f;

	g.off = 0;
	if (pol_h_u32(c, n, &g, &v, path) < 0)
		return -1;
	((struct pol_vm *)obj)->id.vlan = (uint16_t)v;
	return 0;
}

static int
pol_h_vm_policy(struct pol_ctx *c, yaml_node_t *n, const struct pol_field *f, void *obj,
    const char *path)
{
	struct pol_vm_ref *r = &c->vref[(struct pol_vm *)obj - c->cfg->vms];
	const char *s;

	(void)f;
	if ((s = pol_scalar(c, n, path)) == NULL)
		return -1;
	free(r->policy);
	if ((r->policy = strdup(s)) == NULL)
		return pol_err_node(c, n, "out of memory");
	r->line = (uint32_t)n->start_mark.line + 1;
	r->col = (uint32_t)n->start_mark.column + 1;
	return 0;
}

/* VLAN ids 0 (untagged) and 1..4094; 4095 is reserved (IEEE 802.1Q). */
const struct pol_field pol_vm_fields[] = {
	{ "name", YAML_SCALAR_NODE, pol_h_vm_name, VM(name), 0, 0, NULL, NULL, true },
	{ "mac", YAML_SCALAR_NODE, pol_h_mac, 0, 0, 0, NULL, NULL, true },
	{ "ipv4", YAML_SCALAR_NODE, pol_h_ipv4, 0, 0, 0, NULL, NULL, false },
	{ "ipv6", YAML_SCALAR_NODE, pol_h_ipv6, 0, 0, 0, NULL, NULL, false },
	{ "vlan", YAML_SCALAR_NODE, pol_h_vlan, 0, 0, 4094, NULL, NULL, false },
	{ "policy", YAML_SCALAR_NODE, pol_h_vm_policy, 0, 0, 0, NULL, NULL, true },
	{ "mode", YAML_SCALAR_NODE, pol_h_enum, VM(mode), 0, 0, pol_mode_words, NULL, false },
	{ NULL, 0, NULL, 0, 0, 0, NULL, NULL, false },
};

/* Compare VM i with the ones before it; report at the repeated key. */
static int
pol_vm_dups(struct pol_ctx *c, yaml_node_t *entry, size_t i, const char *path)
{
	static const uint8_t zero[6] = { 0 };	/* no MAC parsed: nothing to compare */
	const struct pol_vm *vm = &c->cfg->vms[i];
	int rc = 0;

	for (size_t k = 0; k < i; k++) {
		const struct pol_vm *o = &c->cfg->vms[k];
		bool dup[4] = {
			vm->name != NULL && o->name != NULL && strcmp(vm->name, o->name) == 0,
			memcmp(vm->id.mac, o->id.mac, 6) == 0 && memcmp(vm->id.mac, zero, 6) != 0,
			vm->id.has4 && o->id.has4 && memcmp(vm->id.ip4, o->id.ip4, 4) == 0,
			vm->id.has6 && o->id.has6 && memcmp(vm->id.ip6, o->id.ip6, 16) == 0,
		};
		static const char *const key[4] = { "name", "mac", "ipv4", "ipv6" };
		static const char *const what[4] = { "name", "MAC", "IPv4 address",
		    "IPv6 address" };

		for (int d = 0; d < 4; d++) {
			yaml_node_t *v;

			if (!dup[d])
				continue;
			v = pol_map_get(c, entry, key[d]);
			rc = pol_err_node(c, v != NULL ? v : entry, "%s.%s: duplicate VM %s (also "
			    "vms[%zu] at line %u)", path, key[d], what[d], k, o->line);
		}
	}
	return rc;
}

int
pol_h_vms(struct pol_ctx *c, yaml_node_t *n, const struct pol_field *f, void *obj,
    const char *path)
{
	struct pol_config *cfg = obj;
	size_t len = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	int rc = 0;

	c->seen_vms = true;
	if ((cfg->vms = calloc(len + 1, sizeof(*cfg->vms))) == NULL ||
	    (c->vref = calloc(len + 1, sizeof(*c->vref))) == NULL)
		return pol_err_node(c, n, "out of memory");
	for (size_t i = 0; i < len; i++) {
		yaml_node_t *e = pol_node(c, n->data.sequence.items.start[i]);
		struct pol_vm *vm = &cfg->vms[i];
		char sub[POL_PATH_MAX];

		if (e == NULL)
			return -1;
		cfg->nvms = i + 1;
		vm->line = (uint32_t)e->start_mark.line + 1;
		vm->col = (uint32_t)e->start_mark.column + 1;
		snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
		if (pol_walk_map(c, e, f->sub, vm, sub) < 0) {
			rc = -1;
			continue;
		}
		if (!vm->id.has4 && !vm->id.has6)
			rc = pol_err_node(c, e, "%s: needs ipv4 or ipv6 (or both)", sub);
		if (pol_vm_dups(c, e, i, sub) < 0)
			rc = -1;
	}
	return rc;
}

/*
 * After the walk: every VM's policy must exist, and the VMs fit dataplane.max_vms (which
 * may come after vms in the file), said at the first VM past it.
 */
int
pol_vms_resolve(struct pol_ctx *c)
{
	int rc = 0;

	if (c->cfg->nvms > c->cfg->max_vms) {
		const struct pol_vm *v = &c->cfg->vms[c->cfg->max_vms];

		pol_err_add(c->errs, c->file, v->line, v->col, "vms[%u]: %zu VMs, more than "
		    "dataplane.max_vms (%u)", c->cfg->max_vms, c->cfg->nvms, c->cfg->max_vms);
		rc = -1;
	}

	for (size_t i = 0; i < c->cfg->nvms; i++) {
		const struct pol_vm_ref *r = &c->vref[i];
		int idx;

		if (r->policy == NULL)
			continue;	/* already reported missing */
		if ((idx = pol_set_policy_find(c->cfg->set, r->policy)) < 0) {
			pol_err_add(c->errs, c->file, r->line, r->col, "vms[%zu].policy: unknown "
			    "policy '%s'", i, r->policy);
			rc = -1;
			continue;
		}
		c->cfg->vms[i].policy = (uint32_t)idx;
		c->cfg->vms[i].ask_policy = (uint32_t)idx;
	}
	return rc;
}

/*
 * Lookups in a compiled struct pol_set. Called per connection and per DNS question by
 * the dataplane workers: no allocation, no locks, no logs, and a cost bounded by the
 * name's labels (or the address prefix lengths in use), never by the number of patterns.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pol_set.h"
#include "pol_walk.h"

/* Inlined into each lookup: the probe is a name's one table access, often its only one. */
static inline __attribute__((always_inline)) const struct pol_slot *
pol_probe_by(const struct pol_set *s, uint64_t h, uint32_t policy, uint8_t kind, const char *key,
    size_t len, bool folded)
{
	for (uint32_t i = (uint32_t)h & s->mask;; i = (i + 1) & s->mask) {
		const struct pol_slot *sl = &s->slot[i];

		if (sl->hash == 0)
			return NULL;
		if (sl->hash == h && sl->policy == policy && sl->kind == kind &&
		    sl->key_len == len && pol_key_eq(s->keys + sl->key_off, key, len, kind,
		    folded))
			return sl;
	}
}

static inline __attribute__((always_inline)) const struct pol_slot *
pol_probe(const struct pol_set *s, uint64_t h, uint32_t policy, uint8_t kind, const char *key,
    size_t len)
{
	return pol_probe_by(s, h, policy, kind, key, len, false);
}

/*
 * The entry of one list of a key that applies to (proto, port), or NULL. A port-specific
 * entry is preferred to the any-port one, as the more precise explanation.
 */
static inline __attribute__((always_inline)) const struct pol_prule *
pol_group_find(const struct pol_prule *g, uint32_t n, uint8_t proto, uint16_t port,
    bool any_port_rule_only)
{
	size_t lo, hi;

	if (n == 0)
		return NULL;
	if (proto == POL_PROTO_ANY)
		return any_port_rule_only && g[0].port != 0 ? NULL : &g[0];
	if (proto != POL_PROTO_TCP && proto != POL_PROTO_UDP)
		return g[0].port == 0 ? &g[0] : NULL;
	for (lo = 0, hi = n; lo < hi;) {
		size_t mid = lo + (hi - lo) / 2;

		if (g[mid].port == port)
			return &g[mid];
		if (g[mid].port < port)
			lo = mid + 1;
		else
			hi = mid;
	}
	return g[0].port == 0 ? &g[0] : NULL;
}

struct pol_acc {
	const struct pol_prule *deny, *allow;
};

static inline __attribute__((always_inline)) void
pol_consider(const struct pol_set *s, const struct pol_slot *sl, uint8_t proto, uint16_t port,
    bool override, struct pol_acc *acc)
{
	const struct pol_prule *d, *a;

	if (sl == NULL)
		return;
	/* A DNS question (POL_PROTO_ANY) is refused only if every port is denied. */
	d = pol_group_find(&s->prule[sl->first], sl->ndeny, proto, port, true);
	a = pol_group_find(&s->prule[sl->first + sl->ndeny], sl->nallow, proto, port, false);
	if (d != NULL && (override || acc->deny == NULL))
		acc->deny = d;
	if (a != NULL && (override || acc->allow == NULL))
		acc->allow = a;
}

static enum pol_verdict
pol_verdict_of(const struct pol_set *s, const struct pol_acc *acc, const struct pol_rule **rule)
{
	if (acc->deny != NULL) {
		if (rule != NULL)
			*rule = &s->rule[acc->deny->rule];
		return POL_DENY;
	}
	if (acc->allow != NULL) {
		if (rule != NULL)
			*rule = &s->rule[acc->allow->rule];
		return POL_ALLOW;
	}
	return POL_NO_MATCH;
}

/* A name's visit: its set, policy, and what is done with each key found. */
struct pol_name_visitor {
	const struct pol_set *s;
	uint32_t policy;
	const char *name;
	void (*visit)(const struct pol_set *, const struct pol_slot *, void *);
	void *arg;
};

static inline void
pol_name_probe(void *arg, uint64_t hash, uint8_t kind, size_t off, size_t len)
{
	const struct pol_name_visitor *v = arg;

	v->visit(v->s, pol_probe(v->s, pol_hash_final(hash, v->policy, kind), v->policy, kind,
	    v->name + off, len), v->arg);
}

/*
 * Call visit on every key a name matches (pol_name_walk()): the wildcard keys of its
 * parent suffixes, shortest first, then the exact name, so a later key is the more
 * specific one. Returns false for a name that is not a host name.
 */
static bool
pol_name_visit(const struct pol_set *s, uint32_t policy, const char *name, size_t len,
    void (*visit)(const struct pol_set *, const struct pol_slot *, void *), void *arg)
{
	struct pol_name_visitor v = { .s = s, .policy = policy, .name = name, .visit = visit,
		.arg = arg };

	return pol_name_walk(name, len, s->pol[policy].wild, pol_name_probe, &v);
}

struct pol_name_query {
	uint8_t proto;
	uint16_t port;
	struct pol_acc acc;
};

static void
pol_name_consider(const struct pol_set *s, const struct pol_slot *sl, void *arg)
{
	struct pol_name_query *q = arg;

	pol_consider(s, sl, q->proto, q->port, true, &q->acc);
}

enum pol_verdict
pol_match_name(const struct pol_set *s, uint32_t policy, const char *name, size_t len,
    uint8_t proto, uint16_t port, const struct pol_rule **rule)
{
	struct pol_name_query q = { .proto = proto, .port = port };

	if (rule != NULL)
		*rule = NULL;
	if (s == NULL || policy >= s->npol)
		return POL_NO_MATCH;
	if (!pol_name_visit(s, policy, name, len, pol_name_consider, &q))
		return POL_BAD_NAME;
	return pol_verdict_of(s, &q.acc, rule);
}

static void
pol_ports_add(uint16_t *list, uint8_t *n, bool *more, uint16_t port)
{
	for (unsigned int i = 0; i < *n; i++)
		if (list[i] == port)
			return;
	if (*n == POL_PORTS_MAX)
		*more = true;
	else
		list[(*n)++] = port;
}

static inline __attribute__((always_inline)) void
pol_ports_fold(const struct pol_set *s, const struct pol_slot *sl, void *arg)
{
	struct pol_ports *out = arg;
	const struct pol_prule *g;

	if (sl == NULL)
		return;
	g = &s->prule[sl->first];
	for (uint32_t i = 0; i < sl->ndeny; i++) {
		if (g[i].port == 0)
			out->deny_any = true;
		else
			pol_ports_add(out->deny, &out->ndeny, &out->deny_more, g[i].port);
	}
	g += sl->ndeny;
	for (uint32_t i = 0; i < sl->nallow; i++) {
		if (g[i].port == 0)
			out->any = true;
		else
			pol_ports_add(out->allow, &out->nallow, &out->allow_more, g[i].port);
	}
}

bool
pol_match_name_ports(const struct pol_set *s, uint32_t policy, const char *name, size_t len,
    struct pol_ports *out)
{
	*out = (struct pol_ports){ .any = false };
	if (s == NULL || policy >= s->npol)
		return false;
	return pol_name_visit(s, policy, name, len, pol_ports_fold, out);
}

/*
 * Both visitors' work, key by key: the verdict's and the ports' summary, in a probe of
 * its own that the walk inlines, with both visitors: no call through a pointer a key.
 */
struct pol_name_both {
	const struct pol_set *s;
	uint32_t policy;
	const char *name;
	struct pol_name_query q;
	struct pol_ports *ports;
};

static inline __attribute__((always_inline)) void
pol_name_both_probe(void *arg, uint64_t hash, uint8_t kind, size_t off, size_t len)
{
	struct pol_name_both *b = arg;
	const struct pol_slot *sl = pol_probe(b->s, pol_hash_final(hash, b->policy, kind),
	    b->policy, kind, b->name + off, len);

	pol_consider(b->s, sl, b->q.proto, b->q.port, true, &b->q.acc);
	pol_ports_fold(b->s, sl, b->ports);
}

enum pol_verdict
pol_match_name_and_ports(const struct pol_set *s, uint32_t policy, const char *name, size_t len,
    uint8_t proto, uint16_t port, const struct pol_rule **rule, struct pol_ports *ports)
{
	struct pol_name_both b = { .s = s, .policy = policy, .name = name,
		.q = { .proto = proto, .port = port }, .ports = ports };

	*ports = (struct pol_ports){ .any = false };
	if (rule != NULL)
		*rule = NULL;
	if (s == NULL || policy >= s->npol)
		return POL_NO_MATCH;
	if (!pol_name_walk(name, len, s->pol[policy].wild, pol_name_both_probe, &b))
		return POL_BAD_NAME;
	return pol_verdict_of(s, &b.q.acc, rule);
}

enum pol_verdict
pol_match_lower_and_ports(const struct pol_set *s, uint32_t policy, const char *name,
    size_t len, uint8_t proto, uint16_t port, const struct pol_rule **rule,
    struct pol_ports *ports)
{
	struct pol_acc acc = { NULL, NULL };
	const struct pol_slot *sl;

	if (s == NULL || policy >= s->npol || s->pol[policy].wild)
		return pol_match_name_and_ports(s, policy, name, len, proto, port, rule, ports);
	/* the one probe, of the exact key: only a stored name, a host name's, can be hit */
	*ports = (struct pol_ports){ .any = false };
	if (rule != NULL)
		*rule = NULL;
	if (len > 0 && name[len - 1] == '.')
		len--;
	if (len == 0 || len > POL_NAME_MAX)
		return POL_NO_MATCH;
	sl = pol_probe_by(s, pol_hash_final(pol_hash_name_lower(name, len), policy,
	    POL_NAME_EXACT), policy, POL_NAME_EXACT, name, len, true);
	pol_consider(s, sl, proto, port, true, &acc);
	pol_ports_fold(s, sl, ports);
	return pol_verdict_of(s, &acc, rule);
}

/*
 * The verdict of policy's address rules of kind (addresses bits long, map the prefix
 * lengths it has) on addr: longest prefix first, so the first match of each list is the most
 * specific; only the lengths the policy has are visited. Apart from pol_match_addr(), so
 * that a policy without address patterns (the common case: names only) pays a few word
 * tests per new connection and not this loop's stack frame.
 */
static __attribute__((noinline)) enum pol_verdict
pol_match_addr_rules(const struct pol_set *s, uint32_t policy, uint8_t kind, const uint64_t *map,
    unsigned int bits, const uint8_t *addr, size_t alen, uint8_t proto, uint16_t port,
    const struct pol_rule **rule)
{
	struct pol_acc acc = { NULL, NULL };
	uint8_t key[17];

	for (unsigned int word = (bits + 64) / 64; word-- > 0;) {
		for (uint64_t left = map[word]; left != 0;) {
			unsigned int bit = 63 - (unsigned int)__builtin_clzll(left);
			unsigned int plen = word * 64 + bit;
			size_t klen;

			left &= ~(UINT64_C(1) << bit);
			klen = pol_addr_key(key, addr, alen, plen);
			pol_consider(s, pol_probe(s, pol_hash_key(key, klen, policy, kind), policy,
			    kind, (const char *)key, klen), proto, port, false, &acc);
		}
	}
	return pol_verdict_of(s, &acc, rule);
}

enum pol_verdict
pol_match_addr(const struct pol_set *s, uint32_t policy, const uint8_t *addr, size_t alen,
    uint8_t proto, uint16_t port, const struct pol_rule **rule)
{
	const struct pol_policy *pol;

	if (rule != NULL)
		*rule = NULL;
	if (s == NULL || policy >= s->npol)
		return POL_NO_MATCH;
	pol = &s->pol[policy];
	if (alen == 4)
		return pol->plen4 == 0 ? POL_NO_MATCH : pol_match_addr_rules(s, policy, POL_ADDR4,
		    &pol->plen4, 32, addr, alen, proto, port, rule);
	_Static_assert(POL_PLEN_WORDS == 3, "an IPv6 policy's prefix lengths are three words");
	if (alen == 16)
		return (pol->plen6[0] | pol->plen6[1] | pol->plen6[2]) == 0 ? POL_NO_MATCH :
		    pol_match_addr_rules(s, policy, POL_ADDR6, pol->plen6, 128, addr, alen, proto,
		    port, rule);
	return POL_BAD_NAME;
}

bool
pol_policy_has_addrs(const struct pol_set *s, uint32_t policy, size_t alen)
{
	const struct pol_policy *pol;

	if (s == NULL || policy >= s->npol)
		return false;
	pol = &s->pol[policy];
	if (alen == 4)
		return pol->plen4 != 0;
	return alen == 16 && (pol->plen6[0] | pol->plen6[1] | pol->plen6[2]) != 0;
}

const char *
pol_verdict_str(enum pol_verdict v)
{
	switch (v) {
	case POL_ALLOW:
		return "allow";
	case POL_DENY:
		return "deny";
	case POL_NO_MATCH:
		return "no match";
	case POL_BAD_NAME:
		return "bad name";
	}
	return "?";
}

uint32_t
pol_set_policies(const struct pol_set *s)
{
	return s != NULL ? s->npol : 0;
}

const char *
pol_set_policy_name(const struct pol_set *s, uint32_t i)
{
	return s != NULL && i < s->npol ? s->pol[i].name : NULL;
}

int
pol_set_policy_find(const struct pol_set *s, const char *name)
{
	for (uint32_t i = 0; s != NULL && i < s->npol; i++)
		if (strcmp(s->pol[i].name, name) == 0)
			return (int)i;
	return -ENOENT;
}

struct pol_policy_stats
pol_set_policy_stats(const struct pol_set *s, uint32_t i)
{
	struct pol_policy_stats none = { 0 };

	return s != NULL && i < s->npol ? s->pol[i].st : none;
}

uint32_t
pol_set_rules(const struct pol_set *s)
{
	return s != NULL ? s->nrule : 0;
}

const struct pol_rule *
pol_set_rule(const struct pol_set *s, uint32_t i)
{
	return s != NULL && i < s->nrule ? &s->rule[i] : NULL;
}

void
pol_set_free(struct pol_set *s)
{
	free(s);
}

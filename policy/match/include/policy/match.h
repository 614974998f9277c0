/*
 * Compiled host-pattern matcher (SPEC s3 "Host patterns"). libc only.
 *
 * A struct pol_set is built once by struct pol_builder and is then immutable: one
 * allocation holds the hash table, the per-name rule lists, the rule descriptions and
 * every string they point to, so the dataplane can share it between workers and retire
 * it with a single free. Lookups never allocate, lock or log.
 *
 * Semantics, for one policy:
 *  - a name pattern matches that name only; a wildcard "*.example.com" matches any name
 *    with one or more whole labels in front of example.com, never example.com itself;
 *  - an address pattern matches addresses inside its prefix;
 *  - a pattern without a port matches any port and any protocol; with a port, TCP and UDP
 *    to that port only;
 *  - any matching deny pattern beats every matching allow pattern; nothing matching means
 *    deny (the caller's default).
 */
#ifndef POLICY_MATCH_H
#define POLICY_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define POL_NAME_MAX	253	/* presentation form without the trailing dot (RFC 1035 s2.3.4) */
#define POL_LABEL_MAX	63

/* Protocols a query may name; the values are IANA protocol numbers. */
#define POL_PROTO_ANY	0	/* "on any port at all": a DNS question for the name */
#define POL_PROTO_TCP	6
#define POL_PROTO_UDP	17

enum pol_kind {
	POL_NAME_EXACT,		/* example.com */
	POL_NAME_WILD,		/* *.example.com; pattern.name holds the suffix "example.com" */
	POL_ADDR4,		/* 203.0.113.0/24 */
	POL_ADDR6,		/* 2001:db8::/32 */
};

enum pol_list {
	POL_LIST_ALLOW,
	POL_LIST_DENY,
};

enum pol_verdict {
	POL_NO_MATCH,		/* no pattern matched: deny by default */
	POL_ALLOW,		/* an allow pattern matched and no deny pattern did */
	POL_DENY,		/* a deny pattern matched */
	POL_BAD_NAME,		/* the name is not a host name (empty label, too long): deny */
};

/* One compiled pattern, as pol_pattern_parse() (policy/load) produces it. */
struct pol_pattern {
	enum pol_kind kind;
	uint16_t port;			/* 0: any port */
	uint8_t plen;			/* addresses: prefix length, host bits are zero */
	uint8_t addr[16];		/* addresses: network order, IPv4 in the first 4 bytes */
	char name[POL_NAME_MAX + 1];	/* names: canonical (lower case, no trailing dot) */
};

/*
 * Where a pattern came from, for explanations. Strings are owned by the set (copied by
 * pol_builder_add()). key is the YAML path of the list inside file: "policies.dev.allow",
 * or for an imported file "sandbox.network.allowedDomains".
 */
struct pol_rule {
	const char *policy;
	const char *key;
	const char *pattern;	/* as written */
	const char *file;
	uint32_t index;		/* position in that list, from 0 */
	uint32_t line, col;	/* from 1 */
	enum pol_list list;
	bool imported;		/* key is a path in an import: file, not in the config */
	bool grant;		/* a live grant (namegatectl grant): key says which, until when */
	/*
	 * Set by pol_builder_add() from the pattern (ignored in origin): its kind and, for
	 * names, the bytes of its canonical name, for a wildcard the suffix's, so a caller
	 * can tell which suffix of a name a wildcard matched (the name's last name_len bytes).
	 */
	enum pol_kind kind;
	uint16_t name_len;
};

/* Pattern counts of one policy, for summaries. */
struct pol_policy_stats {
	uint32_t allow, deny;		/* patterns as written, duplicates included */
	uint32_t names, wildcards, addrs;
};

struct pol_set;
struct pol_builder;

/* A new, empty builder; NULL and errno on allocation failure. */
struct pol_builder *pol_builder_new(void);

/*
 * Add a policy named name (copied) and return its index (0, 1, ... in call order), or
 * -EEXIST if the name is taken, -ENOMEM.
 */
int pol_builder_policy(struct pol_builder *b, const char *name);

/*
 * Add pattern p to policy (an index from pol_builder_policy()). origin describes it; its
 * policy field is ignored and its strings are copied. Several patterns for the same name
 * combine. Returns 0, -EINVAL (bad policy index or pattern), -ENOMEM.
 */
int pol_builder_add(struct pol_builder *b, uint32_t policy, const struct pol_pattern *p,
    const struct pol_rule *origin);

/*
 * Compile everything added so far into one immutable allocation; the builder is left as
 * it was and must still be freed. Returns NULL and errno (ENOMEM, EOVERFLOW) on failure.
 * The caller frees the set with pol_set_free().
 */
struct pol_set *pol_builder_build(const struct pol_builder *b);

void pol_builder_free(struct pol_builder *b);

/*
 * Add every pattern of policy from in set s to policy to of b, each with its rule (origin
 * strings copied), so a policy can be extended without its file: grants build a VM's
 * policy plus its grants this way. Repeats the set dropped stay dropped. Returns 0,
 * -EINVAL (bad index), -ENOMEM.
 */
int pol_builder_copy_policy(struct pol_builder *b, uint32_t to, const struct pol_set *s,
    uint32_t from);
void pol_set_free(struct pol_set *s);

uint32_t pol_set_policies(const struct pol_set *s);
/* The name of policy i, or NULL if i is out of range. */
const char *pol_set_policy_name(const struct pol_set *s, uint32_t i);
/* The index of the policy called name, or -ENOENT. */
int pol_set_policy_find(const struct pol_set *s, const char *name);
/* Counts for policy i (zeros if out of range). */
struct pol_policy_stats pol_set_policy_stats(const struct pol_set *s, uint32_t i);
uint32_t pol_set_rules(const struct pol_set *s);
/* Rule i in the order added, or NULL. The pointer lives as long as the set. */
const struct pol_rule *pol_set_rule(const struct pol_set *s, uint32_t i);

/*
 * Decide a connection to host name (len bytes, not NUL-terminated; ASCII case and one
 * trailing dot are ignored) for policy, proto (POL_PROTO_*, or any other protocol number,
 * which only port-less patterns match) and destination port.
 *
 * Cost: the name is hashed once, right to left, and the table is probed once per label
 * (the full name, then each parent suffix for wildcards): independent of the number of
 * patterns. With POL_PROTO_ANY the question is "may this name be used at all", as for a DNS
 * query: any allow pattern counts, and only port-less deny patterns.
 *
 * Returns the verdict; *rule (if rule is not NULL) is the deciding pattern, the most
 * specific one of its list, or NULL for POL_NO_MATCH and POL_BAD_NAME. An unknown policy
 * index is POL_NO_MATCH.
 */
enum pol_verdict pol_match_name(const struct pol_set *s, uint32_t policy, const char *name,
    size_t len, uint8_t proto, uint16_t port, const struct pol_rule **rule);

/*
 * Decide a direct connection to addr (alen 4: IPv4, 16: IPv6; network order). Same
 * semantics as pol_match_name(); the deciding rule is the longest matching prefix of its
 * list. Cost: one probe per distinct prefix length used by the policy's address patterns
 * of that family (at most 33 or 129), independent of the number of patterns.
 */
enum pol_verdict pol_match_addr(const struct pol_set *s, uint32_t policy, const uint8_t *addr,
    size_t alen, uint8_t proto, uint16_t port, const struct pol_rule **rule);

/*
 * Has policy address patterns of the family of alen (4 or 16)? Without one, pol_match_addr()
 * says POL_NO_MATCH to every address of it, so a caller that asks often may ask this once.
 * False for an unknown policy or alen.
 */
bool pol_policy_has_addrs(const struct pol_set *s, uint32_t policy, size_t alen);

/*
 * What the rules for one name say about ports, for a fast path that has the name only when
 * its DNS answer passes and must judge connections to the address later: TCP or UDP to
 * port p is allowed exactly when pol_ports_allow(p), which agrees with pol_match_name() for
 * POL_PROTO_TCP and POL_PROTO_UDP. Ports past POL_PORTS_MAX are dropped from allow (fewer
 * connections pass) and make deny_more set (none pass): both fail closed.
 */
#define POL_PORTS_MAX	6

struct pol_ports {
	bool any;			/* a port-less allow pattern matched */
	bool deny_any;			/* a port-less deny pattern matched */
	bool allow_more, deny_more;	/* lists overflowed */
	uint8_t nallow, ndeny;
	/*
	 * The caller's tag, set to 0 here: the dataplane keeps the name's egress budget in it
	 * (1 + its index, 0: none), so the budget travels with the ports through bindings.
	 */
	uint8_t budget;
	uint16_t allow[POL_PORTS_MAX];
	uint16_t deny[POL_PORTS_MAX];
};

/*
 * Summarise the patterns matching name in policy into *out. Same cost as pol_match_name().
 * Returns false (and an empty summary: nothing allowed) for a bad name or policy.
 */
bool pol_match_name_ports(const struct pol_set *s, uint32_t policy, const char *name,
    size_t len, struct pol_ports *out);

/*
 * pol_match_name() and pol_match_name_ports() of one name at once, for the cost of one:
 * the verdict (and *rule), and *ports as the other would fill it.
 */
enum pol_verdict pol_match_name_and_ports(const struct pol_set *s, uint32_t policy,
    const char *name, size_t len, uint8_t proto, uint16_t port, const struct pol_rule **rule,
    struct pol_ports *ports);

/*
 * pol_match_name_and_ports() of a name with no upper-case letter (a DNS question's, which
 * the parser lowered), for less: under a policy without wildcards, whose one key is the
 * whole name, the name is neither folded nor its labels checked, as only a stored name,
 * a host name's, can match. Then a name that is not a host name's is POL_NO_MATCH, not
 * POL_BAD_NAME (both deny); every other verdict, rule and summary is the other's. A name
 * that breaks the rule and holds a capital can only match less: no key is stored with
 * one, and the exact key is the only one looked for (fail closed).
 */
enum pol_verdict pol_match_lower_and_ports(const struct pol_set *s, uint32_t policy,
    const char *name, size_t len, uint8_t proto, uint16_t port, const struct pol_rule **rule,
    struct pol_ports *ports);

/*
 * May a TCP/UDP connection to port go out under summary p? Inline: every connection a
 * binding admits asks it, and the call cost its caller more than its few tests.
 */
static inline bool
pol_ports_allow(const struct pol_ports *p, uint16_t port)
{
	bool listed = false;

	/* Deny ports that did not fit are unknown: nothing may pass (fail closed). */
	if (p->deny_any || p->deny_more)
		return false;
	/*
	 * Within the lists whatever the counts say: a reader of a binding judges its ports in
	 * place (dp_bind_view.c), where a writer may tear them, and drops such a verdict only
	 * after it is made.
	 */
	for (unsigned int i = 0; i < p->ndeny && i < POL_PORTS_MAX; i++)
		if (p->deny[i] == port)
			return false;
	for (unsigned int i = 0; i < p->nallow && i < POL_PORTS_MAX && !listed; i++)
		listed = p->allow[i] == port;
	return p->any || listed;
}

/* "allow", "deny", "no match", "bad name". */
const char *pol_verdict_str(enum pol_verdict v);

#endif /* POLICY_MATCH_H */

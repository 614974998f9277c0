/*
 * policies: NAME: { allow: [...], deny: [...], ask: [...], import: FILE, budgets: [...] }.
 * Each pattern goes to the builder with where it was written, so check can name the rule
 * that decided; ask patterns go to a builder of their own (pol_config.ask).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pol_load_int.h"

#define POL_POLICY_NAME_MAX	64

static int
pol_h_list(struct pol_ctx *c, yaml_node_t *n, const struct pol_field *f, void *obj,
    const char *path)
{
	enum pol_list list = f->min == 0 ? POL_LIST_ALLOW : POL_LIST_DENY;
	bool ask = f->min == 2;
	int rc = 0;

	(void)obj;
	for (yaml_node_item_t *it = n->data.sequence.items.start;
	    it < n->data.sequence.items.top; it++) {
		yaml_node_t *e = pol_node(c, *it);
		uint32_t i = (uint32_t)(it - n->data.sequence.items.start);

		if (e == NULL)
			return -1;
		if (ask ? pol_add_ask(c, e, path, i) < 0 :
		    pol_add_pattern(c, e, path, i, list, false) < 0)
			rc = -1;
	}
	return rc;
}

static int
pol_h_import(struct pol_ctx *c, yaml_node_t *n, const struct pol_field *f, void *obj,
    const char *path)
{
	const char *rel;

	(void)f;
	(void)obj;
	if ((rel = pol_scalar(c, n, path)) == NULL)
		return -1;
	if (rel[0] == '\0')
		return pol_err_node(c, n, "%s: empty file name", path);
	return pol_import(c, n, rel, path);
}

/* min carries the list: 0 allow, 1 deny, 2 ask. */
const struct pol_field pol_policy_fields[] = {
	{ "allow", YAML_SEQUENCE_NODE, pol_h_list, 0, 0, 0, NULL, NULL, false },
	{ "deny", YAML_SEQUENCE_NODE, pol_h_list, 0, 1, 0, NULL, NULL, false },
	{ "ask", YAML_SEQUENCE_NODE, pol_h_list, 0, 2, 0, NULL, NULL, false },
	{ "import", YAML_SCALAR_NODE, pol_h_import, 0, 0, 0, NULL, NULL, false },
	{ "budgets", YAML_SEQUENCE_NODE, pol_h_budgets, 0, 0, 0, NULL, pol_budget_fields,
	    false },
	{ NULL, 0, NULL, 0, 0, 0, NULL, NULL, false },
};

int
pol_h_policies(struct pol_ctx *c, yaml_node_t *n, const struct pol_field *f, void *obj,
    const char *path)
{
	int rc = 0;

	(void)obj;
	c->seen_policies = true;
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
	    p < n->data.mapping.pairs.top; p++) {
		yaml_node_t *k = pol_node(c, p->key), *v = pol_node(c, p->value);
		char sub[POL_PATH_MAX];
		const char *name;
		size_t len;
		int idx;

		if (k == NULL || v == NULL)
			return -1;
		if ((name = pol_scalar(c, k, path)) == NULL) {
			rc = -1;
			continue;
		}
		len = strlen(name);
		if (len == 0 || len > POL_POLICY_NAME_MAX || strspn(name,
		    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != len) {
			rc = pol_err_node(c, k, "%s: bad policy name \"%s\" (letters, digits, '_', "
			    "'.', '-', at most %d)", path, name, POL_POLICY_NAME_MAX);
			continue;
		}
		if ((idx = pol_builder_policy(c->b, name)) < 0 ||
		    (idx = pol_builder_policy(c->ask_b, name)) < 0) {
			rc = pol_err_node(c, k, idx == -EEXIST ? "%s: duplicate policy '%s'" :
			    "%s: out of memory at '%s'", path, name);
			continue;
		}
		/* the budgets' set has the same policies at the same indexes */
		if (pol_builder_policy(c->bb, name) != idx) {
			rc = pol_err_node(c, k, "%s: out of memory at '%s'", path, name);
			continue;
		}
		snprintf(sub, sizeof(sub), "%s.%s", path, name);
		c->policy = (uint32_t)idx;
		c->policy_name = name;
		if (v->type != YAML_MAPPING_NODE) {
			rc = pol_err_node(c, v, "%s: expected a mapping (allow, deny, ask, "
			    "import, budgets), got %s", sub, pol_node_what(v));
			continue;
		}
		if (pol_walk_map(c, v, f->sub, NULL, sub) < 0)
			rc = -1;
	}
	return rc;
}

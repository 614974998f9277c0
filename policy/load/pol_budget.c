/*
 * policies.NAME.budgets: [{ host: PATTERN, upload: SIZE, per: DURATION }]. Each entry's
 * pattern goes to the budgets' own set (same policy indexes as the policies' set), as an
 * allow rule whose index is the budget's, so the dataplane finds a name's or address's
 * budget with the matcher it already trusts, and the most specific pattern wins.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "pol_load_int.h"

#define POL_BUDGET_PER_MAX	604800		/* a week, as dns.max_names_per_suffix */

struct pol_budget_entry {
	char *host;
	uint64_t upload;
	uint32_t per;
};

#define BE(f)	offsetof(struct pol_budget_entry, f)

const struct pol_field pol_budget_fields[] = {
	{ "host", YAML_SCALAR_NODE, pol_h_str, BE(host), 0, 0, NULL, NULL, true },
	{ "upload", YAML_SCALAR_NODE, pol_h_size, BE(upload), 0, 0, NULL, NULL, true },
	{ "per", YAML_SCALAR_NODE, pol_h_duration, BE(per), 1, POL_BUDGET_PER_MAX, NULL, NULL,
	    true },
	{ NULL, 0, NULL, 0, 0, 0, NULL, NULL, false },
};

static bool
pol_pattern_same(const struct pol_pattern *a, const struct pol_pattern *b)
{
	if (a->kind != b->kind)
		return false;
	if (a->kind == POL_NAME_EXACT || a->kind == POL_NAME_WILD)
		return strcmp(a->name, b->name) == 0;
	return a->plen == b->plen && memcmp(a->addr, b->addr, sizeof(a->addr)) == 0;
}

/* Entry e of the list at path (index idx): checked, then kept and compiled. */
static int
pol_budget_add(struct pol_ctx *c, yaml_node_t *n, struct pol_budget_entry *e, uint32_t idx,
    const char *path, const char *list)
{
	struct pol_config *cfg = c->cfg;
	char why[POL_WHY_MAX];
	struct pol_budget b = {
		.policy = c->policy, .index = idx, .upload = e->upload, .per = e->per,
		.line = (uint32_t)n->start_mark.line + 1, .col = (uint32_t)n->start_mark.column + 1,
	};
	struct pol_rule origin;
	struct pol_budget *v;
	int rc;

	if (pol_pattern_parse(e->host, &b.pattern, why, sizeof(why)) < 0)
		return pol_err_node(c, n, "%s.host: \"%s\": %s", path, e->host, why);
	/* bytes leave on whatever port the policy opens: a budget counts them all */
	if (b.pattern.port != 0)
		return pol_err_node(c, n, "%s.host: \"%s\": a budget's host takes no port (it "
		    "counts every port)", path, e->host);
	for (size_t i = 0; i < cfg->nbudgets; i++)
		if (cfg->budgets[i].policy == c->policy &&
		    pol_pattern_same(&cfg->budgets[i].pattern, &b.pattern))
			return pol_err_node(c, n, "%s.host: \"%s\": a second budget for the same "
			    "host (the first at line %u)", path, e->host, cfg->budgets[i].line);
	origin = (struct pol_rule){
		.key = list, .pattern = e->host, .file = c->file, .index = idx, .line = b.line,
		.col = b.col, .list = POL_LIST_ALLOW,
	};
	if ((rc = pol_builder_add(c->bb, c->policy, &b.pattern, &origin)) < 0)
		return pol_err_node(c, n, "%s: %s", path, strerror(-rc));
	if ((v = realloc(cfg->budgets, (cfg->nbudgets + 1) * sizeof(*v))) == NULL)
		return pol_err_node(c, n, "%s: out of memory", path);
	cfg->budgets = v;
	b.host = e->host;
	e->host = NULL;			/* the configuration owns it now */
	cfg->budgets[cfg->nbudgets++] = b;
	return 0;
}

void
pol_budget_explain(const struct pol_config *cfg, uint32_t policy, const struct pol_pattern *p,
    FILE *out)
{
	const struct pol_rule *r = NULL;
	const struct pol_budget *b;
	char size[32], per[32];
	enum pol_verdict v;

	if (p->kind == POL_NAME_EXACT)
		v = pol_match_name(cfg->budget_set, policy, p->name, strlen(p->name), POL_PROTO_ANY,
		    0, &r);
	else
		v = pol_match_addr(cfg->budget_set, policy, p->addr, p->kind == POL_ADDR4 ? 4 : 16,
		    POL_PROTO_ANY, 0, &r);
	if (v != POL_ALLOW || r == NULL || (b = pol_config_budget(cfg, policy, r->index)) == NULL)
		return;
	pol_size_str(b->upload, size, sizeof(size));
	pol_duration_str(b->per, per, sizeof(per));
	fprintf(out, "; counted in %s[%u] \"%s\": %s per %s per VM (line %u)", r->key, r->index,
	    b->host, size, per, b->line);
}

int
pol_h_budgets(struct pol_ctx *c, yaml_node_t *n, const struct pol_field *f, void *obj,
    const char *path)
{
	size_t count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	int rc = 0;

	(void)obj;
	if (count > POL_BUDGETS_MAX)
		return pol_err_node(c, n, "%s: %zu budgets, at most %d per policy", path, count,
		    POL_BUDGETS_MAX);
	for (yaml_node_item_t *it = n->data.sequence.items.start;
	    it < n->data.sequence.items.top; it++) {
		uint32_t idx = (uint32_t)(it - n->data.sequence.items.start);
		struct pol_budget_entry e = { 0 };
		yaml_node_t *item = pol_node(c, *it);
		char sub[POL_PATH_MAX];

		if (item == NULL)
			return -1;
		snprintf(sub, sizeof(sub), "%s[%u]", path, idx);
		if (item->type != YAML_MAPPING_NODE) {
			rc = pol_err_node(c, item, "%s: expected a mapping (host, upload, "
			    "per), got %s", sub, pol_node_what(item));
			continue;
		}
		if (pol_walk_map(c, item, f->sub, &e, sub) < 0 ||
		    pol_budget_add(c, item, &e, idx, sub, path) < 0)
			rc = -1;
		free(e.host);
	}
	return rc;
}

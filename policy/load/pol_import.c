/*
 * Patterns into the builder, and import: files. An import is either a Claude Code
 * settings file (sandbox.network.allowedDomains / deniedDomains) or a sandbox bound file
 * (network.allowDomains, optional network.denyDomains). JSON is YAML, so libyaml reads
 * both; other keys of those files are theirs and are ignored, but the lists must be lists
 * of strings. Errors inside an import name the import's own FILE:LINE:COL.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pol_load_int.h"

/*
 * key[index] (node n) into builder b as a pattern of list; ask: only names without a
 * port may be written (what waits for approval is a DNS question).
 */
static int
pol_add_to(struct pol_ctx *c, struct pol_builder *b, yaml_node_t *n, const char *key,
    uint32_t index, enum pol_list list, bool imported, bool ask)
{
	char why[POL_WHY_MAX], sub[POL_PATH_MAX];
	struct pol_pattern p;
	struct pol_rule origin;
	const char *text;
	int rc;

	snprintf(sub, sizeof(sub), "%s[%u]", key, index);
	if ((text = pol_scalar(c, n, sub)) == NULL)
		return -1;
	if (pol_pattern_parse(text, &p, why, sizeof(why)) < 0)
		return pol_err_node(c, n, "%s: \"%s\": %s", sub, text, why);
	if (ask && ((p.kind != POL_NAME_EXACT && p.kind != POL_NAME_WILD) || p.port != 0))
		return pol_err_node(c, n, "%s: \"%s\": ask takes host names and wildcards "
		    "without a port (what waits is a DNS question)", sub, text);
	origin = (struct pol_rule){
		.key = key, .pattern = text, .file = c->file, .index = index,
		.line = (uint32_t)n->start_mark.line + 1, .col = (uint32_t)n->start_mark.column + 1,
		.list = list, .imported = imported,
	};
	if ((rc = pol_builder_add(b, c->policy, &p, &origin)) < 0)
		return pol_err_node(c, n, "%s: %s", sub, strerror(-rc));
	return 0;
}

int
pol_add_pattern(struct pol_ctx *c, yaml_node_t *n, const char *key, uint32_t index,
    enum pol_list list, bool imported)
{
	return pol_add_to(c, c->b, n, key, index, list, imported, false);
}

int
pol_add_ask(struct pol_ctx *c, yaml_node_t *n, const char *key, uint32_t index)
{
	return pol_add_to(c, c->ask_b, n, key, index, POL_LIST_ALLOW, false, true);
}

/* The value of key in map if map is a mapping; type errors are the caller's. */
static yaml_node_t *
pol_child(struct pol_ctx *c, yaml_node_t *map, const char *key)
{
	if (map == NULL || map->type != YAML_MAPPING_NODE)
		return NULL;
	return pol_map_get(c, map, key);
}

static int
pol_import_list(struct pol_ctx *c, yaml_node_t *n, const char *key, enum pol_list list)
{
	int rc = 0;

	if (n->type != YAML_SEQUENCE_NODE)
		return pol_err_node(c, n, "%s: expected a list, got %s", key, pol_node_what(n));
	for (yaml_node_item_t *it = n->data.sequence.items.start;
	    it < n->data.sequence.items.top; it++) {
		yaml_node_t *e = pol_node(c, *it);

		if (e == NULL)
			return -1;
		if (pol_add_pattern(c, e, key, (uint32_t)(it - n->data.sequence.items.start), list,
		    true) < 0)
			rc = -1;
	}
	return rc;
}

/* One format: parent.allow / parent.deny under root. Returns 1 if found, 0, or -1. */
static int
pol_import_format(struct pol_ctx *c, yaml_node_t *net, const char *parent, const char *allow,
    const char *deny)
{
	char key[POL_PATH_MAX];
	yaml_node_t *a, *d;
	int rc = 0;

	if (net == NULL)
		return 0;
	if (net->type != YAML_MAPPING_NODE)
		return pol_err_node(c, net, "%s: expected a mapping, got %s", parent,
		    pol_node_what(net));
	if ((a = pol_child(c, net, allow)) == NULL)
		return 0;
	snprintf(key, sizeof(key), "%s.%s", parent, allow);
	if (pol_import_list(c, a, key, POL_LIST_ALLOW) < 0)
		rc = -1;
	if ((d = pol_child(c, net, deny)) != NULL) {
		snprintf(key, sizeof(key), "%s.%s", parent, deny);
		if (pol_import_list(c, d, key, POL_LIST_DENY) < 0)
			rc = -1;
	}
	return rc < 0 ? -1 : 1;
}

static int
pol_import_walk(struct pol_ctx *c, yaml_node_t *root)
{
	yaml_node_t *sandbox;
	int a, b;

	if (root->type != YAML_MAPPING_NODE)
		return pol_err_node(c, root, "expected a mapping (a Claude Code settings file or a "
		    "sandbox bound file), got %s", pol_node_what(root));
	sandbox = pol_child(c, root, "sandbox");
	if (sandbox != NULL && sandbox->type != YAML_MAPPING_NODE)
		return pol_err_node(c, sandbox, "sandbox: expected a mapping, got %s",
		    pol_node_what(sandbox));
	a = pol_import_format(c, pol_child(c, sandbox, "network"), "sandbox.network",
	    "allowedDomains", "deniedDomains");
	b = pol_import_format(c, pol_child(c, root, "network"), "network", "allowDomains",
	    "denyDomains");
	if (a < 0 || b < 0)
		return -1;
	if (a == 0 && b == 0)
		return pol_err_node(c, root, "no sandbox.network.allowedDomains (Claude Code "
		    "settings) or network.allowDomains (sandbox bound file) in this file");
	return 0;
}

static char *
pol_join(const char *dir, const char *rel)
{
	char *p;

	if (rel[0] == '/' || dir == NULL || strcmp(dir, ".") == 0)
		return strdup(rel);
	if (asprintf(&p, "%s/%s", dir, rel) < 0)
		return NULL;
	return p;
}

int
pol_import(struct pol_ctx *c, yaml_node_t *n, const char *rel, const char *path)
{
	struct pol_config *cfg = c->cfg;
	const char *saved_file = c->file;
	yaml_document_t *saved_doc = c->doc, doc;
	char *file = NULL, *buf = NULL, **v;
	size_t len;
	int rc = -1, err;

	if ((file = pol_join(c->dir, rel)) == NULL)
		return pol_err_node(c, n, "%s: out of memory", path);
	/* Remember it for the summary; imports[] grows with the policies. */
	if ((v = realloc(cfg->imports, (c->policy + 1) * sizeof(*v))) == NULL) {
		free(file);
		return pol_err_node(c, n, "%s: out of memory", path);
	}
	cfg->imports = v;
	for (size_t i = c->nimports; i <= c->policy; i++)
		v[i] = NULL;
	if (c->nimports < c->policy + 1)
		c->nimports = c->policy + 1;
	free(v[c->policy]);
	v[c->policy] = file;

	if ((buf = pol_read_file(file, POL_IMPORT_BYTES_MAX, &len, &err)) == NULL)
		return pol_err_node(c, n, "%s: cannot read '%s': %s", path, file,
		    err == EFBIG ? "larger than 16 MiB" :
		    err == EINVAL ? "not a regular file" : strerror(err));
	c->file = file;
	if (pol_yaml_parse(c, buf, len, &doc) == 0) {
		c->doc = &doc;
		rc = pol_import_walk(c, yaml_document_get_root_node(&doc));
		yaml_document_delete(&doc);
	}
	c->file = saved_file;
	c->doc = saved_doc;
	free(buf);
	return rc;
}

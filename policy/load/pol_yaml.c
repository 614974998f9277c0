/*
 * The YAML walker: libyaml's document tree, walked with { key, node type, handler }
 * tables that reject unknown keys, duplicate keys and wrong node types, and report
 * FILE:LINE:COL from the node marks (netplan parse.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pol_load_int.h"

/* Line and column (from 1) of byte offset off: reader errors carry only an offset. */
static void
pol_offset_pos(const char *buf, size_t len, size_t off, uint32_t *line, uint32_t *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = 0; i < off && i < len; i++) {
		if (buf[i] == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

/*
 * Parse buf into *doc (the first document). Returns 0, or -1 after reporting a syntax
 * error, an empty file or a second document. On 0 the caller deletes *doc.
 */
int
pol_yaml_parse(struct pol_ctx *c, const char *buf, size_t len, yaml_document_t *doc)
{
	yaml_parser_t p;
	yaml_document_t extra;
	uint32_t line, col;
	int rc = -1;

	if (!yaml_parser_initialize(&p)) {
		pol_err_add(c->errs, c->file, 1, 1, "out of memory");
		return -1;
	}
	yaml_parser_set_input_string(&p, (const unsigned char *)buf, len);
	if (!yaml_parser_load(&p, doc)) {
		if (p.error == YAML_READER_ERROR) {
			pol_offset_pos(buf, len, p.problem_offset, &line, &col);
		} else {
			line = (uint32_t)p.problem_mark.line + 1;
			col = (uint32_t)p.problem_mark.column + 1;
		}
		pol_err_add(c->errs, c->file, line, col, "YAML syntax error: %s%s%s",
		    p.problem != NULL ? p.problem : "malformed",
		    p.context != NULL ? " " : "", p.context != NULL ? p.context : "");
		goto out;
	}
	if (yaml_document_get_root_node(doc) == NULL) {
		pol_err_add(c->errs, c->file, 1, 1, "empty file");
		yaml_document_delete(doc);
		goto out;
	}
	if (!yaml_parser_load(&p, &extra)) {
		line = (uint32_t)p.problem_mark.line + 1;
		col = (uint32_t)p.problem_mark.column + 1;
		pol_err_add(c->errs, c->file, line, col, "YAML syntax error: %s",
		    p.problem != NULL ? p.problem : "malformed");
		yaml_document_delete(doc);
		goto out;
	}
	if (yaml_document_get_root_node(&extra) != NULL) {
		pol_err_add(c->errs, c->file, (uint32_t)extra.start_mark.line + 1,
		    (uint32_t)extra.start_mark.column + 1,
		    "a second YAML document: the file must hold one");
		yaml_document_delete(&extra);
		yaml_document_delete(doc);
		goto out;
	}
	yaml_document_delete(&extra);
	rc = 0;
out:
	yaml_parser_delete(&p);
	return rc;
}

/* Node id of the current document, counted against the budget; NULL when exhausted. */
yaml_node_t *
pol_node(struct pol_ctx *c, int id)
{
	yaml_node_t *n = yaml_document_get_node(c->doc, id);

	if (n == NULL)
		return NULL;
	if (c->budget == 0) {
		if (!c->budget_reported)
			pol_err_fatal(c, n, "too many nodes to walk: aliases expanding without "
			    "bound?");
		c->budget_reported = true;
		return NULL;
	}
	c->budget--;
	return n;
}

const char *
pol_node_what(const yaml_node_t *n)
{
	switch (n->type) {
	case YAML_MAPPING_NODE:
		return "a mapping";
	case YAML_SEQUENCE_NODE:
		return "a list";
	case YAML_SCALAR_NODE:
		if (n->data.scalar.length == 0 && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
			return "an empty value";
		return "a scalar";
	default:
		return "nothing";
	}
}

static const char *
pol_type_what(yaml_node_type_t t)
{
	switch (t) {
	case YAML_MAPPING_NODE:
		return "a mapping";
	case YAML_SEQUENCE_NODE:
		return "a list";
	default:
		return "a scalar";
	}
}

/* The scalar's text, or NULL after an error: a string holding NUL can't be a name. */
const char *
pol_scalar(struct pol_ctx *c, yaml_node_t *n, const char *path)
{
	const char *s = (const char *)n->data.scalar.value;

	if (n->type != YAML_SCALAR_NODE) {
		pol_err_node(c, n, "%s: expected a scalar, got %s", path, pol_node_what(n));
		return NULL;
	}
	if (strlen(s) != n->data.scalar.length) {
		pol_err_node(c, n, "%s: contains a NUL character", path);
		return NULL;
	}
	return s;
}

static void
pol_expected_keys(const struct pol_field *fields, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (const struct pol_field *f = fields; f->key != NULL && o < len; f++) {
		int k = snprintf(buf + o, len - o, "%s%s", o > 0 ? ", " : "", f->key);

		if (k < 0)
			break;
		o += (size_t)k;
	}
}

int
pol_walk_map(struct pol_ctx *c, yaml_node_t *map, const struct pol_field *fields, void *obj,
    const char *path)
{
	const struct pol_field *f;
	uint64_t seen = 0;
	int rc = 0;

	if (map->type != YAML_MAPPING_NODE)
		return pol_err_node(c, map, "%s: expected a mapping, got %s",
		    path[0] != '\0' ? path : "top level", pol_node_what(map));
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
	    p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = pol_node(c, p->key), *v = pol_node(c, p->value);
		char sub[POL_PATH_MAX];
		const char *key;
		size_t i;

		if (k == NULL || v == NULL)
			return -1;
		if ((key = pol_scalar(c, k, path[0] != '\0' ? path : "top level")) == NULL) {
			rc = -1;
			continue;
		}
		for (f = fields, i = 0; f->key != NULL; f++, i++)
			if (strcmp(f->key, key) == 0)
				break;
		snprintf(sub, sizeof(sub), "%s%s%s", path, path[0] != '\0' ? "." : "", key);
		if (f->key == NULL) {
			char exp[512];

			pol_expected_keys(fields, exp, sizeof(exp));
			rc = pol_err_node(c, k, "unknown key '%s'%s%s (expected %s)", key,
			    path[0] != '\0' ? " in " : "", path, exp);
			continue;
		}
		/* YAML requires unique keys; libyaml leaves that to us. */
		if (seen >> i & 1) {
			rc = pol_err_node(c, k, "duplicate key '%s'", sub);
			continue;
		}
		seen |= 1ULL << i;
		if (v->type != f->type) {
			rc = pol_err_node(c, v, "%s: expected %s, got %s", sub,
			    pol_type_what(f->type), pol_node_what(v));
			continue;
		}
		if (f->fn(c, v, f, obj, sub) < 0)
			rc = -1;
	}
	for (f = fields; f->key != NULL; f++)
		if (f->required && (seen >> (f - fields) & 1) == 0)
			rc = pol_err_node(c, map, "%s%smissing key '%s'", path,
			    path[0] != '\0' ? ": " : "", f->key);
	return rc;
}

int
pol_h_str(struct pol_ctx *c, yaml_node_t *n, const struct pol_field *f, void *obj,
    const char *path)
{
	char **dst = (char **)((char *)obj + f->off), *s;
	const char *v;

	if ((v = pol_scalar(c, n, path)) == NULL)
		return -1;
	if (v[0] == '\0')
		return pol_err_node(c, n, "%s: must not be empty", path);
	if ((s = strdup(v)) == NULL)
		return pol_err_node(c, n, "out of memory");
	free(*dst);
	*dst = s;
	return 0;
}

int
pol_h_u32(struct pol_ctx *c, yaml_node_t *n, const struct pol_field *f, void *obj,
    const char *path)
{
	const char *v;
	unsigned long long x;
	char *end;

	if ((v = pol_scalar(c, n, path)) == NULL)
		return -1;
	/* Decimal digits only: strtoull alone would take "-1", " 7" and "0x10". */
	if (v[0] == '\0' || strspn(v, "0123456789") != strlen(v))
		return pol_err_node(c, n, "%s: expected an integer, got \"%s\"", path, v);
	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno != 0 || x < f->min || x > f->max)
		return pol_err_node(c, n, "%s: %s is out of range (%u..%u)", path, v, f->min,
		    f->max);
	*(uint32_t *)((char *)obj + f->off) = (uint32_t)x;
	return 0;
}

int
pol_h_bool(struct pol_ctx *c, yaml_node_t *n, const struct pol_field *f, void *obj,
    const char *path)
{
	static const char *const yes[] = { "true", "yes", "on", NULL };
	static const char *const no[] = { "false", "no", "off", NULL };
	const char *v;

	if ((v = pol_scalar(c, n, path)) == NULL)
		return -1;
	for (size_t i = 0; yes[i] != NULL; i++) {
		if (strcasecmp(v, yes[i]) == 0) {
			*(bool *)((char *)obj + f->off) = true;
			return 0;
		}
		if (strcasecmp(v, no[i]) == 0) {
			*(bool *)((char *)obj + f->off) = false;
			return 0;
		}
	}
	return pol_err_node(c, n, "%s: expected true or false, got \"%s\"", path, v);
}

int
pol_h_enum(struct pol_ctx *c, yaml_node_t *n, const struct pol_field *f, void *obj,
    const char *path)
{
	char exp[128];
	const char *v;
	size_t o = 0;

	if ((v = pol_scalar(c, n, path)) == NULL)
		return -1;
	exp[0] = '\0';
	for (unsigned int i = 0; f->words[i] != NULL; i++) {
		if (strcmp(v, f->words[i]) == 0) {
			*(unsigned int *)((char *)obj + f->off) = i;
			return 0;
		}
		o += (size_t)snprintf(exp + o, sizeof(exp) - o, "%s%s", i > 0 ? " or " : "",
		    f->words[i]);
		if (o >= sizeof(exp))
			o = sizeof(exp) - 1;
	}
	return pol_err_node(c, n, "%s: expected %s, got \"%s\"", path, exp, v);
}

int
pol_h_str_list(struct pol_ctx *c, yaml_node_t *n, const struct pol_field *f, void *obj,
    const char *path)
{
	char ***dst = (char ***)((char *)obj + f->off);
	size_t *cnt = (size_t *)((char *)obj + f->off + sizeof(char **));
	size_t len = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start), k = 0;
	char **v;
	int rc = 0;

	if ((v = calloc(len + 1, sizeof(*v))) == NULL)
		return pol_err_node(c, n, "out of memory");
	for (yaml_node_item_t *it = n->data.sequence.items.start;
	    it < n->data.sequence.items.top; it++) {
		yaml_node_t *e = pol_node(c, *it);
		char sub[POL_PATH_MAX];
		const char *s;

		if (e == NULL) {
			rc = -1;
			break;
		}
		snprintf(sub, sizeof(sub), "%s[%zu]", path,
		    (size_t)(it - n->data.sequence.items.start));
		if ((s = pol_scalar(c, e, sub)) == NULL) {
			rc = -1;
			continue;
		}
		if ((v[k] = strdup(s)) == NULL) {
			rc = pol_err_node(c, e, "out of memory");
			break;
		}
		k++;
	}
	for (size_t i = 0; i < *cnt; i++)
		free((*dst)[i]);
	free(*dst);
	*dst = v;
	*cnt = k;
	return rc;
}

int
pol_h_map(struct pol_ctx *c, yaml_node_t *n, const struct pol_field *f, void *obj,
    const char *path)
{
	return pol_walk_map(c, n, f->sub, obj, path);
}

/* The value of key in map, or NULL; for checks that span keys, after the walk. */
yaml_node_t *
pol_map_get(struct pol_ctx *c, yaml_node_t *map, const char *key)
{
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
	    p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(c->doc, p->key);

		if (k != NULL && k->type == YAML_SCALAR_NODE &&
		    strcmp((const char *)k->data.scalar.value, key) == 0)
			return yaml_document_get_node(c->doc, p->value);
	}
	return NULL;
}

/*
 * Read a regular file of at most max bytes, NUL-terminated. Returns the buffer (free it)
 * or NULL with *err set (errno, or EFBIG). Special files are refused: /dev/zero would
 * never end and a FIFO could block the reload.
 */
char *
pol_read_file(const char *path, size_t max, size_t *len, int *err)
{
	struct stat st;
	char *buf = NULL, *q;
	size_t n = 0, cap = 0;
	ssize_t r;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0) {
		*err = errno;
		return NULL;
	}
	if (fstat(fd, &st) != 0) {
		*err = errno;
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		*err = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
		goto fail;
	}
	for (;;) {
		if (n + 1 >= cap) {
			cap = cap != 0 ? cap * 2 : 4096;
			if ((q = realloc(buf, cap)) == NULL) {
				*err = ENOMEM;
				goto fail;
			}
			buf = q;
		}
		if ((r = read(fd, buf + n, cap - n - 1)) < 0) {
			if (errno == EINTR)
				continue;
			*err = errno;
			goto fail;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > max) {
			*err = EFBIG;
			goto fail;
		}
	}
	close(fd);
	buf[n] = '\0';
	*len = n;
	return buf;
fail:
	free(buf);
	close(fd);
	return NULL;
}

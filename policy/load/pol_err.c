/*
 * Error collection. A load keeps going after an error where it can, so one run of
 * --check shows an operator several mistakes, not one per edit.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "pol_load_int.h"

static void pol_err_vadd(struct pol_errs *e, const char *file, uint32_t line, uint32_t col,
    const char *fmt, va_list ap) __attribute__((format(printf, 5, 0)));

static void
pol_err_vadd(struct pol_errs *e, const char *file, uint32_t line, uint32_t col,
    const char *fmt, va_list ap)
{
	struct pol_err *v;
	char *msg = NULL, *f = NULL;

	if (e->n >= POL_ERRS_MAX) {
		e->dropped++;
		return;
	}
	if (e->n == e->cap) {
		size_t cap = e->cap != 0 ? e->cap * 2 : 8;

		if ((v = realloc(e->v, cap * sizeof(*v))) == NULL)
			goto nomem;
		e->v = v;
		e->cap = cap;
	}
	if (vasprintf(&msg, fmt, ap) < 0) {
		msg = NULL;
		goto nomem;
	}
	if ((f = strdup(file != NULL ? file : "")) == NULL)
		goto nomem;
	e->v[e->n++] = (struct pol_err){ .file = f, .msg = msg, .line = line, .col = col };
	return;
nomem:
	/* Still fail the load: a dropped message must not read as success. */
	free(msg);
	free(f);
	e->dropped++;
}

void
pol_err_add(struct pol_errs *e, const char *file, uint32_t line, uint32_t col,
    const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	pol_err_vadd(e, file, line, col, fmt, ap);
	va_end(ap);
}

int
pol_err_node(struct pol_ctx *c, const yaml_node_t *n, const char *fmt, ...)
{
	va_list ap;
	uint32_t line = 1, col = 1;

	if (n != NULL) {
		line = (uint32_t)n->start_mark.line + 1;
		col = (uint32_t)n->start_mark.column + 1;
	}
	va_start(ap, fmt);
	pol_err_vadd(c->errs, c->file, line, col, fmt, ap);
	va_end(ap);
	return -1;
}

/* Like pol_err_node(), but kept even when the list is full: it says why the load stopped. */
int
pol_err_fatal(struct pol_ctx *c, const yaml_node_t *n, const char *msg)
{
	struct pol_errs *e = c->errs;

	if (e->n >= POL_ERRS_MAX && e->n > 0) {
		e->n--;
		free(e->v[e->n].file);
		free(e->v[e->n].msg);
		e->dropped++;
	}
	return pol_err_node(c, n, "%s", msg);
}

void
pol_errs_free(struct pol_errs *e)
{
	for (size_t i = 0; i < e->n; i++) {
		free(e->v[i].file);
		free(e->v[i].msg);
	}
	free(e->v);
	*e = (struct pol_errs){ 0 };
}

void
pol_errs_print(FILE *out, const struct pol_errs *e)
{
	for (size_t i = 0; i < e->n; i++)
		fprintf(out, "%s:%u:%u: %s\n", e->v[i].file, e->v[i].line, e->v[i].col,
		    e->v[i].msg);
	if (e->dropped > 0)
		fprintf(out, "... and %zu more error%s\n", e->dropped, e->dropped == 1 ? "" : "s");
}

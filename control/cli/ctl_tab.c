/*
 * Aligned text tables and reply members (ctl_tab.h).
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "ctl_cli.h"
#include "ctl_tab.h"

struct json_object *
ctl_jget(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (o == NULL || !json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, key, &v))
		return NULL;
	return v;
}

uint64_t
ctl_ju64(struct json_object *o, const char *key)
{
	struct json_object *v = ctl_jget(o, key);

	return v != NULL && json_object_is_type(v, json_type_int) ? json_object_get_uint64(v) : 0;
}

const char *
ctl_jstr(struct json_object *o, const char *key, const char *dflt)
{
	struct json_object *v = ctl_jget(o, key);

	return v != NULL && json_object_is_type(v, json_type_string) ?
	    json_object_get_string(v) : dflt;
}

struct json_object *
ctl_jarr(struct json_object *o, const char *key)
{
	struct json_object *v = ctl_jget(o, key);

	return v != NULL && json_object_is_type(v, json_type_array) ? v : NULL;
}

void
ctl_tab_row(struct ctl_tab *t)
{
	char **nc;

	if (t->nrows == t->cap) {
		size_t cap = t->cap == 0 ? 16 : t->cap * 2;

		if ((nc = reallocarray(t->cell, cap * t->ncols, sizeof(*nc))) == NULL) {
			t->oom = true;
			return;
		}
		t->cell = nc;
		t->cap = cap;
	}
	memset(&t->cell[t->nrows * t->ncols], 0, t->ncols * sizeof(*t->cell));
	t->nrows++;
}

void
ctl_tab_set(struct ctl_tab *t, size_t col, const char *fmt, ...)
{
	char **c;
	va_list ap;

	if (t->nrows == 0 || col >= t->ncols)
		return;
	c = &t->cell[(t->nrows - 1) * t->ncols + col];
	free(*c);
	va_start(ap, fmt);
	if (vasprintf(c, fmt, ap) < 0) {
		*c = NULL;
		t->oom = true;
	}
	va_end(ap);
}

static void
ctl_tab_print_row(const struct ctl_tab *t, const char *const *row, FILE *out)
{
	for (size_t j = 0; j < t->ncols; j++) {
		const char *s = row[j] != NULL ? row[j] : "";
		bool last = j + 1 == t->ncols;

		if (t->align[j] == 'r')
			fprintf(out, "%*s", (int)t->w[j], s);
		else if (last)
			fputs(s, out);		/* no trailing blanks */
		else
			fprintf(out, "%-*s", (int)t->w[j], s);
		fputs(last ? "\n" : "  ", out);
	}
}

static void
ctl_tab_drop_rows(struct ctl_tab *t)
{
	for (size_t i = 0; i < t->nrows * t->ncols; i++)
		free(t->cell[i]);
	t->nrows = 0;
}

bool
ctl_tab_flush(struct ctl_tab *t, FILE *out)
{
	if (t->oom) {
		ctl_tab_drop_rows(t);
		return false;
	}
	for (size_t j = 0; j < t->ncols && j < CTL_TAB_COLS; j++) {
		if (t->w[j] < strlen(t->head[j]))
			t->w[j] = strlen(t->head[j]);
		for (size_t i = 0; i < t->nrows; i++) {
			const char *s = t->cell[i * t->ncols + j];

			if (s != NULL && strlen(s) > t->w[j])
				t->w[j] = strlen(s);
		}
	}
	if (!t->head_done)
		ctl_tab_print_row(t, t->head, out);
	t->head_done = true;
	for (size_t i = 0; i < t->nrows; i++)
		ctl_tab_print_row(t, (const char *const *)&t->cell[i * t->ncols], out);
	ctl_tab_drop_rows(t);
	return true;
}

void
ctl_tab_free(struct ctl_tab *t)
{
	ctl_tab_drop_rows(t);
	free(t->cell);
	t->cell = NULL;
	t->cap = 0;
}

int
ctl_tab_finish(struct ctl_tab *t)
{
	int rc = CTL_EXIT_OK;

	if (!ctl_tab_flush(t, stdout)) {
		fputs("namegatectl: out of memory\n", stderr);
		rc = CTL_EXIT_ERROR;
	}
	ctl_tab_free(t);
	return rc;
}

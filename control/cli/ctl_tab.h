/*
 * namegatectl's text output: aligned tables (columns two spaces apart, numbers
 * right-aligned), printed at once or a batch at a time for the --follow forms, and the
 * members of a daemon reply or a log line read with a default when absent or mistyped.
 */
#ifndef CTL_TAB_H
#define CTL_TAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CTL_TAB_COLS	10

struct json_object;

struct ctl_tab {
	size_t ncols;
	const char *const *head;
	const char *align;	/* 'l' or 'r' per column */
	char **cell;		/* nrows * ncols; NULL prints as "" */
	size_t nrows, cap;
	size_t w[CTL_TAB_COLS];	/* widths so far: a later batch lines up under earlier ones */
	bool head_done;
	bool oom;
};

/* Starts a row; its cells are set with ctl_tab_set(). */
void ctl_tab_row(struct ctl_tab *t);
void ctl_tab_set(struct ctl_tab *t, size_t col, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/*
 * Prints the header (the first time) and the rows held, widening columns as the rows need,
 * then forgets the rows. Returns false when out of memory was met (nothing printed).
 */
bool ctl_tab_flush(struct ctl_tab *t, FILE *out);
void ctl_tab_free(struct ctl_tab *t);
/* Prints the table, or says it could not be built; frees it; returns the exit status. */
int ctl_tab_finish(struct ctl_tab *t);

/* Member key of object o, or NULL (o need not be an object). */
struct json_object *ctl_jget(struct json_object *o, const char *key);
/* Its unsigned integer (0), its string (dflt), its array (NULL). */
uint64_t ctl_ju64(struct json_object *o, const char *key);
const char *ctl_jstr(struct json_object *o, const char *key, const char *dflt);
struct json_object *ctl_jarr(struct json_object *o, const char *key);

#endif /* CTL_TAB_H */

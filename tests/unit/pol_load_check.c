/* See pol_load_check.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "pol_load_check.h"

struct pol_errs pol_check_errs;

struct pol_config *
pol_check_load(const char *text)
{
	pol_errs_free(&pol_check_errs);
	return pol_load_buffer(text, strlen(text), "ng.yaml", &pol_check_errs);
}

void
pol_check_first_err(const char *text, const char *want)
{
	const struct pol_errs *e = &pol_check_errs;
	struct pol_config *cfg;
	char got[1024];

	if ((cfg = pol_check_load(text)) != NULL) {
		pol_config_free(cfg);
		fail_msg("accepted:\n%s", text);
	}
	assert_true(e->n > 0);
	snprintf(got, sizeof(got), "%s:%u:%u: %s", e->v[0].file, e->v[0].line, e->v[0].col,
	    e->v[0].msg);
	if (strcmp(got, want) != 0)
		fail_msg("got  %s\nwant %s", got, want);
}

void
pol_check_done(void)
{
	pol_errs_free(&pol_check_errs);
}

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
const char *pol_check_file = "ng.yaml";

struct pol_config *
pol_check_load(const char *text)
{
	pol_errs_free(&pol_check_errs);
	return pol_load_buffer(text, strlen(text), pol_check_file, &pol_check_errs);
}

const char *
pol_check_err(size_t i)
{
	const struct pol_errs *e = &pol_check_errs;
	static char buf[1024];

	if (i >= e->n)
		return "(none)";
	snprintf(buf, sizeof(buf), "%s:%u:%u: %s", e->v[i].file, e->v[i].line, e->v[i].col,
	    e->v[i].msg);
	return buf;
}

void
pol_refused(const char *text, const char *want)
{
	struct pol_config *cfg;

	if ((cfg = pol_check_load(text)) != NULL) {
		pol_config_free(cfg);
		fail_msg("accepted:\n%s", text);
	}
	if (strcmp(pol_check_err(0), want) != 0)
		fail_msg("got  %s\nwant %s", pol_check_err(0), want);
}

int
pol_check_teardown(void **state)
{
	(void)state;
	pol_errs_free(&pol_check_errs);
	return 0;
}

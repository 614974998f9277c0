/*
 * Loading a configuration from a string in the policy/load tests, and checking the first
 * error it reports, as "FILE:LINE:COL: message".
 */
#ifndef POL_LOAD_CHECK_H
#define POL_LOAD_CHECK_H

#include <stddef.h>

#include "policy/load.h"

/* The name loads give their text, in errors and for relative imports: "ng.yaml" unless set. */
extern const char *pol_check_file;

/* Load text as pol_check_file; the errors stay in pol_check_errs until the next call. */
struct pol_config *pol_check_load(const char *text);

/* Error i of the last load as "FILE:LINE:COL: message"; "(none)" past the last. */
const char *pol_check_err(size_t i);

/* text must be refused, its first error exactly want (a cmocka failure otherwise). */
void pol_refused(const char *text, const char *want);

/* The group teardown: frees what the last load reported. */
int pol_check_teardown(void **state);

extern struct pol_errs pol_check_errs;

#endif

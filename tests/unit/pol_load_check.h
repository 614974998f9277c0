/*
 * Loading a configuration from a string in the policy/load tests, and checking the first
 * error it reports, as "FILE:LINE:COL: message".
 */
#ifndef POL_LOAD_CHECK_H
#define POL_LOAD_CHECK_H

#include "policy/load.h"

/* Load text as "ng.yaml"; the errors stay in pol_check_errs until the next call. */
struct pol_config *pol_check_load(const char *text);

/* text must be refused, its first error exactly want (a cmocka failure otherwise). */
void pol_check_first_err(const char *text, const char *want);

/* Free what the last load reported (at the end of a test program). */
void pol_check_done(void);

extern struct pol_errs pol_check_errs;

#endif

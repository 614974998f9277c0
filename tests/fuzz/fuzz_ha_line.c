/*
 * libFuzzer target for keepalived's notify FIFO lines (control/ha/ctl_ha_line.c), which a
 * process other than namegate writes. Besides what ASan/UBSan catch (the line is an
 * exact-size copy, so a read past it is seen), it checks the parser's promises and
 * abort()s when one breaks:
 *
 *  - A role comes only with a line that starts "INSTANCE \"", and is one of keepalived's
 *    four (never STARTING, which is namegate's own).
 *  - With an instance named, a line is a role only if it is one without: the name only
 *    narrows; and a role line for the instance it quotes is a role for that name too.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_ha.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *line = malloc(size > 0 ? size : 1), *name;
	enum ctl_ha_role any = CTL_HA_ROLE_MAX, named = CTL_HA_ROLE_MAX;
	enum ctl_ha_line st, st_named;
	const char *q, *e;

	if (line == NULL)
		return 0;
	memcpy(line, data, size);
	st = ctl_ha_line_parse(line, size, NULL, &any);
	st_named = ctl_ha_line_parse(line, size, "VI_1", &named);
	if (st == CTL_HA_LINE_ROLE) {
		check(size > 10 && memcmp(line, "INSTANCE \"", 10) == 0);
		check(any == CTL_HA_MASTER || any == CTL_HA_BACKUP || any == CTL_HA_FAULT ||
		    any == CTL_HA_STOP);
		/* the quoted name, as the instance: the same role */
		q = line + 10;
		e = memchr(q, '"', size - 10);
		check(e != NULL);
		if ((name = strndup(q, (size_t)(e - q))) == NULL) {
			free(line);
			return 0;
		}
		if (strlen(name) == (size_t)(e - q)) {	/* no NUL inside the name */
			named = CTL_HA_ROLE_MAX;
			check(ctl_ha_line_parse(line, size, name, &named) == CTL_HA_LINE_ROLE);
			check(named == any);
		}
		free(name);
	}
	if (st_named == CTL_HA_LINE_ROLE)
		check(st == CTL_HA_LINE_ROLE);
	free(line);
	return 0;
}

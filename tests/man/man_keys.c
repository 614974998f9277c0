/*
 * Every key the configuration loader accepts, one YAML path a line, read out of the
 * loader's own schema tables (pol_top_fields and the tables below it through .sub):
 *
 *   dataplane.max_flows   dns.max_names_per_suffix.count   policies.NAME.allow
 *   policies.NAME.budgets[].host   vms[].mac
 *
 * check_man.py requires each in namegate.yaml(5): a key added to a table and not to the
 * page fails the test, with no list of keys kept anywhere else.
 */
#include <stdio.h>

#include "pol_load_int.h"

/*
 * Where the keys of f->sub sit below f's path: in each item of a list ("vms[]."), in each
 * value of a mapping of names ("policies.NAME."), or in f's own mapping ("dns.").
 */
static const char *
keys_joint(const struct pol_field *f)
{
	if (f->type == YAML_SEQUENCE_NODE)
		return "[].";
	if (f->fn == pol_h_policies)
		return ".NAME.";
	return ".";
}

static int
keys_walk(const struct pol_field *fields, const char *prefix)
{
	char path[POL_PATH_MAX], below[POL_PATH_MAX];
	int n;

	for (const struct pol_field *f = fields; f->key != NULL; f++) {
		n = snprintf(path, sizeof(path), "%s%s", prefix, f->key);
		if (n < 0 || (size_t)n >= sizeof(path))
			return -1;
		if (puts(path) == EOF)
			return -1;
		if (f->sub == NULL)
			continue;
		n = snprintf(below, sizeof(below), "%s%s", path, keys_joint(f));
		if (n < 0 || (size_t)n >= sizeof(below) || keys_walk(f->sub, below) < 0)
			return -1;
	}
	return 0;
}

int
main(void)
{
	if (keys_walk(pol_top_fields, "") < 0 || fflush(stdout) != 0) {
		fputs("man_keys: cannot print the keys\n", stderr);
		return 1;
	}
	return 0;
}

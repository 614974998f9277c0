/*
 * libFuzzer target: the policy loader on untrusted bytes, then everything a loaded
 * configuration feeds (matcher lookups, check, summary, warnings).
 *
 * Input: a configuration file. An input whose first byte is 0x01 is instead an import:
 * file (Claude Code settings or sandbox bound file, JSON or YAML): the rest is written to
 * a temporary file that a fixed configuration imports.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy/load.h"

static char tmpdir[] = "/tmp/fuzz_pol_load.XXXXXX";
static char imp_path[sizeof(tmpdir) + 16], cfg_name[sizeof(tmpdir) + 16];
static FILE *devnull;

static const char import_cfg[] =
    "policies:\n  p:\n    import: imp.json\n"
    "vms:\n  - {name: v, mac: \"02:00:00:00:00:01\", ipv4: 10.0.0.1, policy: p}\n";

static void
cleanup(void)
{
	unlink(imp_path);
	rmdir(tmpdir);
}

static int
init(void)
{
	if (devnull != NULL)
		return 0;
	if ((devnull = fopen("/dev/null", "w")) == NULL || mkdtemp(tmpdir) == NULL)
		return -1;
	snprintf(imp_path, sizeof(imp_path), "%s/imp.json", tmpdir);
	snprintf(cfg_name, sizeof(cfg_name), "%s/ng.yaml", tmpdir);
	atexit(cleanup);
	return 0;
}

static void
exercise(const struct pol_config *cfg)
{
	static const char *const hosts[] = {
		"pypi.org", "pypi.org:443", "a.b.example.com:80", "github.com:22",
		"198.51.100.7:443", "[2001:db8::1]:443", "x.githubusercontent.com",
	};
	uint8_t a4[4] = { 198, 51, 100, 7 }, a6[16] = { 0x20, 0x01, 0x0d, 0xb8 };

	pol_config_summary(cfg, devnull);
	pol_warn_print(cfg, devnull);
	for (size_t v = 0; v < cfg->nvms && v < 4; v++) {
		for (size_t h = 0; h < sizeof(hosts) / sizeof(hosts[0]); h++)
			pol_explain(cfg, cfg->vms[v].name, hosts[h], devnull, devnull);
	}
	for (uint32_t p = 0; p < pol_set_policies(cfg->set) && p < 8; p++) {
		/* Each pattern's own name, in every policy. */
		for (uint32_t i = 0; i < pol_set_rules(cfg->set) && i < 64; i++) {
			const struct pol_rule *r = pol_set_rule(cfg->set, i);
			const char *t = r->pattern;

			if (t[0] == '*' && t[1] == '.')
				t += 2;
			pol_match_name(cfg->set, p, t, strlen(t), POL_PROTO_TCP, 443, NULL);
		}
		pol_match_addr(cfg->set, p, a4, 4, POL_PROTO_UDP, 53, NULL);
		pol_match_addr(cfg->set, p, a6, 16, POL_PROTO_ANY, 0, NULL);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pol_errs errs = { 0 };
	struct pol_config *cfg;
	char pat[300], why[POL_WHY_MAX];
	struct pol_pattern p;
	bool has_port;
	size_t n = 0;

	if (init() < 0)
		abort();
	if (size > 0 && data[0] == 0x01) {
		FILE *f = fopen(imp_path, "wb");

		if (f == NULL)
			abort();
		fwrite(data + 1, 1, size - 1, f);
		fclose(f);
		cfg = pol_load_buffer(import_cfg, sizeof(import_cfg) - 1, cfg_name, &errs);
	} else {
		/* Relative imports resolve nowhere: the run doesn't depend on its cwd. */
		cfg = pol_load_buffer((const char *)data, size, "/nonexistent/fuzz.yaml", &errs);
	}
	if (cfg != NULL) {
		if (errs.n != 0)
			abort();	/* a configuration is returned only without errors */
		exercise(cfg);
		pol_config_free(cfg);
	} else if (errs.n == 0 && errs.dropped == 0) {
		abort();		/* a refusal always says why */
	}
	pol_errs_print(devnull, &errs);
	pol_errs_free(&errs);

	/* The pattern and host parsers on the first line. */
	while (n < size && n < sizeof(pat) - 1 && data[n] != '\n' && data[n] != '\0')
		n++;
	memcpy(pat, data, n);
	pat[n] = '\0';
	pol_pattern_parse(pat, &p, why, sizeof(why));
	pol_host_parse(pat, &p, &has_port, why, sizeof(why));
	return 0;
}

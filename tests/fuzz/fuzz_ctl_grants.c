/*
 * libFuzzer target: what reaches the grant table from outside. The control socket hands
 * grant's members to ctl_grants_add() as untrusted text, and the state file is read back
 * at start; both end in the overlay a generation is built from and in check's line.
 *
 * Input: first byte 0: the rest is a state file. Otherwise the rest is a grant request,
 * its members vm, host, for, reason separated by NUL bytes (a missing reason: none).
 * Whatever is accepted must satisfy what the daemon relies on: live, bounded, for a
 * configured VM, and the overlay built from it allows nothing the VM's deny list names.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_grants_int.h"

#define NOW	1796126400

static const char cfg_yaml[] =
    "policies:\n"
    "  p: {allow: [pypi.org], deny: [upload.pypi.org, \"*.evil.test\", 203.0.113.0/24]}\n"
    "vms:\n"
    "  - {name: vm1, mac: \"02:00:00:00:00:01\", ipv4: 10.0.0.1, policy: p}\n"
    "  - {name: vm2, mac: \"02:00:00:00:00:02\", ipv4: 10.0.0.2, policy: p}\n";

static struct pol_config *cfg;
static FILE *devnull;

/* The invariants of a table, whichever way it was filled. */
static void
check_table(const struct ctl_grants *g)
{
	static const char *const denied[] = { "upload.pypi.org", "x.evil.test" };
	struct ctl_overlay ov;
	static const uint8_t addr[4] = { 203, 0, 113, 9 };

	if (ctl_grants_count(g) > CTL_GRANTS_MAX)
		abort();
	for (size_t i = 0; i < ctl_grants_count(g); i++) {
		const struct ctl_grant *gr = ctl_grants_at(g, i);

		if (gr->id == 0 || gr->expires <= gr->created ||
		    gr->expires - gr->created > CTL_GRANT_SECONDS_MAX ||
		    strlen(gr->reason) > CTL_GRANT_REASON_MAX)
			abort();
	}
	if (ctl_overlay_build(g, cfg, NOW, &ov) != 0)
		return;			/* out of memory, or a VM cfg does not have: nothing */
	for (size_t v = 0; v < cfg->nvms; v++) {
		uint32_t pol = ov.view.vms[v].policy;

		for (size_t k = 0; k < sizeof(denied) / sizeof(denied[0]); k++)
			if (pol_match_name(ov.view.set, pol, denied[k], strlen(denied[k]),
			    POL_PROTO_TCP, 443, NULL) == POL_ALLOW)
				abort();	/* a grant beat a deny */
		if (pol_match_addr(ov.view.set, pol, addr, 4, POL_PROTO_TCP, 443, NULL) ==
		    POL_ALLOW)
			abort();
	}
	pol_explain(&ov.view, "vm1", "pypi.org:443", devnull, devnull);
	ctl_overlay_free(&ov);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ctl_grants *g;
	char why[512];

	if (cfg == NULL) {
		struct pol_errs errs = { 0 };

		devnull = fopen("/dev/null", "w");
		cfg = pol_load_buffer(cfg_yaml, sizeof(cfg_yaml) - 1, "ng.yaml", &errs);
		if (cfg == NULL || devnull == NULL)
			abort();
	}
	if (size == 0 || (g = ctl_grants_new("/nonexistent/grants.json")) == NULL)
		return 0;
	if (data[0] == 0) {
		if (ctl_grants_parse(g, (const char *)data + 1, size - 1, why, sizeof(why)) == 0)
			check_table(g);
	} else {
		char *text = malloc(size + 1), *field[4] = { NULL }, *p;
		struct ctl_grant gr;
		size_t n = 0;

		if (text == NULL) {
			ctl_grants_free(g);
			return 0;
		}
		memcpy(text, data + 1, size - 1);
		text[size - 1] = '\0';
		for (p = text; n < 4 && p <= text + size - 1; p += strlen(p) + 1)
			field[n++] = p;
		if (n >= 3 && ctl_grants_add(g, cfg, field[0], field[1], field[2], field[3], NOW,
		    &gr, why, sizeof(why)) == 0) {
			if (gr.expires <= NOW || pol_config_vm(cfg, gr.vm) == NULL)
				abort();
			check_table(g);
		}
		free(text);
	}
	ctl_grants_free(g);
	return 0;
}

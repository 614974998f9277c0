/*
 * libFuzzer target: a policy bundle's attacker bytes. A bundle comes from the fleet store,
 * or a file, and its key from the configuration: each parser must stay inside its buffer
 * and hand back only what its format allows.
 *
 * Input: first byte 0: the rest is a public key (a minisign.pub or its base64 line);
 * 1: a trusted comment; 2: a .minisig of fuzz_file, judged with fuzz_pub's key (the
 * corpus, from make_bundle_corpus.sh, holds real signatures by it, so mutations start
 * from ones that verify).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_bundle.h"
#include "fuzz_input.h"

#define NOW	1800000000	/* 2027-01-15T08:00:00Z: before the corpus's not_after */

static const char fuzz_pub[] = "RWSY7rw4UvOepA0JjKqC+iSr5Z/Lm8PuBnBR+9W5seuSgQzgMK8STMc6";
static const char fuzz_file[] =
    "policies:\n"
    "  p: {allow: [pypi.org]}\n"
    "vms:\n"
    "  - {name: a1, mac: \"02:00:00:00:00:01\", ipv4: 10.77.0.11, policy: p}\n";

static void
fuzz_comment(const char *p, size_t len)
{
	struct ctl_bundle_meta m;
	char why[160];

	if (ctl_bundle_comment_parse(p, len, &m, why, sizeof(why)) != 0)
		return;
	check(pol_fleet_word_ok(m.fleet, strlen(m.fleet)) &&
	    pol_fleet_word_ok(m.shard, strlen(m.shard)) && m.not_after >= 0);
}

static void
fuzz_sig(const char *p, size_t len)
{
	struct ctl_bundle_key key;
	struct ctl_bundle_want want = { .keys = &key, .nkeys = 1, .fleet = "prod",
		.shard = "rack1", .now = NOW };
	struct ctl_bundle_result res;
	struct ctl_bundle_sig sig;
	char why[160];

	if (ctl_bundle_sig_parse(p, len, &sig, why, sizeof(why)) == 0)
		check(sig.comment >= p && sig.comment_len <= len &&
		    (size_t)(sig.comment - p) <= len - sig.comment_len);
	check(ctl_bundle_key_parse(fuzz_pub, strlen(fuzz_pub), &key, why, sizeof(why)) == 0);
	ctl_bundle_judge(&want, fuzz_file, strlen(fuzz_file), "bundle.yaml", p, len, true, &res);
	check((res.verdict == CTL_BUNDLE_ACCEPTED) == (res.cfg != NULL));
	if (res.verdict == CTL_BUNDLE_ACCEPTED)
		check(res.have_meta && strcmp(res.meta.fleet, "prod") == 0 &&
		    strcmp(res.meta.shard, "rack1") == 0 && res.meta.not_after > NOW);
	else
		check(res.reason[0] != '\0');
	pol_config_free(res.cfg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ctl_bundle_key key;
	char why[160];
	const char *p;
	char *copy;
	size_t len;

	if (size == 0)
		return 0;
	/* a copy of exactly the input's length: ASan sees any read past it */
	len = size - 1;
	if ((copy = malloc(len > 0 ? len : 1)) == NULL)
		return 0;
	memcpy(copy, data + 1, len);
	p = copy;
	switch (data[0]) {
	case 0:
		ctl_bundle_key_parse(p, len, &key, why, sizeof(why));
		break;
	case 1:
		fuzz_comment(p, len);
		break;
	default:
		fuzz_sig(p, len);
		break;
	}
	free(copy);
	return 0;
}

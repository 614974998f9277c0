/*
 * libFuzzer target: the fleet store's records. Anyone with write access to a part of the
 * store (an operator, a gateway's credentials) writes bytes every gateway decodes: each
 * decoder must stay inside its buffer and hand back only what its format allows.
 *
 * Input: the first byte picks the decoder (key kind, grant, pending, decision, bundle,
 * revoked ID); the rest is its bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_fleet_rec.h"
#include "fuzz_input.h"

static void
fuzz_key(const char *p, size_t len)
{
	const char *tail = NULL;
	size_t tlen = 0;
	enum ctl_fleet_kind k = ctl_fleet_key_kind("/namegate/f/", p, len, &tail, &tlen);

	if (k == CTL_FLEET_K_OTHER)
		return;
	check(tail > p && tail + tlen == p + len && tlen > 0);
	if (k == CTL_FLEET_K_PENDING || k == CTL_FLEET_K_DECISION)
		check(memchr(tail, '/', tlen) != NULL);
	else
		check(memchr(tail, '/', tlen) == NULL);
}

static void
fuzz_grant(const char *p, size_t len)
{
	struct ctl_fleet_grant fg;
	char why[CTL_FLEET_WHY_MAX];
	char *again;

	if (ctl_fleet_grant_decode(p, len, 7, &fg, why, sizeof(why)) != 0)
		return;
	check(fg.g.id == 7 && fg.g.expires > fg.g.created &&
	    fg.g.expires - fg.g.created <= CTL_GRANT_SECONDS_MAX &&
	    strlen(fg.g.vm) < sizeof(fg.g.vm) && strlen(fg.g.host) < sizeof(fg.g.host));
	/* what decodes encodes to a record that decodes the same */
	again = ctl_fleet_grant_encode(&fg);
	check(again != NULL);
	{
		struct ctl_fleet_grant fg2;

		check(ctl_fleet_grant_decode(again, strlen(again), 7, &fg2, why, sizeof(why)) == 0 &&
		    strcmp(fg.g.host, fg2.g.host) == 0 && fg.g.expires == fg2.g.expires);
	}
	free(again);
}

static void
fuzz_pending(const char *p, size_t len)
{
	struct ctl_fleet_pending r;
	char why[CTL_FLEET_WHY_MAX];

	if (ctl_fleet_pending_decode(p, len, &r, why, sizeof(why)) != 0)
		return;
	check(r.id > 0 && pol_fleet_word_ok(r.gateway, strlen(r.gateway)));
}

static void
fuzz_decision(const char *p, size_t len)
{
	char name[POL_NAME_MAX + 1], user[CTL_GRANT_USER_MAX + 1], why[CTL_FLEET_WHY_MAX];
	int64_t uid;

	(void)ctl_fleet_decision_decode(p, len, name, sizeof(name), user, sizeof(user), &uid,
	    why, sizeof(why));
}

static void
fuzz_bundle(const char *p, size_t len)
{
	struct ctl_fleet_bundle b;
	char why[CTL_FLEET_WHY_MAX];

	if (ctl_fleet_bundle_decode(p, len, &b, why, sizeof(why)) != 0)
		return;
	check(b.policy[b.policy_len] == '\0' && b.minisig[b.minisig_len] == '\0');
	ctl_fleet_bundle_clear(&b);
}

static void
fuzz_ids(const char *p, size_t len)
{
	char gw[POL_FLEET_WORD_MAX + 1];
	uint64_t id;

	if (ctl_fleet_id_parse(p, len, &id) == 0)
		check(id > 0);
	if (ctl_fleet_gw_id_parse(p, len, gw, sizeof(gw), &id) == 0)
		check(id > 0 && pol_fleet_word_ok(gw, strlen(gw)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static void (*const fns[])(const char *, size_t) = { fuzz_key, fuzz_grant,
		fuzz_pending, fuzz_decision, fuzz_bundle, fuzz_ids };
	/* a copy of just the bytes: a read past them is the sanitizers' finding */
	char *p;

	if (size == 0)
		return 0;
	if ((p = malloc(size - 1 + 1)) == NULL)
		return 0;
	memcpy(p, data + 1, size - 1);
	fns[data[0] % (sizeof(fns) / sizeof(fns[0]))](p, size - 1);
	free(p);
	return 0;
}

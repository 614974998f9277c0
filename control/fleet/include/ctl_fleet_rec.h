/*
 * What a fleet keeps in etcd (issue 27), under the fleet's prefix P ("/namegate/NAME/"):
 *
 *   P/grants/KEY       a grant: {"vm","host","created","expires","reason","uid","user",
 *                      "origin","put_ms"}; KEY is random hex, the grant's id the key's
 *                      create revision (store-wide unique, small, increasing). Written by
 *                      operators only; under a lease that outlives "expires" a little.
 *   P/revoked/ID       grant ID is revoked, wherever and whenever its record is seen:
 *                      {"id","user","uid","gateway","at"}. Gateways may write these
 *                      (a revoke only narrows), so a revoke typed on any box reaches all.
 *   P/bundles/SHARD    the shard's signed policy bundle: {"policy","minisig","put_ms"},
 *                      the policy file's text and its .minisig's, as minisign wrote them.
 *   P/status/GATEWAY   what a gateway enforces: {"gateway","fleet","shard","serial",
 *                      "digest","source","refused":{"serial","reason"},"connected",
 *                      "grants","seen"}.
 *   P/pending/GATEWAY/ID  a DNS query waiting for approval on GATEWAY (its request ID):
 *                      {"gateway","id","vm","name","type","first_seen","expires"}; the
 *                      gateway writes it under a lease and deletes it when it stops waiting.
 *   P/decisions/GATEWAY/ID  {"verdict":"deny","name","user","uid","at"}: an operator
 *                      denies it from anywhere (the name must be the request's: IDs start
 *                      again when a gateway restarts). An approval is a grant of the name.
 *
 * Encoders and decoders only: no I/O. Decoders read what anyone with write access may have
 * put there, so every field is checked and a record that is not exactly one is refused
 * with a reason. No DPDK.
 */
#ifndef CTL_FLEET_REC_H
#define CTL_FLEET_REC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl_bundle.h"
#include "ctl_grants.h"

#define CTL_FLEET_KEY_MAX	(POL_FLEET_PREFIX_MAX + 96)
#define CTL_FLEET_GRANT_KEY_LEN	16	/* hex digits of a grant's key */
#define CTL_FLEET_DIGEST_LEN	64	/* SHA-256 in hex */
#define CTL_FLEET_WHY_MAX	CTL_BUNDLE_REASON_MAX

enum ctl_fleet_kind {
	CTL_FLEET_K_OTHER,		/* under the prefix, none of ours: ignored */
	CTL_FLEET_K_GRANT,
	CTL_FLEET_K_REVOKED,
	CTL_FLEET_K_BUNDLE,
	CTL_FLEET_K_STATUS,
	CTL_FLEET_K_PENDING,		/* tail GATEWAY/ID */
	CTL_FLEET_K_DECISION,		/* tail GATEWAY/ID */
};

/*
 * What key (len bytes) is, and its last part in *tail (aliasing key; *tail_len bytes):
 * the grant's KEY, the revoked ID, the bundle's SHARD, the status's GATEWAY.
 */
enum ctl_fleet_kind ctl_fleet_key_kind(const char *prefix, const char *key, size_t len,
    const char **tail, size_t *tail_len);

/* P + what + tail into buf (CTL_FLEET_KEY_MAX); what is "grants/", "revoked/" ... */
void ctl_fleet_key(char *buf, const char *prefix, const char *what, const char *tail);

/* A grant as the store holds it (id comes from the key's create revision). */
struct ctl_fleet_grant {
	struct ctl_grant g;
	char origin[POL_FLEET_WORD_MAX + 1];	/* the host namegatectl ran on */
	int64_t put_ms;			/* when namegatectl put it, its clock, ms */
};

/* A malloc'ed JSON text of fg (its id is not written). NULL when out of memory. */
char *ctl_fleet_grant_encode(const struct ctl_fleet_grant *fg);

/*
 * A grant record's value (len bytes) into *out with out->g.id = id: every field present
 * and well formed (the host a pattern, the reason as grants take it, expires after
 * created). The VM is not checked against a configuration. 0, or -EINVAL with why.
 */
int ctl_fleet_grant_decode(const char *val, size_t len, uint64_t id,
    struct ctl_fleet_grant *out, char *why, size_t whylen);

/* A revocation's value; user may be "" (unknown), uid -1. Malloc'ed, NULL on ENOMEM. */
char *ctl_fleet_revoked_encode(uint64_t id, const char *user, int64_t uid,
    const char *gateway, int64_t at);

/* P/revoked/ID's ID (tail, tail_len bytes) as a grant id: 0, or -EINVAL. */
int ctl_fleet_id_parse(const char *tail, size_t len, uint64_t *id);

/* A bundle record: both texts copied out (malloc'ed, NUL-terminated past their length). */
struct ctl_fleet_bundle {
	char *policy;
	size_t policy_len;
	char *minisig;
	size_t minisig_len;
	int64_t put_ms;
};

char *ctl_fleet_bundle_encode(const char *policy, size_t plen, const char *sig, size_t slen,
    int64_t put_ms);
int ctl_fleet_bundle_decode(const char *val, size_t len, struct ctl_fleet_bundle *out,
    char *why, size_t whylen);
void ctl_fleet_bundle_clear(struct ctl_fleet_bundle *b);

/* A gateway's status. */
struct ctl_fleet_status {
	char gateway[POL_FLEET_WORD_MAX + 1];
	char fleet[POL_FLEET_WORD_MAX + 1];
	char shard[POL_FLEET_WORD_MAX + 1];
	uint64_t serial;		/* the running bundle's; 0: its own file */
	char digest[CTL_FLEET_DIGEST_LEN + 1];	/* SHA-256 of the running policy's text */
	const char *source;		/* "bundle", "cache" (started from it), "file" */
	bool have_refused;		/* the last bundle judged was refused: */
	uint64_t refused_serial;	/* its serial, 0 when unreadable */
	char refused_reason[CTL_FLEET_WHY_MAX];
	bool connected;
	uint32_t grants;
	int64_t seen;			/* UTC seconds of the write */
};

char *ctl_fleet_status_encode(const struct ctl_fleet_status *s);

/* A request waiting for approval on a gateway. */
struct ctl_fleet_pending {
	char gateway[POL_FLEET_WORD_MAX + 1];
	uint64_t id;
	char vm[POL_VM_NAME_MAX + 1];
	char name[POL_NAME_MAX + 1];
	uint16_t qtype;
	int64_t first_seen, expires;
};

char *ctl_fleet_pending_encode(const struct ctl_fleet_pending *p);
int ctl_fleet_pending_decode(const char *val, size_t len, struct ctl_fleet_pending *out,
    char *why, size_t whylen);

/* A decision's value; only "deny" is one. */
char *ctl_fleet_decision_encode(const char *verdict, const char *name, const char *user,
    int64_t uid, int64_t at);
int ctl_fleet_decision_decode(const char *val, size_t len, char *name, size_t namelen,
    char *user, size_t userlen, int64_t *uid, char *why, size_t whylen);

/* "GATEWAY/ID" (len bytes) into gw (gwlen) and *id: 0, or -EINVAL. */
int ctl_fleet_gw_id_parse(const char *tail, size_t len, char *gw, size_t gwlen, uint64_t *id);

/* SHA-256 of len bytes at p into hex (CTL_FLEET_DIGEST_LEN + 1 bytes). */
void ctl_fleet_digest(const void *p, size_t len, char *hex);

#endif /* CTL_FLEET_REC_H */

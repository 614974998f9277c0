/*
 * Signed policy bundles (issue 27): a policy file (namegate's YAML configuration) and its
 * minisign signature, FILE.minisig, as `minisign -Sm FILE -t 'namegate-bundle fleet=F
 * shard=S serial=N not_after=RFC3339'` writes it. The trusted comment is signed too (the
 * global signature), so the fleet, shard, serial and expiry are the signer's word.
 *
 *   minisign.pub:   untrusted comment: ...\n
 *                   base64("Ed" | key id (8) | Ed25519 public key (32))\n
 *   FILE.minisig:   untrusted comment: ...\n
 *                   base64("ED" | key id (8) | sig (64))\n     ED: sig of BLAKE2b-512(FILE)
 *                                                              Ed: sig of FILE (legacy -l)
 *                   trusted comment: COMMENT\n
 *                   base64(global sig (64))\n                  over sig | COMMENT
 *
 * Verified with libsodium. The parsers read attacker bytes: every read is bounded by the
 * buffer given, which need not be NUL-terminated. No DPDK; the judgement is a pure
 * function of its inputs (and the clock it is handed), so it is tested as a table.
 */
#ifndef CTL_BUNDLE_H
#define CTL_BUNDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "policy/load.h"

#define CTL_BUNDLE_KEY_ID_LEN	8
#define CTL_BUNDLE_PK_LEN	32
#define CTL_BUNDLE_SIG_LEN	64
#define CTL_BUNDLE_SIG_FILE_MAX	4096		/* a longer .minisig is not one */
#define CTL_BUNDLE_FILE_MAX	(16u << 20)	/* a policy file past 16 MiB is refused */
#define CTL_BUNDLE_WORD_MAX	POL_FLEET_WORD_MAX	/* fleet=, shard= */
#define CTL_BUNDLE_REASON_MAX	512

/* A trusted public key; key ids are shown as minisign does, the bytes reversed, in hex. */
struct ctl_bundle_key {
	uint8_t id[CTL_BUNDLE_KEY_ID_LEN];
	uint8_t pk[CTL_BUNDLE_PK_LEN];
};

/* A parsed FILE.minisig; comment aliases the buffer parsed. */
struct ctl_bundle_sig {
	bool prehashed;			/* "ED": the signature is of BLAKE2b-512(FILE) */
	uint8_t key_id[CTL_BUNDLE_KEY_ID_LEN];
	uint8_t sig[CTL_BUNDLE_SIG_LEN];
	const char *comment;		/* the trusted comment, without prefix and newline */
	size_t comment_len;
	uint8_t global_sig[CTL_BUNDLE_SIG_LEN];
};

/* The trusted comment's fields. */
struct ctl_bundle_meta {
	char fleet[CTL_BUNDLE_WORD_MAX + 1];
	char shard[CTL_BUNDLE_WORD_MAX + 1];
	uint64_t serial;
	time_t not_after;		/* UTC seconds */
};

/*
 * Parse a public key: a minisign.pub file's bytes, or its bare base64 line (a config
 * value). Returns 0, or -1 with a message in why (whylen bytes).
 */
int ctl_bundle_key_parse(const char *buf, size_t len, struct ctl_bundle_key *out, char *why,
    size_t whylen);

/* Parse a .minisig file's bytes. Returns 0, or -1 with a message in why. */
int ctl_bundle_sig_parse(const char *buf, size_t len, struct ctl_bundle_sig *out, char *why,
    size_t whylen);

/*
 * Parse a trusted comment, "namegate-bundle fleet=F shard=S serial=N not_after=T": each
 * field once, single spaces, F and S as fleet.name allows, N a decimal uint64, T
 * "YYYY-MM-DDTHH:MM:SSZ". Returns 0, or -1 with a message in why.
 */
int ctl_bundle_comment_parse(const char *buf, size_t len, struct ctl_bundle_meta *out,
    char *why, size_t whylen);

/* "2026-12-05T09:00:00Z" into buf (at least 21 bytes). */
void ctl_bundle_time_str(time_t t, char *buf, size_t len);

/* What this gateway accepts: its keys, fleet, shard, the running serial and the time. */
struct ctl_bundle_want {
	const struct ctl_bundle_key *keys;
	size_t nkeys;
	const char *fleet, *shard;
	bool have_running;		/* false: no bundle runs, any serial goes */
	uint64_t running;
	time_t now;
};

/* Why a bundle was refused, in the order the checks run. */
enum ctl_bundle_verdict {
	CTL_BUNDLE_ACCEPTED,
	CTL_BUNDLE_MALFORMED,		/* the .minisig cannot be read */
	CTL_BUNDLE_UNKNOWN_KEY,		/* signed by a key not configured */
	CTL_BUNDLE_BAD_SIGNATURE,	/* the file's signature does not verify */
	CTL_BUNDLE_BAD_COMMENT,		/* the trusted comment's signature does not verify */
	CTL_BUNDLE_BAD_META,		/* the trusted comment is not namegate-bundle's */
	CTL_BUNDLE_WRONG_TARGET,	/* another fleet or shard */
	CTL_BUNDLE_OLD_SERIAL,		/* not above the running serial */
	CTL_BUNDLE_EXPIRED,
	CTL_BUNDLE_BAD_POLICY,		/* the file does not compile */
};

struct ctl_bundle_result {
	enum ctl_bundle_verdict verdict;
	bool have_meta;			/* meta is filled (its signature verified) */
	struct ctl_bundle_meta meta;
	char reason[CTL_BUNDLE_REASON_MAX];	/* "" when accepted */
	struct pol_config *cfg;		/* the compiled policy when asked for and accepted */
};

/*
 * Judge a bundle: file (flen bytes, reported as name in policy errors) and its .minisig
 * bytes (slen). Checks, in order: the signature parses, its key id is one of want->keys,
 * both signatures verify, the trusted comment parses, fleet and shard, serial above the
 * running one, now < not_after, and the file compiles (pol_load_buffer()). With cfgp,
 * an accepted bundle's compiled configuration is left in out->cfg for the caller to
 * free. Returns out->verdict.
 */
enum ctl_bundle_verdict ctl_bundle_judge(const struct ctl_bundle_want *want, const char *file,
    size_t flen, const char *name, const char *sig, size_t slen, bool cfgp,
    struct ctl_bundle_result *out);

/*
 * Only the signatures (neither the target, serial, expiry nor policy): what a cached
 * bundle needs to tell its serial. Returns 0 with *meta filled, or -1 with why.
 */
int ctl_bundle_verify(const struct ctl_bundle_key *keys, size_t nkeys, const char *file,
    size_t flen, const char *sig, size_t slen, struct ctl_bundle_meta *meta, char *why,
    size_t whylen);

/*
 * fleet.bundle_keys into keys (cfg->nfleet_bundle_keys of them; POL_FLEET_KEYS_MAX is
 * enough): each a base64 key line, else the path of a minisign.pub. Returns 0, or -1 with
 * "fleet.bundle_keys[I]: ..." in why.
 */
int ctl_bundle_keys_load(const struct pol_config *cfg, struct ctl_bundle_key *keys, char *why,
    size_t whylen);

/*
 * Read path (at most max bytes) into a malloc'ed buffer. Returns 0, or -errno (-EFBIG when
 * larger than max).
 */
int ctl_bundle_read(const char *path, size_t max, char **buf, size_t *len);

/*
 * The serial of the cached bundle (cfg->fleet_cache and its .minisig) if it exists and
 * its signatures verify with keys. Returns 1 with *serial, 0 when there is none, or -1
 * with why (a cache that is there but does not verify).
 */
int ctl_bundle_cache_serial(const struct pol_config *cfg, const struct ctl_bundle_key *keys,
    size_t nkeys, uint64_t *serial, char *why, size_t whylen);

/*
 * namegate --check --bundle FILE: judge FILE and FILE.minisig against cfg's fleet, keys
 * and cache, at now. Prints "accepted: ..." or "refused: REASON" to out. Returns 0 when
 * it would be accepted, 1 otherwise.
 */
int ctl_bundle_check_file(const struct pol_config *cfg, const char *path, time_t now,
    FILE *out);

#endif /* CTL_BUNDLE_H */

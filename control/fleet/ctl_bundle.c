/*
 * Judging a bundle: its signatures with libsodium, then what the signer said (fleet, shard,
 * serial, expiry) against what this gateway wants, then whether the policy compiles. A
 * pure function of its inputs: the daemon, the store watcher and --check share it.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <sodium/core.h>
#include <sodium/crypto_generichash.h>
#include <sodium/crypto_sign.h>

#include "ctl_bundle.h"

static void cb_reason(struct ctl_bundle_result *out, enum ctl_bundle_verdict v,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void
cb_reason(struct ctl_bundle_result *out, enum ctl_bundle_verdict v, const char *fmt, ...)
{
	va_list ap;

	out->verdict = v;
	va_start(ap, fmt);
	vsnprintf(out->reason, sizeof(out->reason), fmt, ap);
	va_end(ap);
}

/* As minisign shows a key id: the little-endian number in upper-case hex. */
static void
cb_key_id_str(const uint8_t *id, char *buf, size_t len)
{
	size_t o = 0;

	for (size_t i = CTL_BUNDLE_KEY_ID_LEN; i-- > 0 && o + 3 <= len;)
		o += (size_t)snprintf(buf + o, len - o, "%02X", id[i]);
}

/*
 * The file's signature ("ED": of its BLAKE2b-512, "Ed": of the file itself), then the
 * global one over sig | trusted comment. Returns CTL_BUNDLE_ACCEPTED or what failed.
 */
static enum ctl_bundle_verdict
cb_verify_with(const struct ctl_bundle_key *key, const struct ctl_bundle_sig *sig,
    const char *file, size_t flen)
{
	uint8_t hash[crypto_generichash_BYTES_MAX];
	uint8_t signed_comment[CTL_BUNDLE_SIG_LEN + CTL_BUNDLE_SIG_FILE_MAX];
	int rc;

	if (sig->prehashed) {
		if (crypto_generichash(hash, sizeof(hash), (const uint8_t *)file, flen, NULL,
		    0) != 0)
			return CTL_BUNDLE_BAD_SIGNATURE;
		rc = crypto_sign_verify_detached(sig->sig, hash, sizeof(hash), key->pk);
	} else {
		rc = crypto_sign_verify_detached(sig->sig, (const uint8_t *)file, flen, key->pk);
	}
	if (rc != 0)
		return CTL_BUNDLE_BAD_SIGNATURE;
	if (sig->comment_len > CTL_BUNDLE_SIG_FILE_MAX)	/* the parser's bound already */
		return CTL_BUNDLE_BAD_COMMENT;
	memcpy(signed_comment, sig->sig, CTL_BUNDLE_SIG_LEN);
	memcpy(signed_comment + CTL_BUNDLE_SIG_LEN, sig->comment, sig->comment_len);
	if (crypto_sign_verify_detached(sig->global_sig, signed_comment,
	    CTL_BUNDLE_SIG_LEN + sig->comment_len, key->pk) != 0)
		return CTL_BUNDLE_BAD_COMMENT;
	return CTL_BUNDLE_ACCEPTED;
}

/* The signature checks and the comment's parse, with their reasons. */
static enum ctl_bundle_verdict
cb_signed_meta(const struct ctl_bundle_key *keys, size_t nkeys, const char *file, size_t flen,
    const char *sigbuf, size_t slen, struct ctl_bundle_result *out)
{
	enum ctl_bundle_verdict v = CTL_BUNDLE_UNKNOWN_KEY;
	struct ctl_bundle_sig sig;
	char why[160], id[2 * CTL_BUNDLE_KEY_ID_LEN + 1];

	if (sodium_init() < 0) {
		cb_reason(out, CTL_BUNDLE_BAD_SIGNATURE, "libsodium did not start");
		return out->verdict;
	}
	if (ctl_bundle_sig_parse(sigbuf, slen, &sig, why, sizeof(why)) != 0) {
		cb_reason(out, CTL_BUNDLE_MALFORMED, "signature file: %s", why);
		return out->verdict;
	}
	/* two keys may share an id by chance: any of them that verifies will do */
	for (size_t i = 0; i < nkeys && v != CTL_BUNDLE_ACCEPTED; i++) {
		enum ctl_bundle_verdict k;

		if (memcmp(keys[i].id, sig.key_id, CTL_BUNDLE_KEY_ID_LEN) != 0)
			continue;
		k = cb_verify_with(&keys[i], &sig, file, flen);
		if (v == CTL_BUNDLE_UNKNOWN_KEY || k == CTL_BUNDLE_ACCEPTED)
			v = k;
	}
	cb_key_id_str(sig.key_id, id, sizeof(id));
	switch (v) {
	case CTL_BUNDLE_UNKNOWN_KEY:
		cb_reason(out, v, "signed by key ID %s, which is not in fleet.bundle_keys", id);
		return v;
	case CTL_BUNDLE_BAD_SIGNATURE:
		cb_reason(out, v, "signature does not verify (key ID %s)", id);
		return v;
	case CTL_BUNDLE_BAD_COMMENT:
		cb_reason(out, v, "trusted comment's signature does not verify (key ID %s)", id);
		return v;
	default:
		break;
	}
	if (ctl_bundle_comment_parse(sig.comment, sig.comment_len, &out->meta, why,
	    sizeof(why)) != 0) {
		cb_reason(out, CTL_BUNDLE_BAD_META, "trusted comment: %s", why);
		return out->verdict;
	}
	out->have_meta = true;
	return CTL_BUNDLE_ACCEPTED;
}

int
ctl_bundle_verify(const struct ctl_bundle_key *keys, size_t nkeys, const char *file,
    size_t flen, const char *sig, size_t slen, struct ctl_bundle_meta *meta, char *why,
    size_t whylen)
{
	struct ctl_bundle_result r = { 0 };

	if (cb_signed_meta(keys, nkeys, file, flen, sig, slen, &r) != CTL_BUNDLE_ACCEPTED) {
		snprintf(why, whylen, "%s", r.reason);
		return -1;
	}
	*meta = r.meta;
	return 0;
}

/* "policy: FILE:LINE:COL: msg", the first of the loader's errors. */
static void
cb_policy_reason(struct ctl_bundle_result *out, const struct pol_errs *errs)
{
	if (errs->n == 0) {
		cb_reason(out, CTL_BUNDLE_BAD_POLICY, "policy: out of memory");
		return;
	}
	cb_reason(out, CTL_BUNDLE_BAD_POLICY, "policy: %s:%u:%u: %s%s", errs->v[0].file,
	    errs->v[0].line, errs->v[0].col, errs->v[0].msg,
	    errs->n + errs->dropped > 1 ? " (and more errors)" : "");
}

enum ctl_bundle_verdict
ctl_bundle_judge(const struct ctl_bundle_want *want, const char *file, size_t flen,
    const char *name, const char *sig, size_t slen, bool cfgp, struct ctl_bundle_result *out)
{
	const struct ctl_bundle_meta *m = &out->meta;
	struct pol_errs errs = { 0 };
	struct pol_config *cfg;
	char when[32];

	memset(out, 0, sizeof(*out));
	if (cb_signed_meta(want->keys, want->nkeys, file, flen, sig, slen, out) !=
	    CTL_BUNDLE_ACCEPTED)
		return out->verdict;
	if (want->fleet == NULL || want->shard == NULL) {
		cb_reason(out, CTL_BUNDLE_WRONG_TARGET, "for fleet %s shard %s, and this gateway "
		    "is in no fleet", m->fleet, m->shard);
		return out->verdict;
	}
	if (strcmp(m->fleet, want->fleet) != 0 || strcmp(m->shard, want->shard) != 0) {
		cb_reason(out, CTL_BUNDLE_WRONG_TARGET, "for fleet %s shard %s, not fleet %s "
		    "shard %s", m->fleet, m->shard, want->fleet, want->shard);
		return out->verdict;
	}
	if (want->have_running && m->serial <= want->running) {
		cb_reason(out, CTL_BUNDLE_OLD_SERIAL, "serial %llu is not above the running %llu",
		    (unsigned long long)m->serial, (unsigned long long)want->running);
		return out->verdict;
	}
	if (want->now >= m->not_after) {
		ctl_bundle_time_str(m->not_after, when, sizeof(when));
		cb_reason(out, CTL_BUNDLE_EXPIRED, "expired at %s", when);
		return out->verdict;
	}
	if ((cfg = pol_load_buffer(file, flen, name, &errs)) == NULL) {
		cb_policy_reason(out, &errs);
		pol_errs_free(&errs);
		return out->verdict;
	}
	pol_errs_free(&errs);
	if (cfgp)
		out->cfg = cfg;
	else
		pol_config_free(cfg);
	out->verdict = CTL_BUNDLE_ACCEPTED;
	return out->verdict;
}

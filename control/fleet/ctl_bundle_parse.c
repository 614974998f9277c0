/*
 * The bundle's three wire formats (ctl_bundle.h draws them): a public key, a .minisig and
 * the trusted comment. Attacker bytes: each read goes through a cursor bounded by the
 * buffer given; lines are split off it, never searched for past its end.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <sodium/utils.h>

#include "ctl_bundle.h"

#define CB_UNTRUSTED	"untrusted comment: "
#define CB_TRUSTED	"trusted comment: "
#define CB_MAGIC	"namegate-bundle"
#define CB_TIME_LEN	20		/* YYYY-MM-DDTHH:MM:SSZ */

struct cb_rd {
	const char *p;
	size_t len;		/* bytes left */
};

static int cb_fail(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
cb_fail(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return -1;
}

/*
 * Split off one line, without its "\n" (and a "\r" before it, as minisign writes none but
 * an editor may). The last line may lack its newline. False when nothing is left.
 */
static bool
cb_line(struct cb_rd *r, struct cb_rd *line)
{
	const char *nl;
	size_t n;

	if (r->len == 0)
		return false;
	nl = memchr(r->p, '\n', r->len);
	n = nl != NULL ? (size_t)(nl - r->p) : r->len;
	*line = (struct cb_rd){ .p = r->p, .len = n };
	if (line->len > 0 && line->p[line->len - 1] == '\r')
		line->len--;
	r->p += nl != NULL ? n + 1 : n;
	r->len -= nl != NULL ? n + 1 : n;
	return true;
}

/* Skip prefix at the front of r; false (r unchanged) when it is not there. */
static bool
cb_prefix(struct cb_rd *r, const char *prefix)
{
	size_t n = strlen(prefix);

	if (r->len < n || memcmp(r->p, prefix, n) != 0)
		return false;
	r->p += n;
	r->len -= n;
	return true;
}

/* Decode a whole base64 line (padded, the standard alphabet) of exactly want bytes. */
static bool
cb_b64(const struct cb_rd *line, uint8_t *out, size_t want)
{
	size_t n = 0;

	return line->len > 0 &&
	    sodium_base642bin(out, want, line->p, line->len, NULL, &n, NULL,
	    sodium_base64_VARIANT_ORIGINAL) == 0 && n == want;
}

/* Nothing but empty lines may follow the last one. */
static bool
cb_rest_empty(struct cb_rd *r)
{
	struct cb_rd line;

	while (cb_line(r, &line))
		if (line.len != 0)
			return false;
	return true;
}

int
ctl_bundle_key_parse(const char *buf, size_t len, struct ctl_bundle_key *out, char *why,
    size_t whylen)
{
	uint8_t raw[2 + CTL_BUNDLE_KEY_ID_LEN + CTL_BUNDLE_PK_LEN];
	struct cb_rd r = { .p = buf, .len = len }, line;

	if (len > CTL_BUNDLE_SIG_FILE_MAX)
		return cb_fail(why, whylen, "%zu bytes, not a public key", len);
	if (!cb_line(&r, &line))
		return cb_fail(why, whylen, "empty");
	if (cb_prefix(&line, CB_UNTRUSTED) && !cb_line(&r, &line))
		return cb_fail(why, whylen, "no key after the untrusted comment");
	if (!cb_b64(&line, raw, sizeof(raw)))
		return cb_fail(why, whylen, "not the base64 of a minisign public key");
	if (memcmp(raw, "Ed", 2) != 0)
		return cb_fail(why, whylen, "not an Ed25519 key");
	if (!cb_rest_empty(&r))
		return cb_fail(why, whylen, "more after the key");
	memcpy(out->id, raw + 2, sizeof(out->id));
	memcpy(out->pk, raw + 2 + sizeof(out->id), sizeof(out->pk));
	return 0;
}

int
ctl_bundle_sig_parse(const char *buf, size_t len, struct ctl_bundle_sig *out, char *why,
    size_t whylen)
{
	uint8_t raw[2 + CTL_BUNDLE_KEY_ID_LEN + CTL_BUNDLE_SIG_LEN];
	struct cb_rd r = { .p = buf, .len = len }, line;

	memset(out, 0, sizeof(*out));
	if (len > CTL_BUNDLE_SIG_FILE_MAX)
		return cb_fail(why, whylen, "%zu bytes, more than a signature has (%d)", len,
		    CTL_BUNDLE_SIG_FILE_MAX);
	if (!cb_line(&r, &line) || !cb_prefix(&line, CB_UNTRUSTED))
		return cb_fail(why, whylen, "no untrusted comment line");
	if (!cb_line(&r, &line) || !cb_b64(&line, raw, sizeof(raw)))
		return cb_fail(why, whylen, "line 2 is not the base64 of a signature");
	if (memcmp(raw, "ED", 2) == 0)
		out->prehashed = true;
	else if (memcmp(raw, "Ed", 2) != 0)
		return cb_fail(why, whylen, "unknown signature algorithm");
	memcpy(out->key_id, raw + 2, sizeof(out->key_id));
	memcpy(out->sig, raw + 2 + sizeof(out->key_id), sizeof(out->sig));
	if (!cb_line(&r, &line) || !cb_prefix(&line, CB_TRUSTED))
		return cb_fail(why, whylen, "no trusted comment line");
	out->comment = line.p;
	out->comment_len = line.len;
	if (!cb_line(&r, &line) || !cb_b64(&line, out->global_sig, sizeof(out->global_sig)))
		return cb_fail(why, whylen, "line 4 is not the base64 of a global signature");
	if (!cb_rest_empty(&r))
		return cb_fail(why, whylen, "more after the global signature");
	return 0;
}

/* n decimal digits at p into *v; false when one is not a digit. */
static bool
cb_digits(const char *p, size_t n, int *v)
{
	*v = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return false;
		*v = *v * 10 + (p[i] - '0');
	}
	return true;
}

static int
cb_days_in(int year, int mon)
{
	static const int days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;

	return days[mon - 1] + (mon == 2 && leap ? 1 : 0);
}

/*
 * RFC 3339 in UTC as one spelling, "YYYY-MM-DDTHH:MM:SSZ": no offsets, fractions or
 * leap seconds, so a comment's time means one thing to every reader.
 */
static bool
cb_time(const struct cb_rd *v, time_t *out)
{
	const char *p = v->p;
	struct tm tm = { 0 };
	int y, mo, d, h, mi, s;

	if (v->len != CB_TIME_LEN || p[4] != '-' || p[7] != '-' || p[10] != 'T' ||
	    p[13] != ':' || p[16] != ':' || p[19] != 'Z')
		return false;
	if (!cb_digits(p, 4, &y) || !cb_digits(p + 5, 2, &mo) || !cb_digits(p + 8, 2, &d) ||
	    !cb_digits(p + 11, 2, &h) || !cb_digits(p + 14, 2, &mi) ||
	    !cb_digits(p + 17, 2, &s))
		return false;
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > cb_days_in(y, mo) || h > 23 ||
	    mi > 59 || s > 59)
		return false;
	tm = (struct tm){ .tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h,
		.tm_min = mi, .tm_sec = s };
	*out = timegm(&tm);
	return *out != (time_t)-1;
}

static bool
cb_serial(const struct cb_rd *v, uint64_t *out)
{
	*out = 0;
	if (v->len == 0 || v->len > 20)
		return false;
	for (size_t i = 0; i < v->len; i++) {
		unsigned int dgt = (unsigned char)v->p[i] - '0';

		if (dgt > 9 || *out > (UINT64_MAX - dgt) / 10)
			return false;
		*out = *out * 10 + dgt;
	}
	return true;
}

static bool
cb_word(const struct cb_rd *v, char *out)
{
	if (!pol_fleet_word_ok(v->p, v->len))
		return false;
	memcpy(out, v->p, v->len);
	out[v->len] = '\0';
	return true;
}

/*
 * "namegate-bundle" { " " key "=" value }: the fields in any order, each exactly once,
 * nothing else. A value runs to the next space.
 */
int
ctl_bundle_comment_parse(const char *buf, size_t len, struct ctl_bundle_meta *out,
    char *why, size_t whylen)
{
	static const char *const keys[] = { "fleet", "shard", "serial", "not_after" };
	struct cb_rd r = { .p = buf, .len = len };
	unsigned int seen = 0;

	memset(out, 0, sizeof(*out));
	if (!cb_prefix(&r, CB_MAGIC) || (r.len > 0 && r.p[0] != ' '))
		return cb_fail(why, whylen, "not a namegate-bundle comment");
	while (r.len > 0) {
		struct cb_rd key, val;
		const char *eq, *sp;
		size_t k;

		if (!cb_prefix(&r, " ") || r.len == 0 || r.p[0] == ' ')
			return cb_fail(why, whylen, "fields are separated by one space");
		sp = memchr(r.p, ' ', r.len);
		val.len = sp != NULL ? (size_t)(sp - r.p) : r.len;
		if ((eq = memchr(r.p, '=', val.len)) == NULL)
			return cb_fail(why, whylen, "a field without '='");
		key = (struct cb_rd){ .p = r.p, .len = (size_t)(eq - r.p) };
		val = (struct cb_rd){ .p = eq + 1, .len = val.len - key.len - 1 };
		r.p += key.len + 1 + val.len;
		r.len -= key.len + 1 + val.len;
		for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			if (key.len == strlen(keys[k]) && memcmp(key.p, keys[k], key.len) == 0)
				break;
		if (k == sizeof(keys) / sizeof(keys[0]))
			return cb_fail(why, whylen, "unknown field \"%.*s\"",
			    (int)(key.len > 32 ? 32 : key.len), key.p);
		if (seen & (1u << k))
			return cb_fail(why, whylen, "%s given twice", keys[k]);
		seen |= 1u << k;
		if ((k == 0 && !cb_word(&val, out->fleet)) ||
		    (k == 1 && !cb_word(&val, out->shard)))
			return cb_fail(why, whylen, "%s is not a name (letters, digits, '.', '_', "
			    "'-', 1 to %d)", keys[k], CTL_BUNDLE_WORD_MAX);
		if (k == 2 && !cb_serial(&val, &out->serial))
			return cb_fail(why, whylen, "serial is not a decimal number below 2^64");
		if (k == 3 && !cb_time(&val, &out->not_after))
			return cb_fail(why, whylen, "not_after is not a UTC time "
			    "YYYY-MM-DDTHH:MM:SSZ");
	}
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		if (!(seen & (1u << k)))
			return cb_fail(why, whylen, "no %s", keys[k]);
	return 0;
}

void
ctl_bundle_time_str(time_t t, char *buf, size_t len)
{
	struct tm tm;

	if (gmtime_r(&t, &tm) == NULL || strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(buf, len, "@%lld", (long long)t);
}

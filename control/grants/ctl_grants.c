/*
 * The grant table: validation of what an operator asks for, and the grants' lifetimes.
 * A grant is small and there are few (CTL_GRANTS_MAX), so they sit in one array in the
 * order made; lookups are linear, and only ever run on the control loop.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl_grants_int.h"

struct ctl_grants *
ctl_grants_new(const char *path)
{
	struct ctl_grants *g = calloc(1, sizeof(*g));

	if (g == NULL)
		return NULL;
	if ((g->path = strdup(path)) == NULL) {
		free(g);
		return NULL;
	}
	g->next_id = 1;
	return g;
}

void
ctl_grants_free(struct ctl_grants *g)
{
	if (g == NULL)
		return;
	free(g->v);
	free(g->tombs);
	free(g->path);
	free(g);
}

const char *
ctl_grants_path(const struct ctl_grants *g)
{
	return g->path;
}

size_t
ctl_grants_count(const struct ctl_grants *g)
{
	return g->n;
}

const struct ctl_grant *
ctl_grants_at(const struct ctl_grants *g, size_t i)
{
	return i < g->n ? &g->v[i] : NULL;
}

size_t
ctl_grants_count_vm(const struct ctl_grants *g, const char *vm)
{
	size_t n = 0;

	for (size_t i = 0; i < g->n; i++)
		n += strcmp(g->v[i].vm, vm) == 0;
	return n;
}

int64_t
ctl_grants_next_expiry(const struct ctl_grants *g)
{
	int64_t t = INT64_MAX;

	for (size_t i = 0; i < g->n; i++)
		if (g->v[i].expires < t)
			t = g->v[i].expires;
	return t;
}

void
ctl_grant_time(int64_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (gmtime_r(&tt, &tm) == NULL)
		memset(&tm, 0, sizeof(tm));
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
	    tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

int
ctl_duration_parse(const char *text, uint32_t *secs, char *why, size_t whylen)
{
	static const char units[] = "dhms";
	static const uint32_t scale[] = { 86400, 3600, 60, 1 };
	const char *p = text;
	uint64_t total = 0;
	int next_unit = 0;	/* units come in the order d h m s, each once */

	if (*p == '\0') {
		snprintf(why, whylen, "empty duration (say 90s, 30m, 2h or 1d)");
		return -EINVAL;
	}
	while (*p != '\0') {
		uint64_t v = 0;
		const char *digits = p, *u;

		while (*p >= '0' && *p <= '9') {
			v = v * 10 + (uint64_t)(*p - '0');
			if (v > CTL_GRANT_SECONDS_MAX) {
				snprintf(why, whylen, "duration \"%.32s\" is longer than 30d", text);
				return -ERANGE;
			}
			p++;
		}
		if (p == digits) {
			snprintf(why, whylen, "bad duration \"%.32s\" (say 90s, 30m, 2h, 1d or "
			    "1h30m)", text);
			return -EINVAL;
		}
		if (*p == '\0' && digits == text) {
			total = v;		/* plain seconds */
			break;
		}
		if (*p == '\0' || (u = strchr(units, *p)) == NULL || u - units < next_unit) {
			snprintf(why, whylen, "bad duration \"%.32s\" (units d, h, m, s, largest "
			    "first, each once)", text);
			return -EINVAL;
		}
		next_unit = (int)(u - units) + 1;
		total += v * scale[u - units];
		if (total > CTL_GRANT_SECONDS_MAX) {
			snprintf(why, whylen, "duration \"%.32s\" is longer than 30d", text);
			return -ERANGE;
		}
		p++;
	}
	if (total == 0) {
		snprintf(why, whylen, "duration \"%.32s\" is zero", text);
		return -ERANGE;
	}
	*secs = (uint32_t)total;
	return 0;
}

/*
 * RFC 3629 UTF-8 without C0 or C1 controls or DEL: a reason is shown in terminals and
 * written into the event log and the state file, so it must be one line of plain text.
 */
static bool
ctl_reason_ok(const unsigned char *s)
{
	while (*s != '\0') {
		unsigned int c = *s, n, cp;

		if (c < 0x80) {
			if (c < 0x20 || c == 0x7f)
				return false;
			s++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			n = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			n = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			n = 3;
			cp = c & 0x07;
		} else {
			return false;
		}
		for (unsigned int i = 1; i <= n; i++) {
			if ((s[i] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i] & 0x3f);
		}
		/* overlong forms, surrogates, past U+10FFFF, and the C1 controls */
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp <= 0x9f))
			return false;
		s += n + 1;
	}
	return true;
}

int
ctl_grant_check(const struct ctl_grant *gr, const struct pol_config *cfg, char *why,
    size_t whylen)
{
	struct pol_pattern p;
	char pwhy[POL_WHY_MAX];

	if (cfg != NULL && pol_config_vm(cfg, gr->vm) == NULL) {
		snprintf(why, whylen, "unknown VM '%s'", gr->vm);
		return -EINVAL;
	}
	if (pol_pattern_parse(gr->host, &p, pwhy, sizeof(pwhy)) < 0) {
		snprintf(why, whylen, "bad host pattern \"%s\": %s", gr->host, pwhy);
		return -EINVAL;
	}
	if (!ctl_reason_ok((const unsigned char *)gr->reason)) {
		snprintf(why, whylen, "the reason must be one line of UTF-8 text without control "
		    "characters");
		return -EINVAL;
	}
	return 0;
}

/* Copies src (NUL-terminated) into dst[cap]; false when it does not fit. */
static bool
ctl_copy(char *dst, size_t cap, const char *src)
{
	size_t n = strlen(src);

	if (n >= cap)
		return false;
	memcpy(dst, src, n + 1);
	return true;
}

int
ctl_grants_put(struct ctl_grants *g, const struct ctl_grant *gr)
{
	if (g->n >= CTL_GRANTS_MAX)
		return -ENOSPC;
	if (g->n == g->cap) {
		size_t cap = g->cap ? 2 * g->cap : 16;
		struct ctl_grant *v = realloc(g->v, cap * sizeof(*v));

		if (v == NULL)
			return -ENOMEM;
		g->v = v;
		g->cap = cap;
	}
	g->v[g->n++] = *gr;
	if (gr->id >= g->next_id)
		g->next_id = gr->id + 1;
	return 0;
}

int
ctl_grants_add(struct ctl_grants *g, const struct pol_config *cfg, const char *vm,
    const char *host, const char *dur, const char *reason, int64_t now, struct ctl_grant *out,
    char *why, size_t whylen)
{
	struct ctl_grant gr = { .created = now, .uid = -1 };
	char pwhy[POL_WHY_MAX];
	uint32_t secs;
	int rc;

	if (!ctl_copy(gr.vm, sizeof(gr.vm), vm)) {
		snprintf(why, whylen, "unknown VM '%.40s...'", vm);
		return -EINVAL;
	}
	if (!ctl_copy(gr.host, sizeof(gr.host), host)) {
		snprintf(why, whylen, "bad host pattern: longer than %u bytes", CTL_GRANT_HOST_MAX);
		return -EINVAL;
	}
	if (reason != NULL && !ctl_copy(gr.reason, sizeof(gr.reason), reason)) {
		snprintf(why, whylen, "the reason is longer than %u bytes", CTL_GRANT_REASON_MAX);
		return -EINVAL;
	}
	if ((rc = ctl_grant_check(&gr, cfg, why, whylen)) < 0)
		return rc;
	if ((rc = ctl_duration_parse(dur, &secs, why, whylen)) < 0)
		return rc;
	pol_pattern_parse(gr.host, &gr.pattern, pwhy, sizeof(pwhy));	/* checked above */
	gr.expires = now + secs;
	gr.id = g->next_id;
	if ((rc = ctl_grants_put(g, &gr)) < 0) {
		snprintf(why, whylen, rc == -ENOSPC ? "%u grants are live already: revoke one "
		    "first" : "out of memory", CTL_GRANTS_MAX);
		return rc;
	}
	*out = gr;
	return 0;
}

int
ctl_grants_set_maker(struct ctl_grants *g, uint64_t id, uint32_t uid, const char *user,
    struct ctl_grant *out)
{
	for (size_t i = 0; i < g->n; i++) {
		if (g->v[i].id != id)
			continue;
		g->v[i].uid = uid;
		snprintf(g->v[i].user, sizeof(g->v[i].user), "%s", user);
		if (out != NULL)
			*out = g->v[i];
		return 0;
	}
	return -ENOENT;
}

/* Removes grant i, keeping the others in the order made. */
static void
ctl_grants_remove(struct ctl_grants *g, size_t i)
{
	memmove(&g->v[i], &g->v[i + 1], (g->n - i - 1) * sizeof(g->v[0]));
	g->n--;
}

int
ctl_grants_revoke(struct ctl_grants *g, uint64_t id, struct ctl_grant *out)
{
	for (size_t i = 0; i < g->n; i++) {
		if (g->v[i].id != id)
			continue;
		if (out != NULL)
			*out = g->v[i];
		ctl_grants_remove(g, i);
		return 0;
	}
	return -ENOENT;
}

/* Ends every grant ends(g, arg) says is over, calling fn first; how many. */
static size_t
ctl_grants_end_if(struct ctl_grants *g, bool (*ends)(const struct ctl_grant *, const void *),
    const void *what, ctl_grant_fn *fn, void *arg)
{
	size_t n = 0;

	for (size_t i = g->n; i-- > 0; ) {
		if (!ends(&g->v[i], what))
			continue;
		if (fn != NULL)
			fn(&g->v[i], arg);
		ctl_grants_remove(g, i);
		n++;
	}
	return n;
}

static bool
ctl_grant_over(const struct ctl_grant *gr, const void *now)
{
	return gr->expires <= *(const int64_t *)now;
}

static bool
ctl_grant_orphan(const struct ctl_grant *gr, const void *cfg)
{
	return pol_config_vm(cfg, gr->vm) == NULL;
}

size_t
ctl_grants_expire(struct ctl_grants *g, int64_t now, ctl_grant_fn *fn, void *arg)
{
	return ctl_grants_end_if(g, ctl_grant_over, &now, fn, arg);
}

size_t
ctl_grants_drop_unknown(struct ctl_grants *g, const struct pol_config *cfg, ctl_grant_fn *fn,
    void *arg)
{
	return ctl_grants_end_if(g, ctl_grant_orphan, cfg, fn, arg);
}

/*
 * keepalived's notify FIFO lines (ctl_ha.h). keepalived.conf(5), vrrp_notify_fifo:
 *
 *   INSTANCE "VI_1" MASTER 100\n        GROUP "VG_1" BACKUP\n
 *
 * A word, a space, a double-quoted name, a space, a state word, then what keepalived
 * adds (the priority). Only INSTANCE lines carry an instance's role; a sync group's lines
 * are left to its instances', which keepalived writes too.
 */
#include <string.h>

#include "ctl_ha.h"

static const char *const ctl_ha_names[CTL_HA_ROLE_MAX] = {
#define X(id, name) [CTL_HA_##id] = name,
	CTL_HA_ROLES(X)
#undef X
};

/* The states that are roles; STARTING is namegate's own, never keepalived's. */
static const struct {
	const char *word;
	enum ctl_ha_role role;
} ctl_ha_states[] = {
	{ "MASTER", CTL_HA_MASTER },
	{ "BACKUP", CTL_HA_BACKUP },
	{ "FAULT", CTL_HA_FAULT },
	{ "STOP", CTL_HA_STOP },
};

const char *
ctl_ha_role_name(enum ctl_ha_role r)
{
	return (unsigned int)r < CTL_HA_ROLE_MAX ? ctl_ha_names[r] : "?";
}

/* A cursor over the line: len bytes left at p. */
struct ctl_ha_rd {
	const char *p;
	size_t len;
};

/* The run of bytes up to the next space or the end, split off; false when empty. */
static bool
ctl_ha_word(struct ctl_ha_rd *r, const char **w, size_t *wlen)
{
	size_t n = 0;

	while (n < r->len && r->p[n] != ' ')
		n++;
	if (n == 0)
		return false;
	*w = r->p;
	*wlen = n;
	r->p += n;
	r->len -= n;
	return true;
}

static bool
ctl_ha_byte(struct ctl_ha_rd *r, char c)
{
	if (r->len == 0 || r->p[0] != c)
		return false;
	r->p++;
	r->len--;
	return true;
}

static bool
ctl_ha_is(const char *w, size_t wlen, const char *lit)
{
	return wlen == strlen(lit) && memcmp(w, lit, wlen) == 0;
}

enum ctl_ha_line
ctl_ha_line_parse(const char *buf, size_t len, const char *instance, enum ctl_ha_role *role)
{
	struct ctl_ha_rd r = { .p = buf, .len = len };
	const char *type, *name, *state;
	size_t tlen, nlen = 0, slen;

	if (len > 0 && buf[len - 1] == '\r')
		r.len--;
	if (!ctl_ha_word(&r, &type, &tlen) || !ctl_ha_byte(&r, ' ') || !ctl_ha_byte(&r, '"'))
		return CTL_HA_LINE_MALFORMED;
	name = r.p;
	while (nlen < r.len && r.p[nlen] != '"')
		nlen++;
	if (nlen == r.len)			/* no closing quote */
		return CTL_HA_LINE_MALFORMED;
	r.p += nlen + 1;
	r.len -= nlen + 1;
	if (!ctl_ha_byte(&r, ' ') || !ctl_ha_word(&r, &state, &slen))
		return CTL_HA_LINE_MALFORMED;
	if (!ctl_ha_is(type, tlen, "INSTANCE"))
		return CTL_HA_LINE_OTHER;
	if (instance != NULL && !(nlen == strlen(instance) && memcmp(name, instance, nlen) == 0))
		return CTL_HA_LINE_OTHER;
	for (size_t i = 0; i < sizeof(ctl_ha_states) / sizeof(ctl_ha_states[0]); i++)
		if (ctl_ha_is(state, slen, ctl_ha_states[i].word)) {
			*role = ctl_ha_states[i].role;
			return CTL_HA_LINE_ROLE;
		}
	return CTL_HA_LINE_OTHER;
}

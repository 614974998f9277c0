/*
 * Host patterns (SPEC s3 table): text -> struct pol_pattern. Names are checked here and
 * canonicalised by ldns (case folding, trailing dot), so the matcher only ever compares
 * canonical bytes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ldns/ldns.h>

#include "policy/load.h"

#define POL_LDH "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_."

static int pol_why(char *why, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
pol_why(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int
pol_port(const char *s, uint16_t *port, char *why, size_t wl)
{
	unsigned long v;

	if (s[0] == '\0')
		return pol_why(why, wl, "empty port after ':'");
	if (strspn(s, "0123456789") != strlen(s))
		return pol_why(why, wl, "port \"%s\" is not a number", s);
	v = strlen(s) > 5 ? 99999 : strtoul(s, NULL, 10);
	if (v < 1 || v > 65535)
		return pol_why(why, wl, "port %s out of range (1..65535)", s);
	*port = (uint16_t)v;
	return 0;
}

/* "addr" or "addr/len" of one family into out; host bits must be clear. */
static int
pol_addr(char *s, bool v6, bool host_only, struct pol_pattern *out, char *why, size_t wl)
{
	unsigned int max = v6 ? 128 : 32, plen = max;
	char *slash = strchr(s, '/');
	char net[INET6_ADDRSTRLEN];
	uint8_t masked[16];

	if (slash != NULL) {
		if (host_only)
			return pol_why(why, wl, "a prefix, not a host");
		*slash = '\0';
		if (slash[1] == '\0' || strlen(slash + 1) > 3 ||
		    strspn(slash + 1, "0123456789") != strlen(slash + 1) ||
		    (plen = (unsigned int)strtoul(slash + 1, NULL, 10)) > max)
			return pol_why(why, wl, "prefix length /%s out of range (0..%u)", slash + 1,
			    max);
	}
	if (inet_pton(v6 ? AF_INET6 : AF_INET, s, out->addr) != 1)
		return pol_why(why, wl, "bad %s address \"%s\"", v6 ? "IPv6" : "IPv4", s);
	if (plen == 0)
		return pol_why(why, wl, "/0 would allow every address");
	out->kind = v6 ? POL_ADDR6 : POL_ADDR4;
	out->plen = (uint8_t)plen;
	for (unsigned int i = 0; i < max / 8; i++) {
		unsigned int bits = plen > i * 8 ? plen - i * 8 : 0;

		masked[i] = bits >= 8 ? out->addr[i] : (uint8_t)(out->addr[i] & (0xff00u >> bits));
	}
	if (memcmp(masked, out->addr, max / 8) != 0) {
		inet_ntop(v6 ? AF_INET6 : AF_INET, masked, net, sizeof(net));
		return pol_why(why, wl, "host bits set after /%u (the network is %s/%u)", plen, net,
		    plen);
	}
	return 0;
}

/* Canonical form through ldns: lower case, no trailing dot, length limits enforced. */
static int
pol_canon(const char *name, char *out, size_t outlen, char *why, size_t wl)
{
	ldns_rdf *rdf;
	char *txt;
	size_t n;
	int rc = 0;

	if ((rdf = ldns_dname_new_frm_str(name)) == NULL)
		return pol_why(why, wl, "not a valid DNS name");
	ldns_dname2canonical(rdf);
	if ((txt = ldns_rdf2str(rdf)) == NULL) {
		ldns_rdf_deep_free(rdf);
		return pol_why(why, wl, "out of memory");
	}
	n = strlen(txt);
	if (n > 0 && txt[n - 1] == '.')
		txt[--n] = '\0';
	if (n == 0 || n >= outlen)
		rc = pol_why(why, wl, "not a valid DNS name");
	else
		memcpy(out, txt, n + 1);
	free(txt);
	ldns_rdf_deep_free(rdf);
	return rc;
}

static int
pol_name(char *s, bool host_only, struct pol_pattern *out, char *why, size_t wl)
{
	size_t len, label = 0, labels = 1;
	bool wild = false;
	char *last;

	if (strcmp(s, "*") == 0 || strcmp(s, "*.") == 0)
		return pol_why(why, wl, "'*' would allow every host");
	if (strncmp(s, "*.", 2) == 0) {
		if (host_only)
			return pol_why(why, wl, "a wildcard, not a host");
		wild = true;
		s += 2;
	}
	if (strchr(s, '*') != NULL)
		return pol_why(why, wl, "a wildcard must be the whole leftmost label "
		    "(*.example.com)");
	if (strspn(s, POL_LDH) != strlen(s))
		return pol_why(why, wl, "invalid character '%c' in a host name",
		    s[strspn(s, POL_LDH)]);
	len = strlen(s);
	if (len > 0 && s[len - 1] == '.')
		s[--len] = '\0';
	if (len == 0)
		return pol_why(why, wl, "empty host name");
	for (size_t i = 0; i <= len; i++) {
		if (i < len && s[i] != '.') {
			label++;
			continue;
		}
		if (label == 0)
			return pol_why(why, wl, "empty label");
		if (label > POL_LABEL_MAX)
			return pol_why(why, wl, "label longer than %d characters", POL_LABEL_MAX);
		if (i < len)
			labels++;
		label = 0;
	}
	if (len > POL_NAME_MAX)
		return pol_why(why, wl, "name longer than %d characters", POL_NAME_MAX);
	/* All-digit last label: an address attempt, never a name (no numeric TLDs). */
	last = strrchr(s, '.');
	last = last != NULL ? last + 1 : s;
	if (strspn(last, "0123456789") == strlen(last))
		return pol_why(why, wl, "numeric last label \"%s\": neither a host name nor an "
		    "IPv4 address", last);
	/*
	 * Any one label may be a top-level domain: there are over a thousand and more come,
	 * so no list decides which are "public". Without the public suffix list this also
	 * refuses *.local-style lab domains; name their hosts, or use two labels.
	 */
	if (wild && labels == 1)
		return pol_why(why, wl, "a wildcard over a one-label suffix (*.%s) would allow a "
		    "whole top-level domain", s);
	out->kind = wild ? POL_NAME_WILD : POL_NAME_EXACT;
	return pol_canon(s, out->name, sizeof(out->name), why, wl);
}

static int
pol_parse(const char *text, struct pol_pattern *out, bool host_only, bool *has_port, char *why,
    size_t wl)
{
	char buf[POL_NAME_MAX + 16], *host = buf, *colon;
	size_t len = strlen(text);

	memset(out, 0, sizeof(*out));
	*has_port = false;
	if (len == 0)
		return pol_why(why, wl, "empty pattern");
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)text[i];

		if (ch >= 0x80)
			return pol_why(why, wl, "non-ASCII host name: write an IDN in its punycode "
			    "form (xn--...)");
		if (ch <= 0x20 || ch == 0x7f)
			return pol_why(why, wl, "contains a space or control character");
	}
	if (len >= sizeof(buf))
		return pol_why(why, wl, "longer than %d characters", POL_NAME_MAX);
	memcpy(buf, text, len + 1);

	if (buf[0] == '[') {			/* [v6], [v6/len], with :port */
		char *end = strchr(buf, ']');

		if (end == NULL)
			return pol_why(why, wl, "missing ']' after an IPv6 address");
		*end = '\0';
		if (end[1] == ':') {
			*has_port = true;
			if (pol_port(end + 2, &out->port, why, wl) < 0)
				return -EINVAL;
		} else if (end[1] != '\0') {
			return pol_why(why, wl, "unexpected \"%s\" after ']'", end + 1);
		}
		return pol_addr(buf + 1, true, host_only, out, why, wl);
	}
	colon = strchr(buf, ':');
	if (colon != NULL && strchr(colon + 1, ':') != NULL) {
		/* Two colons: a bare IPv6 address, which cannot carry a port. */
		return pol_addr(buf, true, host_only, out, why, wl);
	}
	if (colon != NULL) {
		*colon = '\0';
		*has_port = true;
		if (pol_port(colon + 1, &out->port, why, wl) < 0)
			return -EINVAL;
	}
	if (host[0] == '\0')
		return pol_why(why, wl, "empty host name");
	if (strspn(host, "0123456789./") == strlen(host) && strpbrk(host, "0123456789") != NULL)
		return pol_addr(host, false, host_only, out, why, wl);
	if (strchr(host, '/') != NULL)
		return pol_why(why, wl, "a prefix length needs an address, not a name");
	return pol_name(host, host_only, out, why, wl);
}

int
pol_pattern_parse(const char *text, struct pol_pattern *out, char *why, size_t whylen)
{
	bool has_port;

	return pol_parse(text, out, false, &has_port, why, whylen);
}

int
pol_host_parse(const char *text, struct pol_pattern *out, bool *has_port, char *why,
    size_t whylen)
{
	return pol_parse(text, out, true, has_port, why, whylen);
}

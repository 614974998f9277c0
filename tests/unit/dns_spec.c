/*
 * The DNS unit tests' spec language (mb_spec()) and the builders both test_dns_msg.c and
 * test_dns_plain.c use: a message written as the records it holds.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dns_builder.h"
#include "dns_spec.h"
#include "sni/dns.h"

void
mb_hex(struct mb *m, const char *hex)
{
	for (; hex[0] != '\0' && hex[1] != '\0'; hex += 2) {
		char h[3] = { hex[0], hex[1], '\0' };

		mb_u8(m, (unsigned int)strtoul(h, NULL, 16));
	}
}

/*
 * "www.example" is labels and the root; "www@12" is a label then a pointer to offset 12;
 * "@12" a lone pointer; "" the root. Labels are taken verbatim (no escapes).
 */
size_t
mb_name(struct mb *m, const char *s)
{
	size_t at = m->len;

	while (*s != '\0' && *s != '@') {
		size_t n = strcspn(s, ".@");

		mb_u8(m, (unsigned int)n);
		mb_bytes(m, s, n);
		s += n;
		if (*s == '.')
			s++;
	}
	if (*s == '@')
		mb_u16(m, 0xc000 | (unsigned int)strtoul(s + 1, NULL, 10));
	else
		mb_u8(m, 0);
	return at;
}

void
mb_hdr(struct mb *m, unsigned int flags, unsigned int qd, unsigned int an, unsigned int ns,
    unsigned int ar)
{
	m->len = 0;
	mb_u16(m, 0x1234);
	mb_u16(m, flags);
	mb_u16(m, qd);
	mb_u16(m, an);
	mb_u16(m, ns);
	mb_u16(m, ar);
}

void
mb_q(struct mb *m, const char *name, unsigned int type)
{
	mb_name(m, name);
	mb_u16(m, type);
	mb_u16(m, DNS_CLASS_IN);
}

/* Owner, type, class, TTL and an RDLENGTH to be patched by mb_rr_end(). */
size_t
mb_rr(struct mb *m, const char *owner, unsigned int type, unsigned int class, uint32_t ttl)
{
	mb_name(m, owner);
	mb_u16(m, type);
	mb_u16(m, class);
	mb_u32(m, ttl);
	mb_u16(m, 0);
	return m->len;
}

void
mb_rr_end(struct mb *m, size_t rdata)
{
	m->b[rdata - 2] = (uint8_t)((m->len - rdata) >> 8);
	m->b[rdata - 1] = (uint8_t)(m->len - rdata);
}

void
mb_a(struct mb *m, const char *owner, uint32_t ttl, const char *addr)
{
	uint8_t a[16];
	int six = strchr(addr, ':') != NULL;
	size_t at = mb_rr(m, owner, six ? DNS_TYPE_AAAA : DNS_TYPE_A, DNS_CLASS_IN, ttl);

	assert_int_equal(inet_pton(six ? AF_INET6 : AF_INET, addr, a), 1);
	mb_bytes(m, a, six ? 16 : 4);
	mb_rr_end(m, at);
}

void
mb_cname(struct mb *m, const char *owner, uint32_t ttl, const char *target)
{
	size_t at = mb_rr(m, owner, DNS_TYPE_CNAME, DNS_CLASS_IN, ttl);

	mb_name(m, target);
	mb_rr_end(m, at);
}

void
mb_opt(struct mb *m, unsigned int udp)
{
	mb_rr_end(m, mb_rr(m, "", DNS_TYPE_OPT, udp, 0));
}

/* A response header and the question "a.example" (offset 12), type A. */
void
mb_resp(struct mb *m, unsigned int an, unsigned int ns, unsigned int ar)
{
	mb_hdr(m, RESP, 1, an, ns, ar);
	mb_q(m, "a.example", DNS_TYPE_A);
}

/*
 * A message as text, one command per ';':
 *   H flags qd an ns ar	header (flags in hex, id 0x1234)
 *   Q name type		question, class IN
 *   A owner ttl addr		A, or AAAA when addr has a ':'
 *   C owner ttl target		CNAME
 *   O udp			OPT with the root as owner
 *   R owner type class ttl hex	any record, RDATA in hex ("-" for none)
 *   B hex			raw bytes
 *   S off hex			overwrite the byte at off (from the end when negative)
 * Names as mb_name, "." for the root. TTLs take 0x.
 */
void
mb_spec(struct mb *m, const char *spec)
{
	char buf[2048], *save = NULL, *cmd, *a[6];

	assert_true(strlen(spec) < sizeof(buf));
	strcpy(buf, spec);
	m->len = 0;
	for (cmd = strtok_r(buf, ";", &save); cmd != NULL; cmd = strtok_r(NULL, ";", &save)) {
		char *save2 = NULL, *op = strtok_r(cmd, " ", &save2);
		size_t at;
		int n = 0;

		while (n < 6 && (a[n] = strtok_r(NULL, " ", &save2)) != NULL)
			n++;
		for (int i = 0; i < n; i++) {
			if (strcmp(a[i], ".") == 0)
				a[i] = (char *)"";
		}
		switch (op[0]) {
		case 'H':
			mb_hdr(m, (unsigned int)strtoul(a[0], NULL, 16), (unsigned int)atoi(a[1]),
			    (unsigned int)atoi(a[2]), (unsigned int)atoi(a[3]),
			    (unsigned int)atoi(a[4]));
			break;
		case 'Q':
			mb_q(m, a[0], (unsigned int)atoi(a[1]));
			break;
		case 'A':
			mb_a(m, a[0], (uint32_t)strtoul(a[1], NULL, 0), a[2]);
			break;
		case 'C':
			mb_cname(m, a[0], (uint32_t)strtoul(a[1], NULL, 0), a[2]);
			break;
		case 'O':
			mb_opt(m, (unsigned int)atoi(a[0]));
			break;
		case 'R':
			at = mb_rr(m, a[0], (unsigned int)atoi(a[1]), (unsigned int)atoi(a[2]),
			    (uint32_t)strtoul(a[3], NULL, 0));
			mb_hex(m, strcmp(a[4], "-") == 0 ? "" : a[4]);
			mb_rr_end(m, at);
			break;
		case 'B':
			mb_hex(m, a[0]);
			break;
		case 'S':
			at = (size_t)(atoi(a[0]) < 0 ? (long)m->len + atoi(a[0]) : atoi(a[0]));
			assert_true(at < m->len);
			m->b[at] = (uint8_t)strtoul(a[1], NULL, 16);
			break;
		default:
			fail_msg("bad spec command %s", op);
		}
	}
}

void
b_many_addrs(struct mb *m)
{
	char a[32];

	mb_resp(m, DNS_ADDRS_MAX + 3, 0, 0);
	for (int i = 0; i < DNS_ADDRS_MAX + 3; i++) {
		snprintf(a, sizeof(a), "10.0.0.%d", i);
		mb_a(m, "@12", 60, a);
	}
}

/* Answers past DNS_ANSWERS_MAX are checked, not followed. */
void
b_many_answers(struct mb *m)
{
	mb_resp(m, DNS_ANSWERS_MAX + 1, 0, 0);
	for (int i = 0; i < DNS_ANSWERS_MAX; i++)
		mb_rr_end(m, mb_rr(m, "@12", T_TXT, DNS_CLASS_IN, 60));
	mb_a(m, "@12", 60, "192.0.2.1");
}

/*
 * The dns_edit unit tests' fixture: messages written record by record (names with or
 * without compression pointers), a keep() that says no to chosen calls and remembers
 * every one, dns_edit() into a copy, and the two readers every result is checked with,
 * dns_msg_parse() and, sharing no code with sni/, ldns.
 */
#ifndef TEST_DNS_EDIT_FIXTURE_H
#define TEST_DNS_EDIT_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ldns/ldns.h>

#include "dns_builder.h"
#include "sni/dns.h"
#include "sni/dns_edit.h"

#define RESP		0x8180		/* QR RD RA, NOERROR */
#define T_NS		2
#define T_SOA		6
#define T_TXT		16
#define NO_PTR		(-1)
#define BUF		4096

struct keeper {
	uint64_t refuse[4];	/* bit i: say no to call i */
	bool refuse_all;
	unsigned int calls;
	struct dns_addr seen[256];
	bool said[256];
};

/* Labels of the dotted name ("" for none), then a pointer to ptr or, with NO_PTR, the root. */
size_t mb_name(struct mb *m, const char *s, long ptr);

void mb_hdr(struct mb *m, unsigned int an, unsigned int ns, unsigned int ar);

/* Header and the question name (offset 12), class IN. */
void mb_resp(struct mb *m, const char *qname, unsigned int qtype, unsigned int an, unsigned int ns,
    unsigned int ar);

/* Type, class IN, TTL and an RDLENGTH for mb_end(); returns where RDATA starts. */
size_t mb_rr(struct mb *m, unsigned int type, uint32_t ttl);

void mb_end(struct mb *m, size_t rdata);

/* An A or AAAA record of the owner (labels, pointer); returns the owner's offset. */
size_t mb_a(struct mb *m, const char *labels, long ptr, uint32_t ttl, const char *addr);

void mb_opt(struct mb *m, const void *rdata, size_t n);

bool keeper_fn(void *arg, const struct dns_addr *a);

void keeper_refuse(struct keeper *k, unsigned int i);

/* The ldns reading of out; its answer count must be an. */
ldns_pkt *ldns_check(const uint8_t *out, size_t n, size_t an);

void ldns_owner_is(const ldns_rr *rr, const char *text);

void ldns_rdf_is(const ldns_rr *rr, size_t i, const char *text);

void parse_ok(const uint8_t *b, size_t n, struct dns_msg *m);

/* dns_edit() of in into a copy; cap BUF. */
enum dns_edit_status edit(const struct mb *in, struct mb *out, unsigned int flags, struct keeper *k,
    struct dns_edit_stats *st);

/* An HTTPS record: owner (labels, pointer), priority, TargetName ".", params. */
void mb_https(struct mb *m, const char *labels, long ptr, uint16_t prio, const uint8_t *params,
    size_t n);

#endif

/*
 * The DNS unit tests' spec language (dns_spec.c): mb_spec() writes a message from text,
 * the mb_*() a record at a time, and the cases both tests build with a loop.
 */
#ifndef TEST_DNS_SPEC_H
#define TEST_DNS_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include "dns_builder.h"

#define RESP	0x8180		/* QR RD RA, NOERROR */
#define T_TXT	16

/* A response header and the question "a.example" (at 12, "example" at 14; ends at 27). */
#define RQ(an, ns, ar)	"H 8180 1 " #an " " #ns " " #ar "; Q a.example 1; "
#define QQ		"H 0100 1 0 0 0; "
#define L63		"abcdefghijklmnopqrstuvwxyz-0123456789-abcdefghijklmnopqrstuvwxy"
#define L61		"abcdefghijklmnopqrstuvwxyz-0123456789-abcdefghijklmnopqrstuvw"
#define L60		"abcdefghijklmnopqrstuvwxyz-0123456789-abcdefghijklmnopqrstuv"
#define L189		L63 "." L63 "." L63
#define SIMPLE		RQ(2, 0, 1) "A @12 30 203.0.113.10; A @12 20 2001:db8::10; O 4096"
/* A real response, kept as a fixed vector: CNAME to a fastly name, four A, EDNS */
#define REAL_938	"B 46ee818000010005000000010763656e7472616c08736f6e617479706503636f6d0000" \
	"010001c00c000500010000012c0023096475616c737461636b087275627967656d73036d61700666" \
	"6173746c79036e657400c032000100010000003c0004c7e8e6bfc032000100010000003c0004c7e8" \
	"1469c032000100010000003c00049765623ec032000100010000003c0004924b4f47000029" \
	"04d0000000000000"

void mb_hex(struct mb *m, const char *hex);
size_t mb_name(struct mb *m, const char *s);
void mb_hdr(struct mb *m, unsigned int flags, unsigned int qd, unsigned int an, unsigned int ns,
    unsigned int ar);
void mb_q(struct mb *m, const char *name, unsigned int type);
size_t mb_rr(struct mb *m, const char *owner, unsigned int type, unsigned int class,
    uint32_t ttl);
void mb_rr_end(struct mb *m, size_t rdata);
void mb_a(struct mb *m, const char *owner, uint32_t ttl, const char *addr);
void mb_cname(struct mb *m, const char *owner, uint32_t ttl, const char *target);
void mb_opt(struct mb *m, unsigned int udp);
void mb_resp(struct mb *m, unsigned int an, unsigned int ns, unsigned int ar);
void mb_spec(struct mb *m, const char *spec);
void b_many_addrs(struct mb *m);
void b_many_answers(struct mb *m);

#endif

/*
 * ldns_oracle: the DNS reference for differential tests. Reads one hex-encoded DNS
 * message per line on stdin and prints one JSON line per message with what ldns makes of
 * it: header fields, the question and every answer record (owner, type, class, TTL, and
 * the address or CNAME target). The CNAME chain is followed by the test, not here, so
 * namegate's chain logic is checked against an independent one.
 */
#include <ctype.h>
#include <ldns/ldns.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
json_str(const char *s)
{
	putchar('"');
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void
json_rdf(const ldns_rdf *rdf)
{
	char *s = rdf != NULL ? ldns_rdf2str(rdf) : NULL;

	if (s == NULL) {
		fputs("null", stdout);
		return;
	}
	json_str(s);
	free(s);
}

static int
hex_decode(const char *hex, uint8_t *out, size_t cap, size_t *len)
{
	size_t n = strlen(hex);

	while (n > 0 && isspace((unsigned char)hex[n - 1]))
		n--;
	if (n % 2 != 0 || n / 2 > cap)
		return -1;
	for (size_t i = 0; i < n / 2; i++) {
		unsigned int v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return -1;
		out[i] = (uint8_t)v;
	}
	*len = n / 2;
	return 0;
}

static void
dump_message(const uint8_t *wire, size_t len)
{
	ldns_pkt *pkt = NULL;
	ldns_rr_list *q, *an;
	ldns_status st = ldns_wire2pkt(&pkt, wire, len);

	if (st != LDNS_STATUS_OK) {
		printf("{\"ok\":false,\"error\":");
		json_str(ldns_get_errorstr_by_id(st));
		printf("}\n");
		return;
	}
	printf("{\"ok\":true,\"id\":%u,\"qr\":%s,\"rcode\":%u,\"qdcount\":%u", ldns_pkt_id(pkt),
	    ldns_pkt_qr(pkt) ? "true" : "false", ldns_pkt_get_rcode(pkt), ldns_pkt_qdcount(pkt));
	q = ldns_pkt_question(pkt);
	if (ldns_rr_list_rr_count(q) == 1) {
		printf(",\"qname\":");
		json_rdf(ldns_rr_owner(ldns_rr_list_rr(q, 0)));
		printf(",\"qtype\":%u", ldns_rr_get_type(ldns_rr_list_rr(q, 0)));
	}
	printf(",\"edns\":%s,\"answers\":[", ldns_pkt_edns(pkt) ? "true" : "false");
	an = ldns_pkt_answer(pkt);
	for (size_t i = 0; i < ldns_rr_list_rr_count(an); i++) {
		ldns_rr *rr = ldns_rr_list_rr(an, i);

		printf("%s{\"owner\":", i > 0 ? "," : "");
		json_rdf(ldns_rr_owner(rr));
		printf(",\"type\":%u,\"class\":%u,\"ttl\":%u,\"data\":", ldns_rr_get_type(rr),
		    ldns_rr_get_class(rr), ldns_rr_ttl(rr));
		json_rdf(ldns_rr_rd_count(rr) == 1 ? ldns_rr_rdf(rr, 0) : NULL);
		putchar('}');
	}
	printf("]}\n");
	ldns_pkt_free(pkt);
}

int
main(void)
{
	static char line[2 * 65536 + 16];
	static uint8_t wire[65536];
	size_t len;

	while (fgets(line, sizeof(line), stdin) != NULL) {
		if (hex_decode(line, wire, sizeof(wire), &len) != 0) {
			fprintf(stderr, "ldns_oracle: bad hex line\n");
			return 2;
		}
		dump_message(wire, len);
	}
	return 0;
}

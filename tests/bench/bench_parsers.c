/*
 * Parser benchmark: ns per ClientHello (hello.pcap) and per DNS response (mix.pcap), each
 * against a baseline measured in the same run, since the machines drift 1.3-1.7x between
 * runs: a single pass that reads every byte of the same hellos (the floor any parser pays),
 * and ldns_wire2pkt on the same DNS responses (the reference parser).
 * Every timed call must succeed (a hello's SNI found, a response parsed by both parsers):
 * a parser that fails fast would look fast, so the run fails instead, and the counts of
 * what parsed are printed beside the figures.
 * Prints RESULT name=value lines.
 */
#include <ldns/ldns.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_input.h"
#include "sni/dns.h"
#include "sni/pkt.h"
#include "sni/tls.h"

#define BENCH_MSGS_MAX	200000
#define BENCH_ROUNDS	7	/* the median of these is reported */

struct msg {
	uint8_t *p;
	size_t len;
};

struct corpus {
	struct msg m[BENCH_MSGS_MAX];
	size_t n;
};

static volatile uint64_t bench_sink;	/* keeps the optimiser from dropping the work */

static double
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int
corpus_add(struct corpus *c, const uint8_t *p, size_t len)
{
	if (c->n == BENCH_MSGS_MAX || (c->m[c->n].p = malloc(len ? len : 1)) == NULL)
		return -1;
	memcpy(c->m[c->n].p, p, len);
	c->m[c->n].len = len;
	c->n++;
	return 0;
}

/*
 * Hellos: client payloads to port 443 glued per flow in capture order (the captures are
 * in order, one hello per flow), kept once the first record is whole.
 * DNS: UDP payloads from port 53.
 */
static int
load(const char *path, struct corpus *hellos, struct corpus *dns)
{
	char errbuf[PCAP_ERRBUF_SIZE];
	static uint8_t pending[TLS_HELLO_MAX];
	size_t pending_len = 0;
	struct pcap_pkthdr *h;
	const u_char *data;
	pcap_t *pc;
	struct pkt p;

	if ((pc = pcap_open_offline(path, errbuf)) == NULL) {
		fprintf(stderr, "bench: %s\n", errbuf);
		return -1;
	}
	while (pcap_next_ex(pc, &h, &data) == 1) {
		if (pkt_decode(data, h->caplen, &p) != PKT_OK)
			continue;
		if (p.proto == PKT_PROTO_UDP && p.sport == 53 && dns != NULL) {
			corpus_add(dns, p.payload, p.payload_len);
		} else if (p.proto == PKT_PROTO_TCP && p.dport == 443 && p.payload_len > 0 &&
		    hellos != NULL) {
			if (pending_len == 0 && p.payload[0] != 0x16)
				continue;
			if (pending_len + p.payload_len > sizeof(pending)) {
				pending_len = 0;
				continue;
			}
			memcpy(pending + pending_len, p.payload, p.payload_len);
			pending_len += p.payload_len;
			if (pending_len >= 5 &&
			    pending_len >= 5u + (size_t)(pending[3] << 8 | pending[4])) {
				corpus_add(hellos, pending, pending_len);
				pending_len = 0;
			}
		}
	}
	pcap_close(pc);
	return 0;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * Median over BENCH_ROUNDS of ns per message for fn over the whole corpus; fn returns 0
 * for a message it failed on. *ok: the messages of the last round it did not fail on.
 */
static double
bench(const struct corpus *c, uint64_t (*fn)(const uint8_t *, size_t), size_t *ok)
{
	double t[BENCH_ROUNDS];

	for (int r = 0; r < BENCH_ROUNDS; r++) {
		double t0 = now_ns();
		uint64_t acc = 0;
		size_t good = 0;

		for (size_t i = 0; i < c->n; i++) {
			uint64_t v = fn(c->m[i].p, c->m[i].len);

			acc += v;
			good += v != 0;
		}
		t[r] = (now_ns() - t0) / (double)c->n;
		bench_sink += acc;
		*ok = good;
	}
	qsort(t, BENCH_ROUNDS, sizeof(t[0]), cmp_double);
	return t[BENCH_ROUNDS / 2];
}

static uint64_t
run_tls(const uint8_t *p, size_t len)
{
	static uint8_t scratch[TLS_HELLO_MAX];
	struct tls_hello h;

	return tls_hello_parse(p, len, scratch, sizeof(scratch), &h) == SNI_FOUND ? h.sni.len : 0;
}

static uint64_t
run_touch(const uint8_t *p, size_t len)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < len; i++)
		sum += p[i];
	return sum;
}

static uint64_t
run_dns(const uint8_t *p, size_t len)
{
	struct dns_msg m;

	/* 1 + the addresses: a parsed answer without any (NXDOMAIN) is not a failure */
	return dns_msg_parse(p, len, &m) == DNS_OK ? 1u + m.nb_addrs : 0;
}

static uint64_t
run_ldns(const uint8_t *p, size_t len)
{
	ldns_pkt *pkt = NULL;
	uint64_t n = 0;

	if (ldns_wire2pkt(&pkt, p, len) == LDNS_STATUS_OK) {
		n = 1u + ldns_pkt_ancount(pkt);
		ldns_pkt_free(pkt);
	}
	return n;
}

int
main(int argc, char **argv)
{
	static struct corpus hellos, dns;
	char path[4096];
	double tls_ns, touch_ns, dns_ns, ldns_ns;
	size_t found = 0, tls_ok, touch_ok, dns_ok, ldns_ok;

	if (argc != 2) {
		fprintf(stderr, "usage: bench_parsers TRAFFIC_DIR\n");
		return 2;
	}
	snprintf(path, sizeof(path), "%s/hello.pcap", argv[1]);
	if (bench_input_missing("bench_parsers", path) || load(path, &hellos, NULL) != 0)
		return 1;
	snprintf(path, sizeof(path), "%s/mix.pcap", argv[1]);
	if (bench_input_missing("bench_parsers", path) || load(path, NULL, &dns) != 0)
		return 1;
	for (size_t i = 0; i < hellos.n; i++)
		found += run_tls(hellos.m[i].p, hellos.m[i].len) > 0;
	if (hellos.n == 0 || dns.n == 0 || found != hellos.n) {
		fprintf(stderr, "bench: %zu hellos (%zu with SNI), %zu DNS responses: corpus wrong\n",
		    hellos.n, found, dns.n);
		return 1;
	}
	tls_ns = bench(&hellos, run_tls, &tls_ok);
	touch_ns = bench(&hellos, run_touch, &touch_ok);
	dns_ns = bench(&dns, run_dns, &dns_ok);
	ldns_ns = bench(&dns, run_ldns, &ldns_ok);
	printf("RESULT tls_hellos_parsed=%zu\n", tls_ok);
	printf("RESULT dns_responses_parsed=%zu\n", dns_ok);
	printf("RESULT dns_responses_parsed_ldns=%zu\n", ldns_ok);
	if (tls_ok != hellos.n || touch_ok != hellos.n || dns_ok != dns.n || ldns_ok != dns.n) {
		fprintf(stderr, "bench: of %zu hellos %zu parsed, of %zu DNS responses %zu parsed "
		    "(ldns: %zu): a failed parse is not a figure\n", hellos.n, tls_ok, dns.n,
		    dns_ok, ldns_ok);
		return 1;
	}
	printf("RESULT tls_hellos=%zu\n", hellos.n);
	printf("RESULT tls_hello_ns=%.1f\n", tls_ns);
	printf("RESULT tls_touch_bytes_ns=%.1f\n", touch_ns);
	printf("RESULT tls_hello_vs_touch=%.2f\n", tls_ns / touch_ns);
	printf("RESULT dns_responses=%zu\n", dns.n);
	printf("RESULT dns_response_ns=%.1f\n", dns_ns);
	printf("RESULT dns_ldns_ns=%.1f\n", ldns_ns);
	printf("RESULT dns_vs_ldns=%.3f\n", dns_ns / ldns_ns);
	for (size_t i = 0; i < hellos.n; i++)
		free(hellos.m[i].p);
	for (size_t i = 0; i < dns.n; i++)
		free(dns.m[i].p);
	return 0;
}

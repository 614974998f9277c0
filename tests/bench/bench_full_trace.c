/*
 * bench_full traces: frames read from a capture (or made by bench_full_synth.c), each
 * decoded once with the product's own decoder so that the loop knows, without parsing
 * again, which side it enters on, which port a pass rotates, and which query an answer
 * answers.
 */
#include <stdlib.h>
#include <string.h>

#include <pcap/pcap.h>

#include "bench_full.h"
#include "sni/pkt.h"

#define BENCH_QUERY_LOOKBACK	20000	/* frames an answer's query may be behind it */

static const uint8_t bench_gw_mac[6] = { 0x02, 0x00, 0x00, 0xee, 0xee, 0x01 };

/* FNV-1a over the VM side's address and port, then the peer's, then the protocol. */
static uint32_t
bench_flow_hash(const struct pkt *p, bool from_vm)
{
	const uint8_t *a[2] = { from_vm ? p->src : p->dst, from_vm ? p->dst : p->src };
	uint16_t ports[2] = { from_vm ? p->sport : p->dport, from_vm ? p->dport : p->sport };
	uint32_t h = 2166136261u;

	for (int k = 0; k < 2; k++) {
		for (int i = 0; i < 16; i++)
			h = (h ^ a[k][i]) * 16777619u;
		h = (h ^ (ports[k] >> 8)) * 16777619u;
		h = (h ^ (ports[k] & 0xff)) * 16777619u;
	}
	return (h ^ p->proto) * 16777619u;
}

static void
bench_annotate(struct bench_frame *f)
{
	uint16_t vm_port;
	struct pkt p;

	const uint8_t *mac;

	f->side = memcmp(f->data + 6, bench_gw_mac, 6) == 0 ? BENCH_UP : BENCH_VM;
	mac = f->data + (f->side == BENCH_VM ? 8 : 2);
	f->vm = (uint32_t)mac[0] << 24 | (uint32_t)mac[1] << 16 | (uint32_t)mac[2] << 8 | mac[3];
	f->kind = BF_OTHER;
	f->query = -1;
	memset(&p, 0, sizeof(p));
	if (pkt_decode(f->data, f->len, &p) != PKT_OK || p.fragment)
		return;
	f->proto = p.proto;
	f->l4_off = p.l4_off;
	f->flow = bench_flow_hash(&p, f->side == BENCH_VM);
	vm_port = f->side == BENCH_VM ? p.sport : p.dport;
	f->rotate = vm_port >= 1024;
	if (p.proto == PKT_PROTO_UDP && f->side == BENCH_VM && p.dport == 53 &&
	    p.payload_len >= 12)
		f->kind = BF_QUERY;
	else if (p.proto == PKT_PROTO_UDP && f->side == BENCH_UP && p.sport == 53 &&
	    p.payload_len >= 12)
		f->kind = BF_ANSWER;
	else if (p.proto == PKT_PROTO_TCP && f->side == BENCH_VM && p.payload_len >= 6 &&
	    p.payload[0] == 0x16 && p.payload[5] == 0x01)
		f->kind = BF_HELLO;
}

/* Append a copy of frame d (len bytes), decoded; NULL when out of memory. */
struct bench_frame *
bench_trace_add(struct bench_trace *t, const uint8_t *d, size_t len)
{
	struct bench_frame *f;

	if (t->n == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 4096;
		struct bench_frame *nf = realloc(t->f, cap * sizeof(*nf));

		if (nf == NULL)
			return NULL;
		t->f = nf;
		t->cap = cap;
	}
	f = &t->f[t->n];
	memset(f, 0, sizeof(*f));
	if (len > UINT16_MAX || (f->data = malloc(len)) == NULL)
		return NULL;
	memcpy(f->data, d, len);
	f->len = (uint16_t)len;
	bench_annotate(f);
	t->n++;
	return f;
}

/* Frames of the capture at path, at most max of them (0: all). Returns how many, or -1. */
int
bench_trace_pcap(struct bench_trace *t, const char *path, uint32_t max)
{
	char err[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *h;
	const u_char *d;
	pcap_t *pc = pcap_open_offline(path, err);
	int n = 0;

	if (pc == NULL) {
		fprintf(stderr, "bench_full: %s: %s\n", path, err);
		return -1;
	}
	while ((max == 0 || (uint32_t)n < max) && pcap_next_ex(pc, &h, &d) == 1) {
		if (h->caplen != h->len)
			continue;	/* a cut frame would not be the one sent */
		if (bench_trace_add(t, d, h->caplen) == NULL) {
			pcap_close(pc);
			return -1;
		}
		n++;
	}
	pcap_close(pc);
	return n;
}

/* Each answer learns its query: the latest one before it on its flow with its DNS ID. */
void
bench_trace_link_answers(struct bench_trace *t)
{
	for (uint32_t i = 0; i < t->n; i++) {
		struct bench_frame *a = &t->f[i];
		const uint8_t *aid = a->data + a->l4_off + 8;

		if (a->kind != BF_ANSWER)
			continue;
		a->query = -1;
		for (uint32_t j = i; j-- > 0 && i - j <= BENCH_QUERY_LOOKBACK;) {
			const struct bench_frame *q = &t->f[j];

			if (q->kind == BF_QUERY && q->flow == a->flow &&
			    memcmp(q->data + q->l4_off + 8, aid, 2) == 0) {
				a->query = (int32_t)j;
				break;
			}
		}
	}
}

void
bench_trace_free(struct bench_trace *t)
{
	for (uint32_t i = 0; i < t->n; i++)
		free(t->f[i].data);
	free(t->f);
	memset(t, 0, sizeof(*t));
}

/*
 * Preloads a capture of client streams, grouped by flow, and reads each flow's SNI with
 * namegate's reassembler and ClientHello parser: the answers another inspector is
 * checked against (independent of tshark, which tests/diff already compares us with).
 *
 * Two passes over the file: the first sizes the arena and the flow table, the second
 * copies frames and assigns each to its flow; a counting sort then makes every flow's
 * frames contiguous, in capture order.
 */
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hello_flows.h"
#include "sni/pkt.h"
#include "sni/reasm.h"

/* vlan (2) | family (1) | src (16) | dst (16) | sport (2) | dport (2) */
#define FLOW_KEY_LEN	39
#define SLOT_EMPTY	UINT32_MAX

struct loaded {
	const uint8_t *frame;		/* Ethernet frame, in the arena */
	uint32_t len;
	uint32_t flow;
	uint16_t l3_off;
	uint64_t ts_ms;
};

struct flow_table {
	uint32_t *slot;			/* flow ids; SLOT_EMPTY */
	uint32_t mask;			/* slots - 1; slots is a power of two */
	uint8_t (*key)[FLOW_KEY_LEN];	/* by flow id */
	uint32_t nb;
};

static void
flow_key(const struct pkt *p, uint8_t key[FLOW_KEY_LEN])
{
	uint8_t *k = key;

	*k++ = (uint8_t)(p->vlan >> 8);
	*k++ = (uint8_t)p->vlan;
	*k++ = p->family;
	memcpy(k, p->src, 16);
	k += 16;
	memcpy(k, p->dst, 16);
	k += 16;
	*k++ = (uint8_t)(p->sport >> 8);
	*k++ = (uint8_t)p->sport;
	*k++ = (uint8_t)(p->dport >> 8);
	*k = (uint8_t)p->dport;
}

/* FNV-1a: load time only, so any spread-out hash will do. */
static uint32_t
flow_hash(const uint8_t key[FLOW_KEY_LEN])
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < FLOW_KEY_LEN; i++)
		h = (h ^ key[i]) * 16777619u;
	return h;
}

/* The id of the flow with this key, a new one if unseen. The table never fills: it has
 * at least twice as many slots as there are frames. */
static uint32_t
flow_table_id(struct flow_table *t, const uint8_t key[FLOW_KEY_LEN])
{
	uint32_t i = flow_hash(key) & t->mask;

	while (t->slot[i] != SLOT_EMPTY) {
		if (memcmp(t->key[t->slot[i]], key, FLOW_KEY_LEN) == 0)
			return t->slot[i];
		i = (i + 1) & t->mask;
	}
	memcpy(t->key[t->nb], key, FLOW_KEY_LEN);
	t->slot[i] = t->nb;
	return t->nb++;
}

static bool
keep(const uint8_t *frame, size_t len, struct pkt *p)
{
	return pkt_decode(frame, len, p) == PKT_OK && p->proto == PKT_PROTO_TCP &&
	    p->payload_len > 0;
}

struct loader {
	struct hello_flows *hf;
	struct loaded *ld;		/* NULL in the sizing pass */
	struct flow_table t;
	size_t nb, bytes;		/* kept frames and their bytes, from the sizing pass */
	size_t off;			/* arena bytes used */
};

/*
 * One pass over the file. Without l->ld it only counts the frames to keep and their
 * bytes, so the copying pass that follows never reallocates.
 */
static int
walk(const char *path, struct loader *l)
{
	char errbuf[PCAP_ERRBUF_SIZE];
	struct hello_flows *hf = l->hf;
	uint8_t key[FLOW_KEY_LEN];
	struct pcap_pkthdr *h;
	const u_char *data;
	struct pkt p;
	pcap_t *pc;
	int rc = 0;

	if ((pc = pcap_open_offline(path, errbuf)) == NULL) {
		fprintf(stderr, "hello_flows: %s\n", errbuf);
		return -1;
	}
	while (pcap_next_ex(pc, &h, &data) == 1) {
		if (!keep(data, h->caplen, &p)) {
			hf->skipped += l->ld != NULL;
			continue;
		}
		if (l->ld == NULL) {
			l->nb++;
			l->bytes += h->caplen;
			continue;
		}
		if (hf->nb_frames == l->nb || l->off + h->caplen > l->bytes) {
			fprintf(stderr, "hello_flows: %s changed while it was read\n", path);
			rc = -1;
			break;
		}
		memcpy(hf->arena + l->off, data, h->caplen);
		flow_key(&p, key);
		l->ld[hf->nb_frames++] = (struct loaded){
			.frame = hf->arena + l->off,
			.len = h->caplen,
			.flow = flow_table_id(&l->t, key),
			.l3_off = p.l3_off,
			.ts_ms = (uint64_t)h->ts.tv_sec * 1000 + (uint64_t)h->ts.tv_usec / 1000,
		};
		l->off += h->caplen;
	}
	pcap_close(pc);
	return rc;
}

/* Counting sort by flow id; stable, so each flow keeps capture order. */
static void
group(struct hello_flows *hf, const struct loaded *ld, struct loaded *sorted)
{
	size_t i;

	for (i = 0; i < hf->nb_frames; i++)
		hf->flows[ld[i].flow].nb_frames++;
	for (i = 1; i < hf->nb_flows; i++)
		hf->flows[i].first = hf->flows[i - 1].first + hf->flows[i - 1].nb_frames;
	for (i = 0; i < hf->nb_flows; i++)
		hf->flows[i].nb_frames = 0;
	for (i = 0; i < hf->nb_frames; i++) {
		struct hello_flow *f = &hf->flows[ld[i].flow];
		uint32_t at = f->first + f->nb_frames++;

		sorted[at] = ld[i];
		hf->frames[at] = (struct hello_frame){
			.l3 = ld[i].frame + ld[i].l3_off,
			.l3_len = (uint16_t)(ld[i].len - ld[i].l3_off),
			.ts_ms = ld[i].ts_ms,
		};
	}
}

/* What namegate's fast path would read from this flow's segments. */
static void
parse(struct hello_flow *f, const struct loaded *ld)
{
	static uint8_t stream[TLS_HELLO_MAX], scratch[TLS_HELLO_MAX];
	struct tls_hello hello;
	struct reasm r;
	struct pkt p;
	uint32_t isn = 0;
	bool first = true;

	for (uint32_t i = 0; i < f->nb_frames; i++) {
		pkt_decode(ld[i].frame, ld[i].len, &p);
		if (first || (int32_t)(p.seq - isn) < 0)
			isn = p.seq;
		first = false;
	}
	reasm_init(&r, isn, stream, sizeof(stream));
	for (uint32_t i = 0; i < f->nb_frames; i++) {
		pkt_decode(ld[i].frame, ld[i].len, &p);
		enum reasm_status rs = reasm_add(&r, p.seq, p.payload, p.payload_len);

		if (rs == REASM_CONFLICT || rs == REASM_SCATTERED) {
			f->st = SNI_MALFORMED;
			return;
		}
	}
	f->st = tls_hello_parse(stream, reasm_contiguous(&r), scratch, sizeof(scratch), &hello);
	if (f->st == SNI_FOUND) {
		memcpy(f->sni, hello.sni.p, hello.sni.len);
		f->sni[hello.sni.len] = '\0';
		f->sni_len = (uint16_t)hello.sni.len;
	}
}

int
hello_flows_load(const char *path, struct hello_flows *hf)
{
	struct loader l = { .hf = hf };
	struct loaded *sorted = NULL;
	size_t slots = 1;
	int rc = -1;

	*hf = (struct hello_flows){ 0 };
	if (walk(path, &l) != 0)
		goto out;
	if (l.nb == 0 || l.nb >= UINT32_MAX / 4) {
		fprintf(stderr, "hello_flows: %s: %zu TCP frames with a payload\n", path, l.nb);
		goto out;
	}
	while (slots < 2 * l.nb)
		slots <<= 1;
	l.t.mask = (uint32_t)(slots - 1);
	if ((hf->arena = malloc(l.bytes)) == NULL ||
	    (hf->frames = calloc(l.nb, sizeof(*hf->frames))) == NULL ||
	    (l.ld = calloc(l.nb, sizeof(*l.ld))) == NULL ||
	    (sorted = calloc(l.nb, sizeof(*sorted))) == NULL ||
	    (l.t.slot = malloc(slots * sizeof(*l.t.slot))) == NULL ||
	    (l.t.key = malloc(l.nb * sizeof(*l.t.key))) == NULL) {
		fprintf(stderr, "hello_flows: out of memory for %zu frames\n", l.nb);
		goto out;
	}
	memset(l.t.slot, 0xff, slots * sizeof(*l.t.slot));
	if (walk(path, &l) != 0)
		goto out;
	if (hf->nb_frames != l.nb) {
		fprintf(stderr, "hello_flows: %s changed while it was read\n", path);
		goto out;
	}
	hf->nb_flows = l.t.nb;
	if ((hf->flows = calloc(hf->nb_flows, sizeof(*hf->flows))) == NULL)
		goto out;
	group(hf, l.ld, sorted);
	for (size_t i = 0; i < hf->nb_flows; i++)
		parse(&hf->flows[i], sorted + hf->flows[i].first);
	rc = 0;
out:
	free(l.t.key);
	free(l.t.slot);
	free(sorted);
	free(l.ld);
	return rc;
}

void
hello_flows_free(struct hello_flows *hf)
{
	free(hf->flows);
	free(hf->frames);
	free(hf->arena);
	*hf = (struct hello_flows){ 0 };
}

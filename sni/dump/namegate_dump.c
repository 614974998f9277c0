/*
 * namegate-dump FILE.pcap: print every ClientHello, DNS message and plaintext HTTP request
 * head in a capture, one JSON line each, exactly as the fast path's parsers see them (after TCP reassembly). For
 * operators debugging a capture, and for differential tests against tshark and ldns.
 */
#include <errno.h>
#include <getopt.h>
#include <pcap/pcap.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sni/dns.h"
#include "sni/pkt.h"
#include "sni/quic.h"
#include "sni/tls.h"
#include "dump_http.h"
#include "dump_out.h"
#include "dump_stream.h"

#define DUMP_TLS_PORTS_MAX	16
#define DNS_PORT		53
#define QUIC_PORT		443

struct dump {
	FILE *out;
	bool wire;			/* add each DNS message's bytes as hex */
	uint16_t tls_ports[DUMP_TLS_PORTS_MAX];
	unsigned int nb_tls_ports;
	struct dump_streams *streams;
	uint64_t frame;			/* 1-based, as tshark numbers them */
	uint64_t malformed_frames;
	uint8_t scratch[TLS_HELLO_MAX];
};

static void
dump_head(struct dump *d, uint64_t frame, const char *type, const char *proto,
    const struct pkt *p)
{
	fprintf(d->out, "{\"frame\":%llu,\"type\":\"%s\",", (unsigned long long)frame, type);
	if (proto != NULL)
		fprintf(d->out, "\"proto\":\"%s\",", proto);
	dump_json_endpoints(d->out, p);
}

static void
dump_dns_type(FILE *f, uint16_t type)
{
	const char *s = dns_type_str(type);

	if (s != NULL)
		fprintf(f, "\"%s\"", s);
	else
		fprintf(f, "\"TYPE%u\"", type);	/* RFC 3597 s5 */
}

static void
dump_dns(struct dump *d, const struct pkt *p, const char *proto, const uint8_t *msg, size_t len)
{
	struct dns_msg m;
	char name[DNS_NAME_TEXT_MAX];
	const char *rcode;

	dump_head(d, d->frame, "dns", proto, p);
	if (dns_msg_parse(msg, len, &m) != DNS_OK) {
		fputs(",\"verdict\":\"malformed\"", d->out);
	} else {
		fprintf(d->out, ",\"id\":%u,\"qr\":%s,\"opcode\":%u", m.id, m.qr ? "true" : "false",
		    m.opcode);
		if ((rcode = dns_rcode_str(m.rcode)) != NULL)
			fprintf(d->out, ",\"rcode\":\"%s\"", rcode);
		else
			fprintf(d->out, ",\"rcode\":\"RCODE%u\"", m.rcode);
		fprintf(d->out, ",\"qdcount\":%u", m.qdcount);
		if (m.has_question &&
		    dns_name_to_text(m.qname, m.qname_len, name, sizeof(name)) >= 0) {
			fputs(",\"qname\":", d->out);
			dump_json_str(d->out, (const uint8_t *)name, strlen(name));
			fputs(",\"qtype\":", d->out);
			dump_dns_type(d->out, m.qtype);
		}
		fprintf(d->out, ",\"edns\":%s", m.edns ? "true" : "false");
		if (m.qr) {
			fputs(",\"addrs\":[", d->out);
			for (unsigned int i = 0; i < m.nb_addrs; i++) {
				fputs(i ? ",{\"addr\":" : "{\"addr\":", d->out);
				dump_json_addr(d->out, m.addrs[i].family, m.addrs[i].addr);
				fprintf(d->out, ",\"ttl\":%u}", m.addrs[i].ttl);
			}
			fprintf(d->out, "],\"chain\":%u", m.chain_len);
			if (m.addrs_more)
				fputs(",\"addrs_more\":true", d->out);
		}
		if (m.msg_len < len)
			fprintf(d->out, ",\"trailing\":%zu", len - m.msg_len);
	}
	if (d->wire) {
		fputs(",\"wire\":", d->out);
		dump_json_hex(d->out, msg, len);
	}
	fputs("}\n", d->out);
}

static void
dump_tls_verdict(struct dump *d, struct dump_stream *s, const char *verdict)
{
	dump_head(d, d->frame, "tls", NULL, &s->first);
	fprintf(d->out, ",\"verdict\":\"%s\"}\n", verdict);
	s->done = true;
}

static void
dump_tls(struct dump *d, struct dump_stream *s)
{
	struct tls_hello h;
	enum sni_status st;

	st = tls_hello_parse(s->buf, reasm_contiguous(&s->reasm), d->scratch, sizeof(d->scratch),
	    &h);
	if (st == SNI_NEED_MORE)
		return;
	if (st != SNI_FOUND && st != SNI_ABSENT) {
		dump_tls_verdict(d, s, sni_status_str(st));
		return;
	}
	dump_head(d, d->frame, "tls", NULL, &s->first);
	fputs(",\"sni\":", d->out);
	if (st == SNI_FOUND)
		dump_json_str(d->out, h.sni.p, h.sni.len);
	else
		fputs("null", d->out);
	fputs(",\"alpn\":[", d->out);
	for (unsigned int i = 0; i < h.nb_alpn; i++) {
		if (i > 0)
			fputc(',', d->out);
		dump_json_str(d->out, h.alpn[i].p, h.alpn[i].len);
	}
	fprintf(d->out, "],\"ech\":%s}\n", h.ech ? "true" : "false");
	s->done = true;
}

/* Frame, print and consume every whole message held; a partial one waits for the rest. */
static void
dump_dns_tcp(struct dump *d, struct dump_stream *s)
{
	struct rd stream = rd_make(s->buf, reasm_contiguous(&s->reasm));
	struct rd msg;
	enum dns_status st;

	while ((st = dns_tcp_next(&stream, &msg)) == DNS_OK)
		dump_dns(d, &s->first, "tcp", msg.p, msg.len);
	if (st == DNS_MALFORMED) {
		s->done = true;		/* framing lost: nothing after this can be trusted */
		return;
	}
	reasm_consume(&s->reasm, (uint32_t)(stream.p - s->buf));
}

static bool
dump_is_tls_port(const struct dump *d, uint16_t port)
{
	for (unsigned int i = 0; i < d->nb_tls_ports; i++)
		if (d->tls_ports[i] == port)
			return true;
	return false;
}

static void
dump_tcp(struct dump *d, const struct pkt *p)
{
	enum dump_stream_kind kind;
	struct dump_stream *s;
	bool syn = p->tcp_flags & PKT_TCP_SYN;
	enum reasm_status rs;

	if (dump_is_tls_port(d, p->dport))
		kind = DUMP_STREAM_TLS;
	else if (p->dport == DNS_PORT || p->sport == DNS_PORT)
		kind = DUMP_STREAM_DNS;
	else
		kind = DUMP_STREAM_HTTP;
	/*
	 * The SYN fixes byte 0; a stream picked up mid-way starts at its first data. HTTP is
	 * read from a client's SYN only: a server's stream, or one whose start was not
	 * captured, has no request head where the reader would look for one.
	 */
	s = dump_stream_get(d->streams, p, kind == DUMP_STREAM_HTTP ?
	    (p->tcp_flags & (PKT_TCP_SYN | PKT_TCP_ACK)) == PKT_TCP_SYN :
	    syn || p->payload_len > 0, syn ? p->seq + 1 : p->seq, kind);
	if (s == NULL || s->done || p->payload_len == 0)
		return;
	rs = reasm_add(&s->reasm, syn ? p->seq + 1 : p->seq, p->payload, p->payload_len);
	if (rs == REASM_CONFLICT || rs == REASM_SCATTERED) {
		if (kind == DUMP_STREAM_TLS)
			dump_tls_verdict(d, s, reasm_status_str(rs));
		s->done = true;
		return;
	}
	if (kind == DUMP_STREAM_TLS) {
		dump_tls(d, s);
		if (!s->done && rs == REASM_FULL)
			dump_tls_verdict(d, s, "too_long");
	} else if (kind == DUMP_STREAM_HTTP) {
		dump_http(d->out, d->frame, s);
	} else {
		dump_dns_tcp(d, s);
	}
}

static void
dump_udp(struct dump *d, const struct pkt *p)
{
	struct quic_initial q;
	enum quic_status qs;

	if (p->dport == DNS_PORT || p->sport == DNS_PORT) {
		dump_dns(d, p, "udp", p->payload, p->payload_len);
		return;
	}
	if (p->dport != QUIC_PORT)
		return;
	qs = quic_initial_parse(p->payload, p->payload_len, &q);
	if (qs == QUIC_OTHER)
		return;
	dump_head(d, d->frame, "quic", NULL, p);
	if (qs == QUIC_MALFORMED) {
		fputs(",\"verdict\":\"malformed\"}\n", d->out);
		return;
	}
	fprintf(d->out, ",\"version\":\"0x%08x\",\"dcid\":", q.version);
	dump_json_hex(d->out, q.dcid, q.dcid_len);
	fputs(",\"scid\":", d->out);
	dump_json_hex(d->out, q.scid, q.scid_len);
	fputs("}\n", d->out);
}

static void
dump_frame(struct dump *d, const uint8_t *frame, size_t len)
{
	struct pkt p;

	switch (pkt_decode(frame, len, &p)) {
	case PKT_OK:
		break;
	case PKT_MALFORMED:
		d->malformed_frames++;
		return;
	case PKT_OTHER:
		return;
	}
	if (p.proto == PKT_PROTO_TCP)
		dump_tcp(d, &p);
	else
		dump_udp(d, &p);
}

static void
dump_unfinished(struct dump_stream *s, void *arg)
{
	struct dump *d = arg;

	if (s->kind == DUMP_STREAM_TLS && !s->done && reasm_contiguous(&s->reasm) > 0)
		dump_tls_verdict(d, s, "incomplete");
}

static int
dump_parse_ports(struct dump *d, char *list)
{
	char *save = NULL, *tok, *end;

	d->nb_tls_ports = 0;
	for (tok = strtok_r(list, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		unsigned long v;

		errno = 0;
		v = strtoul(tok, &end, 10);
		if (errno != 0 || *end != '\0' || v == 0 || v > 65535 ||
		    d->nb_tls_ports == DUMP_TLS_PORTS_MAX)
			return -EINVAL;
		d->tls_ports[d->nb_tls_ports++] = (uint16_t)v;
	}
	return d->nb_tls_ports > 0 ? 0 : -EINVAL;
}

static void
usage(FILE *f)
{
	fputs("usage: namegate-dump [--wire] [--tls-ports P,P...] FILE.pcap\n"
	    "  Prints one JSON line per TLS ClientHello, DNS message, QUIC Initial and\n"
	    "  plaintext HTTP request head.\n"
	    "  --wire       add each DNS message's bytes as hex (\"wire\")\n"
	    "  --tls-ports  TCP ports whose client streams must start with a ClientHello\n"
	    "               (default 443,8443, as in the daemon's tls_ports)\n"
	    "  -V, --version  print the version and exit\n"
	    "See namegate-dump(1).\n", f);
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "wire", no_argument, NULL, 'w' },
		{ "tls-ports", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	char errbuf[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *hdr;
	const u_char *data;
	struct dump *d;
	pcap_t *pc = NULL;
	int c, rc = 1, nx;

	if ((d = calloc(1, sizeof(*d))) == NULL)
		return 1;
	d->out = stdout;
	d->tls_ports[0] = 443;
	d->tls_ports[1] = 8443;
	d->nb_tls_ports = 2;
	while ((c = getopt_long(argc, argv, "wp:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'w':
			d->wire = true;
			break;
		case 'p':
			if (dump_parse_ports(d, optarg) < 0) {
				fprintf(stderr, "namegate-dump: bad --tls-ports '%s'\n", optarg);
				rc = 2;
				goto out;
			}
			break;
		case 'h':
			usage(stdout);
			rc = 0;
			goto out;
		case 'V':
			printf("namegate-dump %s (%s)\n", NAMEGATE_VERSION, pcap_lib_version());
			rc = 0;
			goto out;
		default:
			usage(stderr);
			rc = 2;
			goto out;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		rc = 2;
		goto out;
	}
	if ((pc = pcap_open_offline(argv[optind], errbuf)) == NULL) {
		fprintf(stderr, "namegate-dump: %s\n", errbuf);
		goto out;
	}
	if (pcap_datalink(pc) != DLT_EN10MB) {
		fprintf(stderr, "namegate-dump: %s: link type %s, want Ethernet\n", argv[optind],
		    pcap_datalink_val_to_name(pcap_datalink(pc)));
		goto out;
	}
	if ((d->streams = dump_streams_new()) == NULL)
		goto out;
	while ((nx = pcap_next_ex(pc, &hdr, &data)) == 1) {
		d->frame++;
		dump_frame(d, data, hdr->caplen);
	}
	if (nx == PCAP_ERROR) {
		fprintf(stderr, "namegate-dump: %s: %s\n", argv[optind], pcap_geterr(pc));
		goto out;
	}
	dump_streams_walk(d->streams, dump_unfinished, d);
	if (d->malformed_frames > 0)
		fprintf(stderr, "namegate-dump: %llu malformed frames skipped\n",
		    (unsigned long long)d->malformed_frames);
	rc = fflush(d->out) == 0 ? 0 : 1;
out:
	if (pc != NULL)
		pcap_close(pc);
	dump_streams_free(d->streams);
	free(d);
	return rc;
}

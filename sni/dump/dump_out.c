/*
 * JSON helpers for namegate-dump.
 */
#include <arpa/inet.h>
#include <sys/socket.h>

#include "dump_out.h"

void
dump_json_str(FILE *f, const uint8_t *s, size_t len)
{
	fputc('"', f);
	for (size_t i = 0; i < len; i++) {
		uint8_t c = s[i];

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)	/* bytes, not UTF-8: keep each one visible */
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void
dump_addr_text(uint8_t family, const uint8_t *addr, char *out, size_t outlen)
{
	if (inet_ntop(family == 6 ? AF_INET6 : AF_INET, addr, out, (socklen_t)outlen) == NULL)
		snprintf(out, outlen, "?");
}

void
dump_json_addr(FILE *f, uint8_t family, const uint8_t *addr)
{
	char text[INET6_ADDRSTRLEN];

	dump_addr_text(family, addr, text, sizeof(text));
	fprintf(f, "\"%s\"", text);
}

static void
dump_json_endpoint(FILE *f, uint8_t family, const uint8_t *addr, uint16_t port)
{
	char text[INET6_ADDRSTRLEN];

	dump_addr_text(family, addr, text, sizeof(text));
	if (family == 6)
		fprintf(f, "\"[%s]:%u\"", text, port);
	else
		fprintf(f, "\"%s:%u\"", text, port);
}

void
dump_json_endpoints(FILE *f, const struct pkt *p)
{
	fputs("\"src\":", f);
	dump_json_endpoint(f, p->family, p->src, p->sport);
	fputs(",\"dst\":", f);
	dump_json_endpoint(f, p->family, p->dst, p->dport);
}

void
dump_json_hex(FILE *f, const uint8_t *p, size_t len)
{
	fputc('"', f);
	for (size_t i = 0; i < len; i++)
		fprintf(f, "%02x", p[i]);
	fputc('"', f);
}

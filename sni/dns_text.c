/*
 * DNS names, codes and statuses as text, for logs, events and namegate-dump. Names print
 * exactly as ldns 1.8 prints them (ldns_rdf2buffer_str_dname), so the differential tests
 * can compare our output with ldns byte for byte; only the trailing dot is dropped.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sni/dns.h"
#include "sni/rd.h"

/* Append n bytes of s at out[*pos], keeping room for the NUL; false when out is full. */
static bool
dns_put(char *out, size_t outlen, size_t *pos, const char *s, size_t n)
{
	if (outlen - *pos <= n)
		return false;
	for (size_t i = 0; i < n; i++)
		out[(*pos)++] = s[i];
	return true;
}

/*
 * One label byte in presentation form (RFC 1035 s5.1). ldns escapes the bytes that zone
 * file syntax gives a meaning ('.', ';', '(', ')', '\') with a backslash and every byte
 * that is not a printable ASCII character as \DDD; the rest, '*' '@' '$' '"' included,
 * print as themselves.
 */
static bool
dns_put_byte(char *out, size_t outlen, size_t *pos, uint8_t c)
{
	char esc[4];

	switch (c) {
	case '.':
	case ';':
	case '(':
	case ')':
	case '\\':
		esc[0] = '\\';
		esc[1] = (char)c;
		return dns_put(out, outlen, pos, esc, 2);
	default:
		break;
	}
	if (c <= 0x20 || c >= 0x7f) {
		esc[0] = '\\';
		esc[1] = (char)('0' + c / 100);
		esc[2] = (char)('0' + c / 10 % 10);
		esc[3] = (char)('0' + c % 10);
		return dns_put(out, outlen, pos, esc, 4);
	}
	esc[0] = (char)c;
	return dns_put(out, outlen, pos, esc, 1);
}

/*
 * Does c print as itself (dns_put_byte())? Printable ASCII but the five zone-file bytes:
 * a bit per byte value, so a host name's label is checked a byte at a time and copied whole.
 */
static inline bool
dns_plain_byte(uint8_t c)
{
	static const uint64_t plain[4] = {
		/* 0x21-0x3f but '(' ')' '.' ';' */
		0xf7ffbcfe00000000ull,
		/* 0x40-0x7e but '\\' */
		0x7fffffffefffffffull,
		0, 0,
	};

	return (plain[c >> 6] >> (c & 63) & 1) != 0;
}

/*
 * name is the uncompressed wire form: { u8 len (1..63) | len bytes }* u8 0, exactly
 * wire_len <= 255 bytes. A compression pointer or a stray byte after the root is an error.
 */
int
dns_name_to_text(const uint8_t *name, size_t wire_len, char *out, size_t outlen)
{
	struct rd r = rd_make(name, wire_len);
	struct rd label;
	size_t pos = 0, plain;
	uint8_t n;

	if (out == NULL || outlen == 0 || wire_len > DNS_NAME_WIRE_MAX)
		return -1;
	for (;;) {
		if (!rd_u8(&r, &n) || n > DNS_LABEL_MAX)
			return -1;
		if (n == 0)
			break;
		if (!rd_sub(&r, n, &label))
			return -1;
		if (pos > 0 && !dns_put(out, outlen, &pos, ".", 1))
			return -1;
		/* the bytes that print as themselves at once, when they all fit */
		for (plain = 0; plain < label.len && dns_plain_byte(label.p[plain]); plain++)
			;
		if (outlen - pos > plain) {
			memcpy(out + pos, label.p, plain);
			pos += plain;
		} else {
			plain = 0;
		}
		for (size_t i = plain; i < label.len; i++) {
			if (!dns_put_byte(out, outlen, &pos, label.p[i]))
				return -1;
		}
	}
	if (r.len != 0)
		return -1;
	if (pos == 0 && !dns_put(out, outlen, &pos, ".", 1))
		return -1;
	out[pos] = '\0';
	return (int)pos;
}

/* RFC 1035 s4.1.1, RFC 2136 s2.2, RFC 8490 s10.2: the 4-bit header RCODEs. */
const char *
dns_rcode_str(uint8_t rcode)
{
	static const char *const names[] = {
		[0] = "NOERROR",
		[1] = "FORMERR",
		[2] = "SERVFAIL",
		[3] = "NXDOMAIN",
		[4] = "NOTIMP",
		[5] = "REFUSED",
		[6] = "YXDOMAIN",
		[7] = "YXRRSET",
		[8] = "NXRRSET",
		[9] = "NOTAUTH",
		[10] = "NOTZONE",
		[11] = "DSOTYPENI",
	};

	return rcode < sizeof(names) / sizeof(names[0]) ? names[rcode] : NULL;
}

/* The IANA mnemonics (as dig and ldns print them) for the types one meets in practice. */
const char *
dns_type_str(uint16_t qtype)
{
	switch (qtype) {
	case 1:		return "A";
	case 2:		return "NS";
	case 5:		return "CNAME";
	case 6:		return "SOA";
	case 12:	return "PTR";
	case 13:	return "HINFO";
	case 15:	return "MX";
	case 16:	return "TXT";
	case 17:	return "RP";
	case 18:	return "AFSDB";
	case 24:	return "SIG";
	case 25:	return "KEY";
	case 28:	return "AAAA";
	case 29:	return "LOC";
	case 33:	return "SRV";
	case 35:	return "NAPTR";
	case 36:	return "KX";
	case 37:	return "CERT";
	case 39:	return "DNAME";
	case 41:	return "OPT";
	case 42:	return "APL";
	case 43:	return "DS";
	case 44:	return "SSHFP";
	case 45:	return "IPSECKEY";
	case 46:	return "RRSIG";
	case 47:	return "NSEC";
	case 48:	return "DNSKEY";
	case 49:	return "DHCID";
	case 50:	return "NSEC3";
	case 51:	return "NSEC3PARAM";
	case 52:	return "TLSA";
	case 53:	return "SMIMEA";
	case 55:	return "HIP";
	case 59:	return "CDS";
	case 60:	return "CDNSKEY";
	case 61:	return "OPENPGPKEY";
	case 62:	return "CSYNC";
	case 63:	return "ZONEMD";
	case 64:	return "SVCB";
	case 65:	return "HTTPS";
	case 99:	return "SPF";
	case 108:	return "EUI48";
	case 109:	return "EUI64";
	case 249:	return "TKEY";
	case 250:	return "TSIG";
	case 251:	return "IXFR";
	case 252:	return "AXFR";
	case 255:	return "ANY";
	case 256:	return "URI";
	case 257:	return "CAA";
	default:	return NULL;
	}
}

const char *
dns_status_str(enum dns_status st)
{
	switch (st) {
	case DNS_OK:		return "ok";
	case DNS_NEED_MORE:	return "need_more";
	case DNS_MALFORMED:	return "malformed";
	}
	return "unknown";
}

/*
 * control/events/ctl_flowlog.c: the flow log's line. Exactly the documented shape (the
 * man page's example), valid JSON whatever bytes a name holds (a VM makes SNIs up), and
 * IPv6 endpoints spelled as inet_ntop() spells them.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "ctl_flowlog.h"

static const char *const uploads[] = { "uploads" };

static struct ctl_flow_line
t_line(uint8_t *src, uint8_t *dst)
{
	memset(src, 0, 16);
	memset(dst, 0, 16);
	inet_pton(AF_INET, "10.77.0.11", src);
	inet_pton(AF_INET, "203.0.113.10", dst);
	return (struct ctl_flow_line){
		.vm = "vm1", .proto = 6, .family = AF_INET, .src = src, .sport = 40312,
		.dst = dst, .dport = 443, .name = "pypi.org", .name_len = 8, .name_key = "sni",
		.verdict = "allowed", .end = "fin",
		.start = { .tv_sec = 1796457661, .tv_nsec = 900000000 },
		.stop = { .tv_sec = 1796457662, .tv_nsec = 340999999 },
		.bytes_out = 1834, .bytes_in = 20931, .packets_out = 12, .packets_in = 18,
		.budgets = uploads, .nbudgets = 1, .final = true,
	};
}

static void
test_the_documented_line(void **state)
{
	const struct timespec ts = { .tv_sec = 1796457662, .tv_nsec = 345000000 };
	uint8_t src[16], dst[16];
	struct ctl_flow_line l = t_line(src, dst);
	struct ctl_jsonl b = { 0 };
	const char *want = "{\"ts\":\"2026-12-05T08:01:02.345Z\",\"vm\":\"vm1\",\"proto\":\"tcp\","
	    "\"src\":\"10.77.0.11:40312\",\"dst\":\"203.0.113.10:443\",\"name\":\"pypi.org\","
	    "\"sni\":\"pypi.org\",\"verdict\":\"allowed\",\"end\":\"fin\","
	    "\"start\":\"2026-12-05T08:01:01.900Z\",\"stop\":\"2026-12-05T08:01:02.340Z\","
	    "\"bytes_out\":1834,\"bytes_in\":20931,\"packets_out\":12,\"packets_in\":18,"
	    "\"budgets\":[\"uploads\"],\"final\":true}\n";

	(void)state;
	ctl_flowlog_format(&b, &ts, &l);
	assert_false(b.oom);
	assert_int_equal(b.len, strlen(want));
	assert_memory_equal(b.p, want, b.len);
	/* the same again from the cached dates, and a refused attempt over IPv6 */
	ctl_flowlog_format(&b, &ts, &l);
	assert_memory_equal(b.p, want, b.len);
	l.family = AF_INET6;
	inet_pton(AF_INET6, "fd77::11", src);
	inet_pton(AF_INET6, "2001:db8::10", dst);
	l.name = NULL;
	l.verdict = "blocked";
	l.reason = "no_binding";
	l.end = "cut";
	l.final = false;
	l.nbudgets = 0;
	ctl_flowlog_format(&b, &ts, &l);
	assert_non_null(strstr(b.p, "\"src\":\"[fd77::11]:40312\",\"dst\":\"[2001:db8::10]:443\","
	    "\"name\":null,\"verdict\":\"blocked\",\"reason\":\"no_binding\","
	    "\"end\":\"cut:no_binding\""));
	assert_non_null(strstr(b.p, "\"budgets\":[],\"final\":false}\n"));
	ctl_jsonl_free(&b);
}

/* Any byte in a name: one line of valid JSON whose string maps back byte for byte. */
static void
test_a_name_of_any_bytes_stays_one_valid_line(void **state)
{
	const struct timespec ts = { .tv_sec = 1796457662 };
	char name[256];
	uint8_t src[16], dst[16];
	struct ctl_flow_line l = t_line(src, dst);
	struct ctl_jsonl b = { 0 };
	static const char printable[] = " !\"#$%&'()*+,-./0123456789:;<=>?@ABC";
	struct json_object *o, *v;
	const char *got;

	(void)state;
	for (int i = 0; i < 256; i++)
		name[i] = (char)i;
	l.name = name;
	l.name_len = sizeof(name);
	ctl_flowlog_format(&b, &ts, &l);
	assert_false(b.oom);
	assert_ptr_equal(memchr(b.p, '\n', b.len), b.p + b.len - 1);
	for (size_t i = 0; i < b.len; i++)
		assert_true(((unsigned char)b.p[i] >= 0x20 && (unsigned char)b.p[i] < 0x7f) ||
		    i == b.len - 1);
	b.p[b.len - 1] = '\0';
	assert_non_null(o = json_tokener_parse(b.p));
	assert_true(json_object_object_get_ex(o, "sni", &v));
	got = json_object_get_string(v);
	/*
	 * json-c reads \u00XX back as the code point's UTF-8, a NUL included: the printable
	 * ones are as sent, between the controls and the high bytes
	 */
	assert_int_equal(got[0], '\0');
	assert_non_null(memmem(got, (size_t)json_object_get_string_len(v), printable,
	    sizeof(printable) - 1));
	json_object_put(o);
	ctl_jsonl_free(&b);
}

/* ctl_jsonl_endpoint() of IPv6 address a, no port: as inet_ntop() spells it, quoted. */
static void
t_ip6_as_inet_ntop(struct ctl_jsonl *b, const uint8_t *a)
{
	char want[INET6_ADDRSTRLEN + 2] = "\"";

	assert_non_null(inet_ntop(AF_INET6, a, want + 1, INET6_ADDRSTRLEN));
	strcat(want, "\"");
	ctl_jsonl_reset(b);
	ctl_jsonl_endpoint(b, AF_INET6, a, 0);
	assert_false(b->oom);
	if (b->len != strlen(want) || memcmp(b->p, want, b->len) != 0)
		fail_msg("%.*s, not %s", (int)b->len, b->p, want);
}

/*
 * IPv6 addresses are spelled by hand, as inet_ntop() spells them: every address whose
 * words are each 0, 1, 0xffff or 0x0ab0 (every place and length of a zero run, ties
 * among runs, the IPv4-mapped and -compatible forms, leading zeros within a word), then
 * random ones; and with a port, in brackets.
 */
static void
test_ipv6_as_inet_ntop(void **state)
{
	static const uint16_t words[] = { 0, 1, 0xffff, 0x0ab0 };
	struct ctl_jsonl b = { 0 };
	uint64_t rng = 0x9e3779b97f4a7c15u;
	uint8_t a[16];

	(void)state;
	for (uint32_t c = 0; c < 1u << 16; c++) {
		for (int i = 0; i < 8; i++) {
			a[2 * i] = (uint8_t)(words[c >> (2 * i) & 3] >> 8);
			a[2 * i + 1] = (uint8_t)words[c >> (2 * i) & 3];
		}
		t_ip6_as_inet_ntop(&b, a);
	}
	for (int n = 0; n < 100000; n++) {
		for (int i = 0; i < 16; i++) {
			rng = rng * 6364136223846793005u + 1442695040888963407u;
			a[i] = (uint8_t)(rng >> 56);
		}
		if (n % 3 == 0)
			memset(a, 0, (size_t)(rng >> 8) % 12);
		t_ip6_as_inet_ntop(&b, a);
	}
	ctl_jsonl_reset(&b);
	inet_pton(AF_INET6, "2001:db8::1", a);
	ctl_jsonl_endpoint(&b, AF_INET6, a, 443);
	assert_int_equal(b.len, strlen("\"[2001:db8::1]:443\""));
	assert_memory_equal(b.p, "\"[2001:db8::1]:443\"", b.len);
	ctl_jsonl_free(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_the_documented_line),
		cmocka_unit_test(test_a_name_of_any_bytes_stays_one_valid_line),
		cmocka_unit_test(test_ipv6_as_inet_ntop),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

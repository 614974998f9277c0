/*
 * control/events/ctl_flowlog.c: the flow log's line. Exactly the documented shape (the
 * man page's example), and valid JSON whatever bytes a name holds: a VM makes SNIs up.
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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_the_documented_line),
		cmocka_unit_test(test_a_name_of_any_bytes_stays_one_valid_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

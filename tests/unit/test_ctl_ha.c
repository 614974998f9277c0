/*
 * control/ha: keepalived's notify FIFO lines, every truncation of them, a reader on a real
 * FIFO (roles in order, the gate told first, a replaced FIFO followed, lines past the
 * limit refused), and a takeover's announcement frames, byte for byte.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "ctl_base.h"
#include "ctl_ha.h"

static enum ctl_ha_line
parse(const char *s, const char *inst, enum ctl_ha_role *r)
{
	return ctl_ha_line_parse(s, strlen(s), inst, r);
}

static void
test_lines(void **state)
{
	static const struct {
		const char *line, *inst;
		enum ctl_ha_line want;
		enum ctl_ha_role role;
	} cases[] = {
		{ "INSTANCE \"VI_1\" MASTER 100", NULL, CTL_HA_LINE_ROLE, CTL_HA_MASTER },
		{ "INSTANCE \"VI_1\" BACKUP 50", "VI_1", CTL_HA_LINE_ROLE, CTL_HA_BACKUP },
		{ "INSTANCE \"VI_1\" FAULT 0", NULL, CTL_HA_LINE_ROLE, CTL_HA_FAULT },
		{ "INSTANCE \"VI_1\" STOP 0\r", NULL, CTL_HA_LINE_ROLE, CTL_HA_STOP },
		{ "INSTANCE \"VI_1\" MASTER", NULL, CTL_HA_LINE_ROLE, CTL_HA_MASTER },
		{ "INSTANCE \"VI_2\" MASTER 100", "VI_1", CTL_HA_LINE_OTHER, 0 },
		{ "INSTANCE \"VI_1x\" MASTER 100", "VI_1", CTL_HA_LINE_OTHER, 0 },
		{ "INSTANCE \"VI_\" MASTER 100", "VI_1", CTL_HA_LINE_OTHER, 0 },
		{ "GROUP \"VG\" MASTER", NULL, CTL_HA_LINE_OTHER, 0 },
		{ "INSTANCE \"VI_1\" MASTER_RX_LOWER_PRI 100", NULL, CTL_HA_LINE_OTHER, 0 },
		{ "INSTANCE \"VI_1\" MASTERX 100", NULL, CTL_HA_LINE_OTHER, 0 },
		{ "INSTANCE \"VI_1\" master 100", NULL, CTL_HA_LINE_OTHER, 0 },
		{ "INSTANCE VI_1 MASTER 100", NULL, CTL_HA_LINE_MALFORMED, 0 },
		{ "INSTANCE \"VI_1 MASTER 100", NULL, CTL_HA_LINE_MALFORMED, 0 },
		{ "INSTANCE \"VI_1\"  MASTER", NULL, CTL_HA_LINE_MALFORMED, 0 },
		{ "", NULL, CTL_HA_LINE_MALFORMED, 0 },
	};
	enum ctl_ha_role r;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		r = CTL_HA_STARTING;
		assert_int_equal(parse(cases[i].line, cases[i].inst, &r), cases[i].want);
		if (cases[i].want == CTL_HA_LINE_ROLE)
			assert_int_equal(r, cases[i].role);
	}
}

/* Every prefix of a line is read within its length: a copy ends where the prefix does. */
static void
test_truncations(void **state)
{
	static const char line[] = "INSTANCE \"VI_1\" MASTER 100";
	enum ctl_ha_role r;

	(void)state;
	for (size_t k = 0; k < sizeof(line) - 1; k++) {
		char *copy = malloc(k > 0 ? k : 1);
		enum ctl_ha_line st;

		memcpy(copy, line, k);
		st = ctl_ha_line_parse(copy, k, "VI_1", &r);
		/* "... M" up to "... MASTE" are states that are no role; the name must be whole */
		if (k < strlen("INSTANCE \"VI_1\" M"))
			assert_int_equal(st, CTL_HA_LINE_MALFORMED);
		else if (k < strlen("INSTANCE \"VI_1\" MASTER"))
			assert_int_equal(st, CTL_HA_LINE_OTHER);
		else
			assert_int_equal(st, CTL_HA_LINE_ROLE);
		free(copy);
	}
}

struct roles {
	enum ctl_ha_role seen[16];
	int n;
};

static void
on_role(enum ctl_ha_role role, void *arg)
{
	struct roles *r = arg;

	if (r->n < 16)
		r->seen[r->n++] = role;
}

static int64_t
beat(void *arg)
{
	(void)arg;
	return 5;
}

static void
wait_roles(struct roles *r, int n)
{
	int64_t end = ctl_now_ms() + 5000;

	while (__atomic_load_n(&r->n, __ATOMIC_SEQ_CST) < n && ctl_now_ms() < end)
		usleep(1000);
	assert_int_equal(__atomic_load_n(&r->n, __ATOMIC_SEQ_CST), n);
}

static void
put(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_NONBLOCK);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, s, strlen(s)), (ssize_t)strlen(s));
	close(fd);
}

static void
test_reader(void **state)
{
	char dir[] = "/tmp/test_ctl_ha.XXXXXX", path[64], other[64], err[256];
	struct roles r = { .n = 0 };
	struct ctl_ha_conf conf = { .instance = "VI_1", .heartbeat_ms = 100,
		.on_role = on_role, .beat = beat, .arg = &r };
	char longline[CTL_HA_LINE_MAX + 40];
	struct ctl_ha *h;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/fifo", dir);
	snprintf(other, sizeof(other), "%s/fifo2", dir);
	conf.fifo = path;
	h = ctl_ha_start(&conf, NULL, err, sizeof(err));
	assert_non_null(h);
	wait_roles(&r, 1);				/* shut at once */
	assert_int_equal(r.seen[0], CTL_HA_STARTING);
	assert_int_equal(ctl_ha_role(h), CTL_HA_STARTING);
	/* a line past the limit is dropped whole, its state with it */
	memset(longline, 'x', sizeof(longline));
	memcpy(longline, "INSTANCE \"VI_1\" MASTER ", 23);
	longline[sizeof(longline) - 2] = '\n';
	longline[sizeof(longline) - 1] = '\0';
	put(path, longline);
	put(path, "INSTANCE \"VI_2\" MASTER 100\nINSTANCE \"VI_1\" BACKUP 100\n"
	    "INSTANCE \"VI_1\" BACKUP 100\nINSTANCE \"VI_1\" MAS");
	put(path, "TER 100\n");
	wait_roles(&r, 3);
	assert_int_equal(r.seen[1], CTL_HA_BACKUP);
	assert_int_equal(r.seen[2], CTL_HA_MASTER);
	assert_true(ctl_ha_tick(h));			/* became master: announce */
	assert_false(ctl_ha_tick(h));			/* once */
	/* keepalived's reload: a new FIFO under the path */
	assert_int_equal(mkfifo(other, 0600), 0);
	assert_int_equal(rename(other, path), 0);
	usleep(300 * 1000);
	put(path, "INSTANCE \"VI_1\" FAULT 0\n");
	wait_roles(&r, 4);
	assert_int_equal(r.seen[3], CTL_HA_FAULT);
	assert_false(ctl_ha_tick(h));
	ctl_ha_stop(h);
	unlink(path);
	rmdir(dir);
}

static void
test_not_a_fifo(void **state)
{
	char path[] = "/tmp/test_ctl_ha_file.XXXXXX", err[256];
	struct roles r = { .n = 0 };
	struct ctl_ha_conf conf = { .fifo = path, .heartbeat_ms = 100, .on_role = on_role,
		.beat = beat, .arg = &r };
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	assert_null(ctl_ha_start(&conf, NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "is not a FIFO"));
	unlink(path);
}

static const uint8_t vm_mac[6] = { 0x02, 0, 0, 0, 0, 0x11 };

static void
test_garp(void **state)
{
	static const uint8_t ip4[4] = { 10, 77, 0, 11 };
	static const uint8_t want[42] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 0x11, 0x08, 0x06,
		0, 1, 0x08, 0, 6, 4, 0, 1, 0x02, 0, 0, 0, 0, 0x11, 10, 77, 0, 11,
		0, 0, 0, 0, 0, 0, 10, 77, 0, 11,
	};
	uint8_t f[CTL_HA_FRAME_MAX];

	(void)state;
	assert_int_equal(ctl_ha_garp(f, vm_mac, 0, ip4), 60);
	assert_memory_equal(f, want, sizeof(want));
	for (size_t i = sizeof(want); i < 60; i++)
		assert_int_equal(f[i], 0);
	assert_int_equal(ctl_ha_garp(f, vm_mac, 42, ip4), 60);	/* tagged: 46 bytes, padded */
	assert_true(f[12] == 0x81 && f[13] == 0 && f[14] == 0 && f[15] == 42);
	assert_true(f[16] == 0x08 && f[17] == 0x06);
	assert_memory_equal(f + 18, want + 14, 28);
}

static void
test_rarp(void **state)
{
	uint8_t f[CTL_HA_FRAME_MAX];

	(void)state;
	assert_int_equal(ctl_ha_rarp(f, vm_mac, 0), 60);
	assert_true(f[12] == 0x80 && f[13] == 0x35);
	assert_true(f[20] == 0 && f[21] == 3);			/* request reverse */
	assert_memory_equal(f + 6, vm_mac, 6);
	assert_memory_equal(f + 22, vm_mac, 6);
	assert_memory_equal(f + 32, vm_mac, 6);
}

/* The ICMPv6 checksum, summed again over the pseudo-header and the message, is 0xffff. */
static void
test_una(void **state)
{
	static const uint8_t ip6[16] = { 0xfd, 0x77, [15] = 0x11 };
	uint8_t f[CTL_HA_FRAME_MAX];
	const uint8_t *ip = f + 14, *icmp = f + 54;
	uint32_t sum = 32 + 58;

	(void)state;
	assert_int_equal(ctl_ha_una(f, vm_mac, 0, ip6), 86);
	assert_true(f[0] == 0x33 && f[1] == 0x33 && f[5] == 1 && f[12] == 0x86 && f[13] == 0xdd);
	assert_true(ip[6] == 58 && ip[7] == 255 && ip[4] == 0 && ip[5] == 32);
	assert_memory_equal(ip + 8, ip6, 16);
	assert_true(icmp[0] == 136 && icmp[4] == 0x20);
	assert_memory_equal(icmp + 8, ip6, 16);
	assert_true(icmp[24] == 2 && icmp[25] == 1);
	assert_memory_equal(icmp + 26, vm_mac, 6);
	for (int i = 0; i < 32; i += 2)
		sum += (uint32_t)(ip[8 + i] << 8 | ip[9 + i]);
	for (int i = 0; i < 32; i += 2)
		sum += (uint32_t)(icmp[i] << 8 | icmp[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	assert_int_equal(sum, 0xffff);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines),
		cmocka_unit_test(test_truncations),
		cmocka_unit_test(test_reader),
		cmocka_unit_test(test_not_a_fifo),
		cmocka_unit_test(test_garp),
		cmocka_unit_test(test_rarp),
		cmocka_unit_test(test_una),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

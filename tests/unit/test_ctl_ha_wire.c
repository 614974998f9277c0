/*
 * control/hasync: the sync stream's records (every type both ways, every truncation, each
 * refusal) and its channel: a handshake end to end, records sealed and opened, and what
 * must change nothing: a recorded session replayed to a fresh server, a frame replayed,
 * reordered, cut or altered, a peer with another key. The pre-shared key's file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ctl_ha_wire.h"

static const uint8_t psk[CTL_HA_PSK_BYTES] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };

static struct ctl_ha_rec
bind_rec(const char *name)
{
	struct ctl_ha_rec r = { .type = CTL_HA_REC_BIND, .vm = "vm1", .vm_len = 3,
		.name = name, .name_len = (uint8_t)strlen(name), .family = 4,
		.addr = { 192, 0, 2, 7 }, .ttl = 300 };

	return r;
}

static struct ctl_ha_rec
flow_rec(const char *name)
{
	struct ctl_ha_rec r = { .type = CTL_HA_REC_FLOW, .vm = "vm1", .vm_len = 3,
		.name = name, .name_len = (uint8_t)strlen(name), .family = 4,
		.addr = { 192, 0, 2, 7 }, .flow = { .vm_port = 40000, .peer_port = 443,
		.how = CTL_HA_FLOW_BY_NAME, .name_bound = 1, .vm_wscale = 7, .peer_wscale = 9,
		.isn = 0xfffffff0, .vm_nxt = 0x10, .peer_ack = 0x8, .peer_wnd = 0x1f0000,
		.peer_isn = 0x01020304 }, .ttl = 3600 };

	return r;
}

static void
test_records(void **state)
{
	struct ctl_ha_rec in[] = {
		bind_rec("example.com"),
		{ .type = CTL_HA_REC_BIND, .vm = "v", .vm_len = 1, .name = "a.b", .name_len = 3,
		  .family = 6, .addr = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 }, .ttl = 0xfffffffe },
		{ .type = CTL_HA_REC_BUDGET, .vm = "vm1", .vm_len = 3, .name = "10.77.0.4",
		  .name_len = 9, .per = 3600, .age = 0x01020304, .bytes = 0x123456789aULL,
		  .merge = CTL_HA_MERGE_ADD },
		{ .type = CTL_HA_REC_BUDGET, .vm = "v", .vm_len = 1, .name = "*.example.org",
		  .name_len = 13, .per = 1, .age = 0, .bytes = 1, .merge = CTL_HA_MERGE_MAX },
		{ .type = CTL_HA_REC_GRANT, .vm = "vm1", .vm_len = 3, .name = "*.example.org",
		  .name_len = 13, .ttl = 60 },
		{ .type = CTL_HA_REC_REVOKE, .vm = "vm1", .vm_len = 3, .name = "*.example.org",
		  .name_len = 13 },
		{ .type = CTL_HA_REC_NAMES, .vm = "vm1", .vm_len = 3, .name = "N5.Sync.test",
		  .name_len = 12, .qtype = 0x1c01, .suffix_len = 9 },
		{ .type = CTL_HA_REC_ACK, .seq = 0x0102030405060708ULL },
		{ .type = CTL_HA_REC_RESYNC_BEGIN },
		{ .type = CTL_HA_REC_RESYNC_END, .seq = 1000 },
		flow_rec("example.com"),
		{ .type = CTL_HA_REC_FLOW, .vm = "v", .vm_len = 1, .family = 6,
		  .addr = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 }, .flow = { .vm_port = 1,
		  .peer_port = 65535, .how = CTL_HA_FLOW_BY_ADDR, .isn = 1, .vm_nxt = 2 },
		  .ttl = 0xffffffff },
		{ .type = CTL_HA_REC_FLOW_END, .vm = "vm1", .vm_len = 3, .family = 4,
		  .addr = { 192, 0, 2, 7 }, .flow = { .vm_port = 40000, .peer_port = 443 } },
	};
	uint8_t buf[CTL_HA_REC_MAX + 1];
	struct ctl_ha_rec out;

	(void)state;
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		size_t n = ctl_ha_rec_encode(&in[i], buf);

		assert_true(n > 0);
		assert_true(ctl_ha_rec_parse(buf, n, &out));
		assert_int_equal(out.type, in[i].type);
		assert_int_equal(out.vm_len, in[i].vm_len);
		assert_memory_equal(out.vm != NULL ? out.vm : "", in[i].vm != NULL ? in[i].vm : "",
		    in[i].vm_len);
		assert_int_equal(out.name_len, in[i].name_len);
		if (in[i].name_len > 0)
			assert_memory_equal(out.name, in[i].name, in[i].name_len);
		assert_int_equal(out.family, in[i].family);
		assert_memory_equal(out.addr, in[i].addr, 16);
		assert_int_equal(out.ttl, in[i].ttl);
		assert_int_equal(out.per, in[i].per);
		assert_int_equal(out.age, in[i].age);
		assert_int_equal(out.bytes, in[i].bytes);
		assert_int_equal(out.merge, in[i].merge);
		assert_int_equal(out.qtype, in[i].qtype);
		assert_int_equal(out.suffix_len, in[i].suffix_len);
		assert_int_equal(out.seq, in[i].seq);
		assert_memory_equal(&out.flow, &in[i].flow, sizeof(out.flow));
		/* every prefix is refused, and so is a byte more */
		for (size_t k = 0; k < n; k++)
			assert_false(ctl_ha_rec_parse(buf, k, &out));
		buf[n] = 0;
		assert_false(ctl_ha_rec_parse(buf, n + 1, &out));
	}
}

static void
test_records_refused(void **state)
{
	char longname[CTL_HA_NAME_MAX + 2];
	struct ctl_ha_rec r = bind_rec("example.com");
	uint8_t buf[CTL_HA_REC_MAX];
	struct ctl_ha_rec out;
	size_t n;

	(void)state;
	r.family = 5;
	assert_int_equal(ctl_ha_rec_encode(&r, buf), 0);
	r = bind_rec("");
	assert_int_equal(ctl_ha_rec_encode(&r, buf), 0);
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	r = bind_rec(longname);			/* 254 bytes: one past a name's limit */
	assert_int_equal(ctl_ha_rec_encode(&r, buf), 0);
	r.name_len = CTL_HA_NAME_MAX;
	assert_true((n = ctl_ha_rec_encode(&r, buf)) > 0);
	assert_true(ctl_ha_rec_parse(buf, n, &out));
	buf[1 + 1 + 3] = 5;			/* the family */
	assert_false(ctl_ha_rec_parse(buf, n, &out));
	buf[0] = 200;				/* no such type */
	assert_false(ctl_ha_rec_parse(buf, n, &out));
	buf[0] = 0;
	assert_false(ctl_ha_rec_parse(buf, n, &out));
	assert_false(ctl_ha_rec_parse(buf, 0, &out));
	r = bind_rec("x");
	n = ctl_ha_rec_encode(&r, buf);
	buf[1] = 0;				/* an empty VM name */
	assert_false(ctl_ha_rec_parse(buf, n, &out));
	buf[1] = CTL_HA_VM_MAX + 1;		/* past the VM name's limit */
	assert_false(ctl_ha_rec_parse(buf, n, &out));
}

/* A FLOW that names its grounds wrong, or spells a field two ways, is no record. */
static void
test_flow_refused(void **state)
{
	struct ctl_ha_rec r = flow_rec("example.com"), out;
	uint8_t buf[CTL_HA_REC_MAX];
	size_t n, how = 1 + 1 + 3 + 1 + 4 + 2 + 2;	/* type, vm, family, addr, ports */

	(void)state;
	assert_true((n = ctl_ha_rec_encode(&r, buf)) > 0);
	assert_true(ctl_ha_rec_parse(buf, n, &out));
	buf[how] = 3;				/* no such grounds */
	assert_false(ctl_ha_rec_parse(buf, n, &out));
	buf[how] = CTL_HA_FLOW_BY_ADDR;		/* by address, yet a name follows */
	assert_false(ctl_ha_rec_parse(buf, n, &out));
	buf[how] = CTL_HA_FLOW_BY_NAME;
	buf[how + 1] = 2;			/* name_bound is 0 or 1 */
	assert_false(ctl_ha_rec_parse(buf, n, &out));
	buf[how + 1] = 1;
	buf[how + 2 + 20 + 2 + 4] = 0;		/* by name with no name */
	assert_false(ctl_ha_rec_parse(buf, how + 2 + 20 + 2 + 4 + 1, &out));
	buf[1 + 1 + 3] = 5;			/* the family */
	assert_false(ctl_ha_rec_parse(buf, n, &out));
	r.flow.how = CTL_HA_FLOW_BY_ADDR;	/* the encoder refuses what the parser would */
	assert_int_equal(ctl_ha_rec_encode(&r, buf), 0);
	r = flow_rec("");
	assert_int_equal(ctl_ha_rec_encode(&r, buf), 0);
	r = flow_rec("a");
	r.flow.name_bound = 2;
	assert_int_equal(ctl_ha_rec_encode(&r, buf), 0);
	r = flow_rec("a");
	r.type = CTL_HA_REC_FLOW_END;
	r.family = 5;
	assert_int_equal(ctl_ha_rec_encode(&r, buf), 0);
}

/* What a BUDGET, GRANT, REVOKE or NAMES may not say, on either side of the wire. */
static void
test_state_records_refused(void **state)
{
	struct ctl_ha_rec b = { .type = CTL_HA_REC_BUDGET, .vm = "vm1", .vm_len = 3,
		.name = "x.org", .name_len = 5, .per = 60, .age = 5, .bytes = 9 };
	struct ctl_ha_rec g = { .type = CTL_HA_REC_GRANT, .vm = "vm1", .vm_len = 3,
		.name = "x.org", .name_len = 5, .ttl = 60 };
	struct ctl_ha_rec v = { .type = CTL_HA_REC_REVOKE, .vm = "vm1", .vm_len = 3,
		.name = "", .name_len = 0 };
	struct ctl_ha_rec n_rec = { .type = CTL_HA_REC_NAMES, .vm = "vm1", .vm_len = 3,
		.name = "a.org", .name_len = 5, .qtype = 1 };
	uint8_t buf[CTL_HA_REC_MAX];
	struct ctl_ha_rec out;
	size_t n;

	(void)state;
	assert_int_equal(ctl_ha_rec_encode(&v, buf), 0);	/* no pattern */
	b.merge = 2;
	assert_int_equal(ctl_ha_rec_encode(&b, buf), 0);
	b.merge = CTL_HA_MERGE_MAX;
	b.per = 0;
	assert_int_equal(ctl_ha_rec_encode(&b, buf), 0);
	b.per = 60;
	assert_true((n = ctl_ha_rec_encode(&b, buf)) > 0);
	buf[n - 1] = 2;				/* merge: no such way */
	assert_false(ctl_ha_rec_parse(buf, n, &out));
	buf[n - 1] = CTL_HA_MERGE_MAX;
	memset(buf + 1 + 4 + 6, 0, 4);		/* per 0: a window of nothing */
	assert_false(ctl_ha_rec_parse(buf, n, &out));
	n_rec.suffix_len = 5;			/* the whole name: no label of its own */
	assert_int_equal(ctl_ha_rec_encode(&n_rec, buf), 0);
	n_rec.suffix_len = 4;
	assert_true((n = ctl_ha_rec_encode(&n_rec, buf)) > 0);
	buf[1 + 4 + 2] = 5;			/* the suffix as long as the name */
	assert_false(ctl_ha_rec_parse(buf, n, &out));
	g.ttl = 0;
	assert_int_equal(ctl_ha_rec_encode(&g, buf), 0);
	g.ttl = 60;
	assert_true((n = ctl_ha_rec_encode(&g, buf)) > 0);
	memset(buf + n - 4, 0, 4);		/* a grant that has ended */
	assert_false(ctl_ha_rec_parse(buf, n, &out));
}

static void
test_frames(void **state)
{
	uint8_t f[CTL_HA_WIRE_MAX + 2] = { 0, 4, 1, 2, 3, 4 };
	size_t flen = 0;

	(void)state;
	assert_int_equal(ctl_ha_frame_next(f, 0, &flen), CTL_HA_FRAME_MORE);
	assert_int_equal(ctl_ha_frame_next(f, 1, &flen), CTL_HA_FRAME_MORE);
	assert_int_equal(ctl_ha_frame_next(f, 5, &flen), CTL_HA_FRAME_MORE);
	assert_int_equal(ctl_ha_frame_next(f, 6, &flen), CTL_HA_FRAME_OK);
	assert_int_equal(flen, 6);
	f[1] = 0;				/* no type */
	assert_int_equal(ctl_ha_frame_next(f, 6, &flen), CTL_HA_FRAME_BAD);
	f[0] = (uint8_t)((CTL_HA_WIRE_MAX - 1) >> 8);
	f[1] = (uint8_t)(CTL_HA_WIRE_MAX - 1);	/* one past the longest */
	assert_int_equal(ctl_ha_frame_next(f, sizeof(f), &flen), CTL_HA_FRAME_BAD);
	f[1]--;
	assert_int_equal(ctl_ha_frame_next(f, sizeof(f), &flen), CTL_HA_FRAME_OK);
	assert_int_equal(flen, CTL_HA_WIRE_MAX);
}

/* A recorded frame. */
struct frame {
	uint8_t b[CTL_HA_WIRE_MAX];
	size_t len;
};

struct pair {
	struct ctl_ha_chan c, s;
	struct frame hello, reply, confirm;
};

static enum ctl_ha_chan_rc
deliver(struct ctl_ha_chan *to, const struct frame *f, struct frame *reply,
    struct ctl_ha_rec *rec, uint8_t *plain)
{
	struct frame scratch;
	struct ctl_ha_rec r;
	uint8_t p[CTL_HA_REC_MAX];
	size_t flen;

	if (ctl_ha_frame_next(f->b, f->len, &flen) != CTL_HA_FRAME_OK || flen != f->len)
		return CTL_HA_CHAN_FAIL;
	if (reply == NULL)
		reply = &scratch;
	return ctl_ha_chan_recv(to, f->b, f->len, reply->b, &reply->len, rec != NULL ? rec : &r,
	    plain != NULL ? plain : p);
}

/* A handshake between p->c (keyed cpsk) and p->s (keyed spsk): whether both are open. */
static bool
handshake(struct pair *p, const uint8_t *cpsk, const uint8_t *spsk)
{
	p->hello.len = ctl_ha_chan_init(&p->c, cpsk, true, p->hello.b);
	assert_int_equal(ctl_ha_chan_init(&p->s, spsk, false, p->reply.b), 0);
	if (deliver(&p->s, &p->hello, &p->reply, NULL, NULL) != CTL_HA_CHAN_NONE ||
	    p->reply.len == 0 ||
	    deliver(&p->c, &p->reply, &p->confirm, NULL, NULL) != CTL_HA_CHAN_NONE ||
	    deliver(&p->s, &p->confirm, NULL, NULL, NULL) != CTL_HA_CHAN_NONE)
		return false;
	return ctl_ha_chan_open(&p->c) && ctl_ha_chan_open(&p->s);
}

static void
seal(struct ctl_ha_chan *ch, const struct ctl_ha_rec *r, struct frame *f)
{
	f->len = ctl_ha_chan_seal(ch, r, f->b);
	assert_true(f->len > 0);
}

static void
test_session(void **state)
{
	struct ctl_ha_rec r = bind_rec("example.com"), got;
	uint8_t plain[CTL_HA_REC_MAX];
	struct frame f, back;
	struct pair p;

	(void)state;
	assert_true(handshake(&p, psk, psk));
	seal(&p.c, &r, &f);
	assert_int_equal(deliver(&p.s, &f, NULL, &got, plain), CTL_HA_CHAN_RECORD);
	assert_int_equal(got.type, CTL_HA_REC_BIND);
	assert_memory_equal(got.name, "example.com", 11);
	assert_memory_equal(got.addr, r.addr, 4);
	/* and back: the standby's ack */
	r = (struct ctl_ha_rec){ .type = CTL_HA_REC_ACK, .seq = 1 };
	seal(&p.s, &r, &back);
	assert_int_equal(deliver(&p.c, &back, NULL, &got, plain), CTL_HA_CHAN_RECORD);
	assert_int_equal(got.type, CTL_HA_REC_ACK);
	assert_int_equal(got.seq, 1);
	/* nothing sealed before the handshake ends, nor by a broken channel */
	ctl_ha_chan_init(&p.s, psk, false, f.b);
	assert_int_equal(ctl_ha_chan_seal(&p.s, &r, f.b), 0);
}

static void
test_session_replayed(void **state)
{
	struct ctl_ha_rec r = bind_rec("example.com");
	struct frame data, reply;
	struct ctl_ha_chan s2;
	struct pair p;

	(void)state;
	assert_true(handshake(&p, psk, psk));
	seal(&p.c, &r, &data);
	/* the client's whole recording to a fresh server: its fresh key fails the confirm */
	ctl_ha_chan_init(&s2, psk, false, reply.b);
	assert_int_equal(deliver(&s2, &p.hello, &reply, NULL, NULL), CTL_HA_CHAN_NONE);
	assert_int_equal(deliver(&s2, &p.confirm, NULL, NULL, NULL), CTL_HA_CHAN_FAIL);
	assert_int_equal(s2.state, CTL_HA_CHAN_BROKEN);
	assert_int_equal(deliver(&s2, &data, NULL, NULL, NULL), CTL_HA_CHAN_FAIL);
	/* the data alone, right after a fresh hello */
	ctl_ha_chan_init(&s2, psk, false, reply.b);
	assert_int_equal(deliver(&s2, &p.hello, &reply, NULL, NULL), CTL_HA_CHAN_NONE);
	assert_int_equal(deliver(&s2, &data, NULL, NULL, NULL), CTL_HA_CHAN_FAIL);
	/* a server's recorded reply to a fresh client */
	{
		struct ctl_ha_chan c2;
		struct frame hello;

		hello.len = ctl_ha_chan_init(&c2, psk, true, hello.b);
		assert_int_equal(deliver(&c2, &p.reply, &reply, NULL, NULL), CTL_HA_CHAN_FAIL);
		assert_int_equal(reply.len, 0);
	}
	/* the hello twice to the server that took it */
	assert_int_equal(deliver(&p.s, &p.hello, &reply, NULL, NULL), CTL_HA_CHAN_FAIL);
}

static void
test_frame_replayed(void **state)
{
	struct ctl_ha_rec r1 = bind_rec("one.example"), r2 = bind_rec("two.example"), got;
	uint8_t plain[CTL_HA_REC_MAX];
	struct frame f1, f2, cut;
	struct pair p;

	(void)state;
	/* replayed */
	assert_true(handshake(&p, psk, psk));
	seal(&p.c, &r1, &f1);
	assert_int_equal(deliver(&p.s, &f1, NULL, &got, plain), CTL_HA_CHAN_RECORD);
	assert_int_equal(deliver(&p.s, &f1, NULL, &got, plain), CTL_HA_CHAN_FAIL);
	/* reordered */
	assert_true(handshake(&p, psk, psk));
	seal(&p.c, &r1, &f1);
	seal(&p.c, &r2, &f2);
	assert_int_equal(deliver(&p.s, &f2, NULL, &got, plain), CTL_HA_CHAN_FAIL);
	assert_int_equal(deliver(&p.s, &f1, NULL, &got, plain), CTL_HA_CHAN_FAIL);
	/* cut short, its length told so */
	assert_true(handshake(&p, psk, psk));
	seal(&p.c, &r1, &f1);
	cut = f1;
	cut.len--;
	cut.b[1]--;
	assert_int_equal(deliver(&p.s, &cut, NULL, &got, plain), CTL_HA_CHAN_FAIL);
	/* one bit flipped: the record's first byte, the tag's last */
	for (int i = 0; i < 2; i++) {
		assert_true(handshake(&p, psk, psk));
		seal(&p.c, &r1, &f1);
		f1.b[i == 0 ? 3 : f1.len - 1] ^= 1;
		assert_int_equal(deliver(&p.s, &f1, NULL, &got, plain), CTL_HA_CHAN_FAIL);
	}
}

static void
test_wrong_key(void **state)
{
	uint8_t other[CTL_HA_PSK_BYTES] = { 9 };
	struct pair p;

	(void)state;
	assert_false(handshake(&p, psk, other));
	assert_int_equal(p.c.state, CTL_HA_CHAN_BROKEN);
	assert_int_equal(p.confirm.len, 0);
	/* a server with the wrong key never opens even when its reply is taken */
	assert_false(handshake(&p, other, psk));
}

static void
test_psk_file(void **state)
{
	char path[] = "/tmp/test_ctl_ha_psk.XXXXXX", err[256];
	uint8_t k[CTL_HA_PSK_BYTES];
	FILE *f;
	int fd;

	(void)state;
	assert_true((fd = mkstemp(path)) >= 0);
	assert_non_null(f = fdopen(fd, "w"));
	fputs("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n", f);
	fclose(f);
	assert_int_equal(ctl_ha_psk_read(path, k, err, sizeof(err)), 0);
	assert_int_equal(k[0], 0);
	assert_int_equal(k[31], 0x1f);
	chmod(path, 0644);
	assert_int_equal(ctl_ha_psk_read(path, k, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "readable by its owner only"));
	chmod(path, 0600);
	assert_non_null(f = fopen(path, "w"));
	fputs("0001020304\n", f);
	fclose(f);
	assert_int_equal(ctl_ha_psk_read(path, k, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "32 bytes in 64 hex digits"));
	unlink(path);
	assert_int_equal(ctl_ha_psk_read(path, k, err, sizeof(err)), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_records),
		cmocka_unit_test(test_records_refused),
		cmocka_unit_test(test_flow_refused),
		cmocka_unit_test(test_state_records_refused),
		cmocka_unit_test(test_frames),
		cmocka_unit_test(test_session),
		cmocka_unit_test(test_session_replayed),
		cmocka_unit_test(test_frame_replayed),
		cmocka_unit_test(test_wrong_key),
		cmocka_unit_test(test_psk_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * dataplane/worker/dp_dns_pending.c, the table of DNS queries in flight, held to a model:
 * a plain list of what was remembered. Thousands of random steps (queries added under
 * fresh IDs and ports or their own, answers matched by key and question, entries deleted
 * and aged)
 * and after each the table says what the list says: the same entries found, the same
 * refused (an ID taken, a VM at its share, the table at its cap), the same counts per VM.
 * A small table filled to its cap puts keys in both buckets of the index.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_malloc.h>
#include <rte_random.h>

#include "dns_builder.h"
#include "dp_dns_int.h"
#include "dp_dns_pending.h"
#include "dp_dns_pending_add.h"
#include "dp_hash.h"
#include "t_eal.h"

#define T_CAP		64	/* 16 buckets of the index: full, keys spill to the other */
#define T_VMS		4
#define T_SHARE		24	/* a VM's share: three VMs together fill the table */
#define T_STEPS		20000
#define T_MANY		(T_CAP / 2)	/* well within the index's room whatever the IDs */

/* The model's entry: what the table was asked to remember, and the entry it gave. */
struct t_model {
	bool live;
	struct dp_pending_entry *e;
	struct pkt out;		/* the query as the VM sent it */
	struct dns_msg q;
	uint8_t msg[64];	/* its message: the name's spelling */
	uint64_t expires;
};

static struct t_model model[T_CAP];
static unsigned int per_vm[T_VMS + 1];

/*
 * A query from vm's port sport to resolver res, id, for a name of a few random letters,
 * now and then a longer one, whose compare takes words and a tail.
 */
static void
t_query(struct t_model *m, uint16_t vm, uint16_t sport, uint8_t res, uint16_t id)
{
	uint8_t n = (uint8_t)(rand() % 4 != 0 ? 1 + rand() % 6 : 7 + rand() % 40);

	memset(m, 0, sizeof(*m));
	m->out.family = 4;
	m->out.proto = PKT_PROTO_UDP;
	m->out.src[0] = 10;
	m->out.src[3] = (uint8_t)vm;
	m->out.dst[0] = 10;
	m->out.dst[3] = res;
	m->out.sport = sport;
	m->out.dport = 53;
	m->q.id = id;
	m->q.has_question = true;
	m->q.qtype = (uint16_t)(1 + rand() % 2);
	m->q.qclass = DNS_CLASS_IN;
	m->q.qname_len = (uint8_t)(n + 2);
	m->q.qname[0] = n;
	for (uint8_t i = 1; i <= n; i++)
		m->q.qname[i] = (uint8_t)('a' + rand() % 3);	/* few names: some the same */
	m->q.qname[n + 1] = 0;
	memcpy(m->msg + DNS_HDR_LEN, m->q.qname, m->q.qname_len);
}

/* The answer to m's query as it comes back: to the port it left from, from the resolver. */
static void
t_answer(const struct t_model *m, struct pkt *back, struct dns_msg *a)
{
	*back = m->out;
	memcpy(back->src, m->out.dst, 4);
	memcpy(back->dst, m->out.src, 4);
	back->sport = 53;
	back->dport = m->e->key.port;
	*a = m->q;
	a->qr = true;
	a->id = m->e->key.id;
}

/* Is there a live entry of the model with vm's key (port, res, id)? */
static bool
t_model_has(uint16_t vm, uint16_t port, uint8_t res, uint16_t id)
{
	for (unsigned int i = 0; i < T_CAP; i++)
		if (model[i].live && model[i].e->key.vm == vm && model[i].e->key.port == port &&
		    model[i].out.dst[3] == res && model[i].e->key.id == id)
			return true;
	return false;
}

static unsigned int
t_model_count(void)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i <= T_VMS; i++)
		n += per_vm[i];
	return n;
}

/* Add a query to the table and the model alike; what the table did, as the model says. */
static void
t_add(struct dp_pending *t, uint64_t now)
{
	uint16_t vm = (uint16_t)(rand() % (T_VMS + 2));	/* one past the table's VMs */
	/* ports below the range namegate draws from: a kept key never meets a drawn one */
	uint16_t sport = (uint16_t)(1000 + rand() % 4), id = (uint16_t)(rand() % 8);
	uint8_t res = (uint8_t)(1 + rand() % 2);
	bool keep_id = rand() % 2 == 0;
	struct dp_pending_entry *e;
	enum dp_reason why;
	struct t_model m;
	unsigned int free_at = T_CAP;

	t_query(&m, vm, sport, res, id);
	e = dp_pending_add(t, &m.out, vm, &m.q, m.msg, now, keep_id, T_SHARE, &why);
	if (vm > T_VMS || per_vm[vm] >= T_SHARE) {
		assert_null(e);
		assert_int_equal(why, DP_REASON_VM_LIMIT);
		return;
	}
	assert_int_equal(why, DP_REASON_ALLOWED);
	if (keep_id && t_model_has(vm, sport, res, id)) {
		assert_null(e);
		return;
	}
	if (t_model_count() == T_CAP) {
		assert_null(e);
		return;
	}
	if (e == NULL) {
		/* random IDs all taken four times over, or the index's search for room failed */
		assert_true(t_model_count() >= T_CAP * 3 / 4);
		return;
	}
	assert_int_equal(e->key.vm, vm);
	assert_int_equal(e->vm_id, id);
	assert_int_equal(e->vm_port, sport);
	if (keep_id) {
		assert_int_equal(e->key.id, id);
		assert_int_equal(e->key.port, sport);
	} else {
		assert_true(e->key.port >= 1024);
		assert_false(t_model_has(vm, e->key.port, res, e->key.id));
	}
	for (unsigned int i = 0; i < T_CAP; i++) {
		assert_false(model[i].live && model[i].e == e);
		if (!model[i].live && free_at == T_CAP)
			free_at = i;
	}
	assert_true(free_at < T_CAP);
	m.live = true;
	m.e = e;
	m.expires = now + DP_PENDING_SECONDS;
	model[free_at] = m;
	per_vm[vm]++;
}

/* Every live entry's answer finds it; a wrong ID, question or VM finds nothing of it. */
static void
t_check(struct dp_pending *t)
{
	for (unsigned int i = 0; i < T_CAP; i++) {
		struct dp_pending_entry *e;
		struct dns_msg a;
		struct pkt back;

		if (!model[i].live)
			continue;
		t_answer(&model[i], &back, &a);
		assert_ptr_equal(dp_pending_match(t, &back, model[i].e->key.vm, &a), model[i].e);
		a.id ^= 0x100;	/* above every ID the steps give a query of their own */
		if (!t_model_has(model[i].e->key.vm, model[i].e->key.port, model[i].out.dst[3],
		    a.id))
			assert_null(dp_pending_match(t, &back, model[i].e->key.vm, &a));
		a.id ^= 0x100;
		a.qtype ^= 3;	/* A and AAAA swapped: another question on the same key */
		assert_null(dp_pending_match(t, &back, model[i].e->key.vm, &a));
		a.qtype ^= 3;
		/* another name of the same length, whichever byte differs */
		for (unsigned int k = 0; k < a.qname_len; k++) {
			a.qname[k] ^= 0x20;
			assert_null(dp_pending_match(t, &back, model[i].e->key.vm, &a));
			a.qname[k] ^= 0x20;
		}
		e = dp_pending_match(t, &back, (uint16_t)(model[i].e->key.vm + 1), &a);
		assert_true(e == NULL || e != model[i].e);
	}
	for (uint16_t vm = 0; vm <= T_VMS; vm++)
		assert_int_equal(dp_pending_count(t, vm), per_vm[vm]);
}

static void
t_del(struct dp_pending *t)
{
	unsigned int i = (unsigned int)rand() % T_CAP;

	if (!model[i].live)
		return;
	dp_pending_del(t, model[i].e);
	model[i].live = false;
	per_vm[model[i].e->key.vm]--;
}

/* Aged: all that waited past their time, and only those (the whole table is one sweep). */
static void
t_age(struct dp_pending *t, uint64_t now)
{
	unsigned int expired = 0;

	for (unsigned int i = 0; i < T_CAP; i++)
		if (model[i].live && model[i].expires <= now) {
			model[i].live = false;
			per_vm[model[i].e->key.vm]--;
			expired++;
		}
	assert_int_equal(dp_pending_age(t, now, T_CAP), expired);
}

static void
test_table_as_the_model(void **state)
{
	struct dp_pending *t = dp_pending_create("t_pending_model", T_CAP, T_VMS, SOCKET_ID_ANY);
	uint64_t now = 0;

	(void)state;
	assert_non_null(t);
	srand(25);
	for (unsigned int step = 0; step < T_STEPS; step++) {
		int what = rand() % 16;

		if (what < 10)
			t_add(t, now);
		else if (what < 14)
			t_del(t);
		else if (what == 14)
			now++;
		else
			t_age(t, now);
		t_check(t);
	}
	dp_pending_free(t);
}

/* Filled to its cap with every VM's share in use: every entry still found. */
static void
test_full_table_finds_all(void **state)
{
	struct dp_pending *t = dp_pending_create("t_pending_full", T_CAP, T_VMS, SOCKET_ID_ANY);
	unsigned int n = 0;

	(void)state;
	assert_non_null(t);
	memset(model, 0, sizeof(model));
	memset(per_vm, 0, sizeof(per_vm));
	for (unsigned int i = 0; i < 4 * T_CAP && n < T_CAP; i++) {
		struct t_model *m = &model[n];
		uint16_t vm = (uint16_t)(i % T_VMS);
		enum dp_reason why;

		t_query(m, vm, (uint16_t)(2000 + i), 1, (uint16_t)i);
		if ((m->e = dp_pending_add(t, &m->out, vm, &m->q, m->msg, 0, false, T_CAP,
		    &why)) == NULL)
			continue;
		m->live = true;
		per_vm[vm]++;
		n++;
	}
	/* the index holds the cap at 80 % of its slots: only its search could stop short */
	assert_true(n >= T_CAP - 2);
	t_check(t);
	dp_pending_free(t);
}

/*
 * Over IPv6 the key holds all 16 bytes of the resolver's address: an answer from an
 * address one byte off, or over IPv4 from its first four, matches nothing.
 */
static void
test_v6_resolver_whole(void **state)
{
	struct dp_pending *t = dp_pending_create("t_pending_v6", T_CAP, T_VMS, SOCKET_ID_ANY);
	struct dns_msg a;
	enum dp_reason why;
	struct t_model m;
	struct pkt back;

	(void)state;
	assert_non_null(t);
	t_query(&m, 1, 3000, 1, 7);
	m.out.family = 6;
	for (unsigned int i = 0; i < 16; i++)
		m.out.dst[i] = (uint8_t)(0xf0 + i);
	m.e = dp_pending_add(t, &m.out, 1, &m.q, m.msg, 0, false, T_CAP, &why);
	assert_non_null(m.e);
	t_answer(&m, &back, &a);
	memcpy(back.src, m.out.dst, 16);
	assert_ptr_equal(dp_pending_match(t, &back, 1, &a), m.e);
	for (unsigned int i = 0; i < 16; i++) {
		back.src[i] ^= 1;
		assert_null(dp_pending_match(t, &back, 1, &a));
		back.src[i] ^= 1;
	}
	back.family = 4;
	assert_null(dp_pending_match(t, &back, 1, &a));
	dp_pending_free(t);
}

/*
 * By hand, beside the model: a key added again finds the
 * ID taken, leaving that query's entry as it was; an answer is matched by key and
 * question.
 */
/* A query with ID id for label.example.com A, into d and parsed into *q. */
static void
t_parsed(struct mb *d, struct dns_msg *q, uint16_t id, const char *label)
{
	d->len = 0;
	mb_query(d, id, label, strlen(label));
	assert_int_equal(dns_msg_parse(d->b, d->len, q), DNS_OK);
}

/* The VM's query from sport to the resolver, and its answer coming back. */
static void
t_query_pkts(struct pkt *out, struct pkt *back, uint16_t sport)
{
	static const uint8_t vm[4] = { 10, 77, 0, 11 }, res[4] = { 10, 77, 0, 1 };

	memset(out, 0, sizeof(*out));
	out->family = 4;
	out->proto = PKT_PROTO_UDP;
	memcpy(out->src, vm, 4);
	memcpy(out->dst, res, 4);
	out->sport = sport;
	out->dport = 53;
	*back = *out;
	memcpy(back->src, res, 4);
	memcpy(back->dst, vm, 4);
	back->sport = 53;
	back->dport = sport;
}

/* Over TCP the VM's own ID is kept: the same key again is refused, the first untouched. */
static void
test_taken_id_keeps_the_first(void **state)
{
	struct dp_pending *t = dp_pending_create("t_pending_keep", T_CAP, 4, SOCKET_ID_ANY);
	struct dp_pending_entry *e, *again;
	struct pkt out, back;
	enum dp_reason why;
	struct dns_msg q, a;
	struct mb d;

	(void)state;
	assert_non_null(t);
	t_query_pkts(&out, &back, 40000);
	t_parsed(&d, &q, 0x1234, "first");
	assert_non_null(e = dp_pending_add(t, &out, 0, &q, d.b, 0, true, T_CAP, &why));
	t_parsed(&d, &q, 0x1234, "second");
	assert_null(again = dp_pending_add(t, &out, 0, &q, d.b, 0, true, T_CAP, &why));
	assert_int_equal(why, DP_REASON_ALLOWED);
	assert_int_equal(dp_pending_count(t, 0), 1);
	/* the answer to the first still finds it; one to the second, nothing */
	t_parsed(&d, &a, 0x1234, "first");
	a.qr = true;
	assert_ptr_equal(dp_pending_match(t, &back, 0, &a), e);
	t_parsed(&d, &a, 0x1234, "second");
	a.qr = true;
	assert_null(dp_pending_match(t, &back, 0, &a));
	dp_pending_del(t, e);
	assert_int_equal(dp_pending_count(t, 0), 0);
	/* and the key, gone, may be taken again */
	assert_non_null(dp_pending_add(t, &out, 0, &q, d.b, 0, true, T_CAP, &why));
	dp_pending_free(t);
}

/* Fresh random IDs: every query remembered apart, and each answer finds its own. */
static void
test_many_apart(void **state)
{
	struct dp_pending *t = dp_pending_create("t_pending_many", T_CAP, 4, SOCKET_ID_ANY);
	struct dp_pending_entry *e[T_MANY];
	struct pkt out, back;
	enum dp_reason why;
	struct dns_msg q;
	struct mb d;

	(void)state;
	assert_non_null(t);
	t_parsed(&d, &q, 0x4321, "many");
	for (unsigned int i = 0; i < T_MANY; i++) {
		t_query_pkts(&out, &back, (uint16_t)(30000 + i % 4));	/* drawn keys: apart */
		assert_non_null(e[i] = dp_pending_add(t, &out, 1, &q, d.b, 0, false, T_CAP,
		    &why));
		assert_int_equal(e[i]->vm_id, 0x4321);
		for (unsigned int j = 0; j < i; j++)
			assert_ptr_not_equal(e[j], e[i]);
	}
	assert_int_equal(dp_pending_count(t, 1), T_MANY);
	for (unsigned int i = 0; i < T_MANY; i++) {
		struct dns_msg a = q;

		t_query_pkts(&out, &back, e[i]->key.port);
		a.qr = true;
		a.id = e[i]->key.id;
		assert_ptr_equal(dp_pending_match(t, &back, 1, &a), e[i]);
	}
	dp_pending_free(t);
}

/*
 * A query's port is namegate's, drawn with its ID (RFC 5452 s9.2): an accomplice of the
 * VM's that knows the port it sent from, and tries every ID there, finds no query; the
 * answer to the port the query left from does, and the VM's port is kept to restore.
 * Every port drawn is unprivileged, and the draws spread over the range.
 */
static void
test_fresh_port_is_drawn(void **state)
{
	struct dp_pending *t = dp_pending_create("t_pending_port", 1024, 4, SOCKET_ID_ANY);
	unsigned int low_half = 0, same = 0;
	struct dns_msg q, a;
	struct pkt out, back;
	struct mb d;
	enum dp_reason why;

	(void)state;
	t_parsed(&d, &q, 0x5151, "spray");
	assert_non_null(t);
	for (unsigned int n = 0; n < 4000; n++) {
		struct dp_pending_entry *e;

		t_query_pkts(&out, &back, 999);
		assert_non_null(e = dp_pending_add(t, &out, 2, &q, d.b, 0, false, 1024, &why));
		assert_int_equal(e->vm_port, 999);
		assert_true(e->key.port >= 1024);
		low_half += e->key.port < 1024 + (65536 - 1024) / 2;
		same += e->key.port == 999;
		a = q;
		a.qr = true;
		if (n < 16)	/* the spray: every ID at the VM's port */
			for (uint32_t id = 0; id <= 0xffff; id++) {
				a.id = (uint16_t)id;
				assert_null(dp_pending_match(t, &back, 2, &a));
			}
		a.id = e->key.id;
		back.dport = e->key.port;
		assert_ptr_equal(dp_pending_match(t, &back, 2, &a), e);
		dp_pending_del(t, e);
	}
	assert_int_equal(same, 0);
	assert_true(low_half > 1800 && low_half < 2200);
	dp_pending_free(t);
}

/*
 * The keys are not rte_rand()'s, whose state its outputs elsewhere (fragment IDs) could
 * give away: with its generator set back to the same seed, the next keys are new ones.
 */
static void
test_fresh_keys_are_not_rte_rand(void **state)
{
	struct dp_pending *t = dp_pending_create("t_pending_prf", 64, 4, SOCKET_ID_ANY);
	uint32_t first[8];
	unsigned int same = 0;

	(void)state;
	assert_non_null(t);
	rte_srand(42);
	for (int i = 0; i < 8; i++)
		first[i] = dp_pending_fresh(t);
	rte_srand(42);
	for (int i = 0; i < 8; i++)
		same += dp_pending_fresh(t) == first[i];
	assert_int_equal(same, 0);
	dp_pending_free(t);
}

/*
 * A VM's UDP queries of one question in flight are at most DP_PENDING_SAME_MAX (RFC 5452
 * s5: each is one more key a forged answer may hit): past them the next is refused
 * (vm_limit), while another question, another VM, or DNS over TCP (not counted) go; one
 * answered, or all aged, make room again. A and AAAA of one name are two questions.
 */
static void
test_same_question_bounded(void **state)
{
	struct dp_pending *t = dp_pending_create("t_pending_same", T_CAP, 4, SOCKET_ID_ANY);
	int32_t slot = dp_pending_same_slot(0x0123456789abcdefu, 1);
	struct dp_pending_entry *e[DP_PENDING_SAME_MAX];
	enum dp_reason why;
	struct pkt out, back;
	struct mb d;
	struct dns_msg q;

	(void)state;
	assert_int_not_equal(slot, dp_pending_same_slot(0x0123456789abcdefu, 28));
	assert_non_null(t);
	t_parsed(&d, &q, 0x7777, "same");
	t_query_pkts(&out, &back, 999);
	for (unsigned int round = 0; round < 2; round++) {
		for (unsigned int i = 0; i < DP_PENDING_SAME_MAX; i++)
			assert_non_null(e[i] = dp_pending_add_in(t, &out, 1, &q, d.b, 0, false,
			    slot, T_CAP, &why));
		assert_null(dp_pending_add_in(t, &out, 1, &q, d.b, 0, false, slot, T_CAP, &why));
		assert_int_equal(why, DP_REASON_VM_LIMIT);
		assert_non_null(dp_pending_add_in(t, &out, 1, &q, d.b, 0, false, slot ^ 1, T_CAP,
		    &why));
		assert_non_null(dp_pending_add_in(t, &out, 2, &q, d.b, 0, false, slot, T_CAP,
		    &why));
		assert_non_null(dp_pending_add(t, &out, 1, &q, d.b, 0, true, T_CAP, &why));
		dp_pending_del(t, e[3]);	/* answered: room for one */
		assert_non_null(dp_pending_add_in(t, &out, 1, &q, d.b, 0, false, slot, T_CAP,
		    &why));
		assert_null(dp_pending_add_in(t, &out, 1, &q, d.b, 0, false, slot, T_CAP, &why));
		/* aged, every one: the next round finds the count at zero */
		assert_int_equal(dp_pending_age(t, DP_PENDING_SECONDS, T_CAP),
		    DP_PENDING_SAME_MAX + 3);
	}
	dp_pending_free(t);
}

/* A query for a label: its message (d), parsed (q), and the packet it leaves the VM in. */
struct t_question {
	struct mb d;
	struct dns_msg q;
	struct pkt out;
};

static void
t_one_question(struct t_question *x, const char *label)
{
	struct pkt back;

	t_parsed(&x->d, &x->q, 0x7777, label);
	t_query_pkts(&x->out, &back, 999);
}

/*
 * Two questions whose slots meet in one row of the sketch are counted apart by the other:
 * each has its DP_PENDING_SAME_MAX in flight, and each one's next is refused. With one row,
 * the second question would be refused at once.
 */
static void
test_questions_sharing_a_slot_counted_apart(void **state)
{
	struct dp_pending *t = dp_pending_create("t_pending_share", T_CAP, 4, SOCKET_ID_ANY);
	int32_t a = dp_pending_same_slot(0x0123456789abcdefu, 1);
	int32_t b[DP_PENDING_SAME_ROWS];
	struct t_question x;
	enum dp_reason why;

	(void)state;
	assert_non_null(t);
	t_one_question(&x, "share");
	/* b[r]: a's slot in row r, another in every other row */
	for (unsigned int r = 0; r < DP_PENDING_SAME_ROWS; r++) {
		b[r] = 0;
		for (unsigned int o = 0; o < DP_PENDING_SAME_ROWS; o++)
			b[r] |= (int32_t)((o == r ? dp_pending_same_at(a, o) :
			    (dp_pending_same_at(a, o) + 1) % DP_PENDING_SAME_SLOTS) << (16 * o));
	}
	for (unsigned int i = 0; i < DP_PENDING_SAME_MAX; i++)
		assert_non_null(dp_pending_add_in(t, &x.out, 1, &x.q, x.d.b, 0, false, a, T_CAP, &why));
	for (unsigned int r = 0; r < DP_PENDING_SAME_ROWS; r++) {
		for (unsigned int i = 0; i < DP_PENDING_SAME_MAX; i++)
			assert_non_null(dp_pending_add_in(t, &x.out, 1, &x.q, x.d.b, 0, false, b[r],
			    T_CAP, &why));
		assert_null(dp_pending_add_in(t, &x.out, 1, &x.q, x.d.b, 0, false, b[r], T_CAP, &why));
		assert_int_equal(why, DP_REASON_VM_LIMIT);
	}
	assert_null(dp_pending_add_in(t, &x.out, 1, &x.q, x.d.b, 0, false, a, T_CAP, &why));
	assert_int_equal(why, DP_REASON_VM_LIMIT);
	dp_pending_free(t);
}

/*
 * A VM with a thousand questions in flight, one query each (a stub resolving a lockfile's
 * hosts at once), has none refused: the single row of 256 slots this sketch replaced
 * refused 7 of them. The hashes stand for dp_name_hash()'s, keyed.
 */
static void
test_thousand_questions_none_refused(void **state)
{
	const unsigned int cap = 2048, n = 1000;
	struct dp_pending *t = dp_pending_create("t_pending_many_q", cap, 4, SOCKET_ID_ANY);
	uint64_t hash = 0x243f6a8885a308d3u;
	unsigned int refused = 0;
	struct t_question x;
	enum dp_reason why;

	(void)state;
	assert_non_null(t);
	t_one_question(&x, "many");
	for (unsigned int i = 0; i < n; i++) {
		hash = dp_hash_bytes(&hash, sizeof(hash));
		refused += dp_pending_add_in(t, &x.out, 1, &x.q, x.d.b, 0, false,
		    dp_pending_same_slot(hash, 1), cap, &why) == NULL;
	}
	assert_int_equal(refused, 0);
	assert_int_equal(dp_pending_count(t, 1), n);
	dp_pending_free(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_as_the_model),
		cmocka_unit_test(test_questions_sharing_a_slot_counted_apart),
		cmocka_unit_test(test_thousand_questions_none_refused),
		cmocka_unit_test(test_full_table_finds_all),
		cmocka_unit_test(test_v6_resolver_whole),
		cmocka_unit_test(test_taken_id_keeps_the_first),
		cmocka_unit_test(test_many_apart),
		cmocka_unit_test(test_fresh_port_is_drawn),
		cmocka_unit_test(test_fresh_keys_are_not_rte_rand),
		cmocka_unit_test(test_same_question_bounded),
	};

	return T_EAL_RUN_AFTER("test_dp_dns_pending", "64", tests, dp_hash_init());
}

/* See dp_ctx_fixture.h. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>

#include "dns_builder.h"
#include "dp.h"
#include "dp_bind.h"
#include "dp_hash.h"
#include "dp_ctx_fixture.h"
#include "dp_publish.h"
#include "dp_tls.h"
#include "policy/load.h"
#include "sni/frame.h"

static int
dpf_start(const char *name, const char *config, struct dp_ctx *ctx, struct pol_config **cfg)
{
	char prefix[32];
	char *argv[] = {
		(char *)name, (char *)"--no-huge", (char *)"-m", (char *)"256",
		(char *)"--no-pci", (char *)"--no-shconf", (char *)"--no-telemetry",	/* no files */
		(char *)"--file-prefix", prefix, (char *)"-l", (char *)"0-1",
		(char *)"--vdev", (char *)"net_null0", (char *)"--vdev", (char *)"net_null1",
		(char *)"--log-level", (char *)"*:error", NULL,
	};
	struct pol_errs errs = { 0 };

	snprintf(prefix, sizeof(prefix), "%s_%d", name, (int)getpid());
	if (rte_eal_init((int)(sizeof(argv) / sizeof(argv[0])) - 1, argv) < 0)
		return -1;
	if ((*cfg = pol_load_buffer(config, strlen(config), "t.yaml", &errs)) == NULL) {
		pol_errs_print(stderr, &errs);
		return -1;
	}
	if (dp_ctx_setup(ctx, *cfg) != 0)
		return -1;
	ctx->workers[0]->now = dp_now(ctx);
	/* this thread plays worker 0 */
	rte_rcu_qsbr_thread_register(ctx->qsbr, 0);
	rte_rcu_qsbr_thread_online(ctx->qsbr, 0);
	return 0;
}

void
dpf_expire_holds(struct dp_worker *w)
{
	w->now += DP_VERIFY_SECONDS;
	for (uint32_t n = 0; n <= w->holds->n / 64; n++)	/* a slice of 64 a round */
		dp_tls_expire(w);
}

int
dpf_run(const char *name, const char *config, struct dp_ctx *ctx, struct dp_worker **w,
    const struct CMUnitTest *tests, size_t n)
{
	struct pol_config *cfg;
	int rc;

	if (dpf_start(name, config, ctx, &cfg) != 0)
		return 1;
	*w = ctx->workers[0];
	rc = _cmocka_run_group_tests(name, tests, n, NULL, NULL);
	dp_ctx_teardown(ctx);
	pol_config_free(cfg);
	rte_eal_cleanup();
	rmdir(rte_eal_get_runtime_dir());	/* left empty: no shconf, no telemetry */
	return rc;
}

struct pol_config *
dpf_load(const char *text)
{
	struct pol_errs errs = { 0 };
	struct pol_config *cfg = pol_load_buffer(text, strlen(text), "t.yaml", &errs);

	if (cfg == NULL)
		pol_errs_print(stderr, &errs);
	assert_non_null(cfg);
	pol_errs_free(&errs);
	return cfg;
}

int
dpf_publish(struct dp_ctx *ctx, struct dp_worker *w, const struct pol_config *cfg,
    const struct ctl_names *names)
{
	int rc;

	rte_rcu_qsbr_thread_offline(ctx->qsbr, 0);
	rc = dp_publish(ctx, cfg, names, false, stderr);
	rte_rcu_qsbr_thread_online(ctx->qsbr, 0);
	w->gen = atomic_load(&ctx->gen);
	return rc;
}

void
dpf_eth_ipv4(struct mb *f, const uint8_t *smac, const uint8_t *dmac, uint8_t proto,
    const uint8_t *sip, const uint8_t *dip, size_t l4_len)
{
	uint32_t sum = 0;
	size_t ip;

	mb_bytes(f, dmac, 6);
	mb_bytes(f, smac, 6);
	mb_u16(f, 0x0800);
	ip = f->len;
	mb_u8(f, 0x45);
	mb_u8(f, 0);
	mb_u16(f, (unsigned int)(20 + l4_len));
	mb_u32(f, 0x40000000);		/* ID 0, DF */
	mb_u8(f, 64);
	mb_u8(f, proto);
	mb_u16(f, 0);
	mb_bytes(f, sip, 4);
	mb_bytes(f, dip, 4);
	for (size_t i = ip; i < ip + 20; i += 2)
		sum += (uint32_t)f->b[i] << 8 | f->b[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	f->b[ip + 10] = (uint8_t)(~sum >> 8);
	f->b[ip + 11] = (uint8_t)~sum;
}

struct rte_mbuf *
dpf_mbuf(const struct dp_ctx *ctx, const struct mb *f)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(ctx->pool);

	assert_non_null(m);
	memcpy(rte_pktmbuf_mtod(m, uint8_t *), f->b, f->len);
	m->data_len = (uint16_t)f->len;
	m->pkt_len = (uint32_t)f->len;
	return m;
}

struct rte_mbuf *
dpf_mbuf_copy(const struct dp_ctx *ctx, const struct rte_mbuf *m)
{
	struct rte_mbuf *out = rte_pktmbuf_alloc(ctx->pool);

	assert_non_null(out);
	memcpy(rte_pktmbuf_mtod(out, uint8_t *), rte_pktmbuf_mtod(m, const uint8_t *),
	    rte_pktmbuf_data_len(m));
	out->data_len = rte_pktmbuf_data_len(m);
	out->pkt_len = rte_pktmbuf_data_len(m);
	out->ol_flags = m->ol_flags;
	return out;
}

struct rte_mbuf *
dpf_udp4(const struct dp_ctx *ctx, const uint8_t *smac, const uint8_t *dmac, const uint8_t *sip,
    const uint8_t *dip, uint16_t sport, uint16_t dport, const struct mb *d)
{
	struct mb f = { .len = 0 };

	dpf_eth_ipv4(&f, smac, dmac, 17, sip, dip, 8 + d->len);
	mb_u16(&f, sport);
	mb_u16(&f, dport);
	mb_u16(&f, (unsigned int)(8 + d->len));
	mb_u16(&f, 0);
	mb_bytes(&f, d->b, d->len);
	return dpf_mbuf(ctx, &f);
}

struct rte_mbuf *
dpf_tcp4(const struct dp_ctx *ctx, const struct dpf_tcp *t)
{
	struct mb f = { .len = 0 };

	dpf_eth_ipv4(&f, t->smac, t->dmac, 6, t->sip, t->dip, 20 + t->len);
	mb_u16(&f, t->sport);
	mb_u16(&f, t->dport);
	mb_u32(&f, t->seq);
	mb_u32(&f, t->ack);
	mb_u8(&f, 5 << 4);
	mb_u8(&f, t->flags);
	mb_u16(&f, 65535);
	mb_u32(&f, 0);			/* checksum, urgent pointer */
	if (t->len > 0)
		mb_bytes(&f, t->payload, t->len);
	frame_tcp_csum_set(f.b + 14, 4, f.b + 34, 20 + t->len);
	return dpf_mbuf(ctx, &f);
}

void
dpf_bind4(struct dp_worker *w, uint16_t vm, const uint8_t *ip4, const char *name)
{
	struct pol_addr a = { .family = 4 };
	struct pol_ports ports;

	memcpy(a.a, ip4, 4);
	assert_true(pol_match_name_ports(w->gen->set, w->gen->vms[vm].policy, name, strlen(name),
	    &ports));
	assert_int_equal(dp_bind_learn(w->ctx->binds, vm, &a, dp_name_hash(name, strlen(name)),
	    &ports, w->gen->id, w->now + 300, 1024), 0);
}

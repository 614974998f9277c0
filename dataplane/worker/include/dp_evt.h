/*
 * Events from a worker to the main lcore (dataplane/api/dp_api.h records on the worker's
 * own ring). Never blocks: a full ring drops a block event and counts it; a binding's
 * event is asked room for first (dp_evt_bind_room()), so it is never dropped.
 */
#ifndef DP_EVT_H
#define DP_EVT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include <rte_cycles.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>
#include <rte_ring_peek_zc.h>

#include "api/dp_api.h"
#include "dp.h"
#include "dp_flow.h"
#include "sni/copy8.h"
#include "sni/pkt.h"

#define DP_EVT_RING	16384	/* events a worker may have waiting */
#define DP_EVT_VM_PER_SECOND	100	/* block events one VM may queue a second, per worker:
					 * more than the log's per-VM rate and burst */

/*
 * After putting something on a ring the main lcore drains: wake it if it announced a sleep.
 * The fence orders the enqueue before the flag's load, as the main lcore's orders its flag
 * store before its last look at the rings (Dekker): either it sees the entry or we see the
 * flag. The exchange lets only one worker write; the write is the one syscall a worker
 * makes, once per main-lcore sleep (at most ~1000 a second at 1 answer/ms), on the DNS
 * answer and exception paths only.
 */
static inline void
dp_main_wake(struct dp_ctx *ctx)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&ctx->main_asleep, memory_order_relaxed) &&
	    atomic_exchange_explicit(&ctx->main_asleep, false, memory_order_relaxed) &&
	    ctx->wake_fd >= 0)
		(void)eventfd_write(ctx->wake_fd, 1);
}

/* Worker id's ring of kind ("evt", "bind"); NULL and rte_errno on failure. */
struct rte_ring *dp_evt_ring_create(const char *kind, unsigned int id, int socket);

/* Whether a binding event of vm fits on the worker's bind ring now. */
enum dp_evt_room {
	DP_EVT_ROOM_OK,
	DP_EVT_ROOM_VM_SHARE,	/* vm holds its share already: charged to vm */
	DP_EVT_ROOM_FULL,	/* the ring is full of other VMs' events */
};

/*
 * Room for n more binding events of vm? The worker is the ring's only producer, so what
 * this says stays true until it enqueues. A VM may have in flight at most as many as
 * the ring has free after them (so one VM alone takes half of it, two a third each...):
 * a VM that binds in a loop fills its own share, and a quiet neighbour still finds room.
 * Inline: every DNS answer asks once.
 */
static inline enum dp_evt_room
dp_evt_bind_room(struct dp_worker *w, uint16_t vm, unsigned int n)
{
	unsigned int free = rte_ring_free_count(w->bind_evts);
	uint64_t inflight = w->vm_stats[vm].bind_queued -
	    atomic_load_explicit(&w->bind_taken[vm], memory_order_relaxed);

	if (free < n && inflight == 0)
		return DP_EVT_ROOM_FULL;
	if (free < n || inflight + n > free - n)
		return DP_EVT_ROOM_VM_SHARE;
	return DP_EVT_ROOM_OK;
}

/*
 * DNS bound addr for (vm, name) for ttl seconds, until expires (seconds since start). The
 * caller made sure of room (dp_evt_bind_room()): a binding never lives without its event.
 */
void dp_evt_bind(struct dp_worker *w, uint16_t vm, const struct pol_addr *addr,
    const char *name, size_t len, uint32_t ttl, uint64_t expires,
    const struct pol_ports *ports);

/*
 * What the binding events of one DNS answer share: its VM, the generation that judged its
 * name, the name and the ports it opens (as the record carries them), found once.
 */
struct dp_evt_binder {
	uint16_t vm;
	uint8_t name_len;
	uint32_t gen;
	struct dp_evt_ports ports;
	const char *name;		/* lives as long as the binder */
};

void dp_evt_binder_init(struct dp_evt_binder *b, uint16_t vm, uint32_t gen, const char *name,
    size_t len, const struct pol_ports *ports);

/*
 * Every byte of a slot zeroed, sixteen a store: gcc writes a memset() of a record as rep
 * stosq, 41 steps where 21 stores do. The zero comes out of an empty asm, which gcc cannot
 * see into, so that it does not fold the stores back into that memset().
 */
static inline __attribute__((always_inline)) void
dp_evt_zero(struct dp_evt *e)
{
	uint8_t *p = (uint8_t *)e;
#ifdef __SSE2__
	__m128i z = _mm_setzero_si128();

	__asm__("" : "+x"(z));
#pragma GCC unroll 32
	for (size_t i = 0; i + 16 <= sizeof(*e); i += 16)
		_mm_storeu_si128((__m128i *)(void *)(p + i), z);
	memset(p + sizeof(*e) / 16 * 16, 0, sizeof(*e) % 16);
#else
	memset(p, 0, sizeof(*e));
#endif
}

/*
 * A record written where it goes: a slot of ring r, zeroed (no byte of an earlier record
 * reaches the main lcore), or NULL, counted, when the ring is full. The caller hands it
 * over (rte_ring_enqueue_zc_elem_finish()). The rings have one producer, so the slot is the
 * worker's until then, and whole: a ring of records never wraps inside one.
 */
static inline __attribute__((always_inline)) struct dp_evt *
dp_evt_slot(struct dp_worker *w, struct rte_ring *r)
{
	struct rte_ring_zc_data zcd;

	if (rte_ring_enqueue_zc_bulk_elem_start(r, sizeof(struct dp_evt), 1, &zcd, NULL) != 1) {
		w->evt_dropped++;
		return NULL;
	}
	dp_evt_zero(zcd.ptr1);
	return zcd.ptr1;
}

/*
 * dp_evt_bind() of one of b's answer's addresses, without waking the main lcore: the
 * caller does (dp_main_wake()) once the answer's last event is on the ring. Inline: each
 * address an answer binds passes here, and the call and its spills were a tenth of it.
 */
static inline __attribute__((always_inline)) void
dp_evt_bind_quiet(struct dp_worker *w, const struct dp_evt_binder *b,
    const struct pol_addr *addr, uint32_t ttl, uint64_t expires)
{
	struct dp_evt *e;

	w->vm_stats[b->vm].bind_queued++;
	if ((e = dp_evt_slot(w, w->bind_evts)) == NULL)
		return;
	e->version = DP_API_VERSION;
	e->type = DP_EVT_BIND;
	e->vm = b->vm;
	e->family = addr->family;
	e->ttl = ttl;
	e->tsc = rte_get_tsc_cycles();
	e->expires = expires;
	e->gen = b->gen;
	e->ports = b->ports;
	memcpy(e->addr, addr->a, sizeof(e->addr));
	e->name_len = b->name_len;
	copy16((uint8_t *)e->name, (const uint8_t *)b->name, b->name_len);
	rte_ring_enqueue_zc_elem_finish(w->bind_evts, 1);
}

/* The ports a binding under summary p opens, as its record and the slow path carry them. */
/*
 * Worker w admitted a new question (name, len bytes; qtype) of vm under a wildcard whose
 * suffix is the last suffix_len bytes: for the HA peer (DP_EVT_NAME). Not limited per VM:
 * the name budget itself bounds how many a VM gets admitted.
 */
void dp_evt_name_new(struct dp_worker *w, uint16_t vm, const char *name, size_t len,
    uint16_t qtype, size_t suffix_len);

/* Main lcore: the HA peer's admitted question e (DP_EVT_NAME) to worker w; false if full. */
bool dp_evt_peer_name(struct dp_worker *w, struct dp_evt *e);

/* Worker w: up to n of the peer's questions into out; how many. */
unsigned int dp_evt_peer_take(struct dp_worker *w, struct dp_evt *out, unsigned int n);

void dp_evt_ports_of(const struct pol_ports *p, struct dp_evt_ports *out);

/* vm's connection or query p was blocked (would_block: it passed, audit mode). */
void dp_evt_block(struct dp_worker *w, uint16_t vm, const struct pkt *p, enum dp_reason r,
    bool would_block, const char *name, size_t len);

/* The same for the connection k (its VM, peer and port), when no one frame stands for it. */
void dp_evt_block_flow(struct dp_worker *w, const struct dp_flow_key *k, enum dp_reason r,
    bool would_block, const char *name, size_t len);

struct dp_ask_entry;

/*
 * A held query's start (DP_EVT_ASK, with its name) or end (DP_EVT_ASK_END, how). Not
 * charged to the VM's block budget: the ask table bounds them. A full ring loses the
 * record, counted: the request then only times out, unseen (fail closed).
 */
void dp_evt_ask(struct dp_worker *w, enum dp_evt_type type, const struct dp_ask_entry *e,
    uint8_t how, const char *name, size_t len);

/*
 * HA pair: flow f's verdict is final (DP_EVT_FLOW), or f ended (DP_EVT_FLOW_END), for the
 * peer. A full ring loses the record, counted (evt_dropped): the flow is then one the peer
 * cannot adopt, which fails closed.
 */
void dp_evt_flow(struct dp_worker *w, enum dp_evt_type type, const struct dp_flow *f);

/*
 * Main lcore: take up to n events from worker w's rings into out, bindings first, and
 * count the bindings as taken (their VMs' shares free up).
 */
unsigned int dp_evt_drain(struct dp_worker *w, struct dp_evt *out, unsigned int n);

#endif

/*
 * The daemon's side of the HA pair's sync stream (control/hasync/include/ctl_ha_sync.h):
 * the bindings this box's workers learn sent to the peer, with the whole table after each
 * new connection, and the peer's bindings installed in this box's own table, where its
 * workers find them when it takes over; likewise what the VMs spent of their egress
 * budgets (control/budgets) and, without a fleet store, the grants made on either box.
 * Main lcore only.
 */
#ifndef DP_HASYNC_H
#define DP_HASYNC_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct ctl_ha_rec;
struct ctl_ha_sync;
struct dp_control;
struct dp_evt;
struct dp_gen;
struct dp_names_ring;

struct dp_hasync {
	struct dp_control *ctl;
	struct ctl_ha_sync *sync;
	uint64_t installed;		/* the peer's bindings installed */
	uint64_t unknown_vm;		/* of a VM this box does not have */
	uint64_t refused;		/* the table said no (full, the VM's share) */
	uint64_t budget_in;		/* the peer's budget records counted here */
	uint64_t budget_unknown;	/* of a window this box does not have */
	uint64_t grants_in;		/* the peer's grants and revokes applied */
	uint64_t grants_refused;	/* refused here (why on stderr) */
	uint64_t names_in;		/* the peer's new DNS questions handed to a worker */
	uint64_t names_dropped;		/* that worker's queue was full */
	struct dp_names_ring *names;	/* the questions kept for a resync */
	uint64_t names_lost;		/* pushed out of it while their window ran */
	uint64_t resync_sent;		/* records in the resync so far */
	enum {
		DP_RESYNC_BINDS,	/* the mirror's places from resync_at */
		DP_RESYNC_GRANTS,	/* the live grants, all at once */
		DP_RESYNC_FLOWS,	/* the pair's flows from resync_at */
		DP_RESYNC_NAMES,	/* the DNS name budgets' questions from resync_at */
		DP_RESYNC_BUDGETS,	/* the budget windows from resync_at */
	} resync_phase;
	bool resyncing;			/* a resync goes on from resync_at */
	uint32_t resync_at;		/* the next place of the phase's walk */
	uint64_t flows_installed;	/* the peer's flow records kept for adoption */
	uint64_t flows_unnamed;		/* flows not sent: their name was not known here */
	uint64_t flows_sent;		/* flow records (and ends) queued for the peer */
	uint64_t expired_at;		/* the second the pair's flows were last expired in */
	uint32_t expire_at;		/* and the place the next expiry goes on from */
	uint64_t resynced_conn;		/* the peer's connection whose RESYNC_END is in */
	uint64_t resync_in_conn;	/* and the one whose RESYNC_BEGIN is, while resync_in */
	bool resync_in;			/* the peer's records are its resync's, not news */
};

/*
 * With ha.sync_peer or ha.sync_listen, reads ha.sync_key_file and starts the stream,
 * and has namegatectl ha show it. 0 (nothing without those keys), or -1 after saying why
 * on err.
 */
int dp_hasync_start(struct dp_hasync *d, struct dp_control *ctl, FILE *err);

/* A binding a worker learned (dp_control_drain()): to the peer. */
void dp_hasync_learned(struct dp_hasync *d, const struct dp_evt *e);

/* A flow a worker reported final, or its end (dp_control_drain()): kept, and to the peer. */
void dp_hasync_flow_event(struct dp_hasync *d, const struct dp_evt *e);

/*
 * dp_hasync_flow.c, for dp_hasync.c: the pair's flow table made (0, or -1 after saying
 * why on err); a peer's FLOW or FLOW_END record applied; the resync's flows, up to n from
 * place at (the next place returned, 0 when done); the lapsed records dropped (the event
 * loop's turn); their metrics. dp_hasync_slot(): the
 * running generation's slot for the VM named vm (len bytes), or -1.
 */
int dp_hasync_flows_start(struct dp_hasync *d, FILE *err);
void dp_hasync_flow_install(struct dp_hasync *d, const struct ctl_ha_rec *r);
uint32_t dp_hasync_flows_resync(struct dp_hasync *d, uint32_t at, uint32_t n);
void dp_hasync_flows_tick(struct dp_hasync *d);
void dp_hasync_flows_render(struct dp_hasync *d, FILE *out);
int dp_hasync_slot(const struct dp_gen *g, const char *vm, size_t len);

/*
 * dp_hasync_names.c: the pool of admitted questions made (0, -1 out of memory) and freed;
 * one admitted here or by the peer kept, for its VM's slot; the resync's, up to room from
 * place at (the next place returned, 0 when done).
 */
#define DP_HASYNC_NAMES		8192
int dp_hasync_names_start(struct dp_hasync *d);
void dp_hasync_names_free(struct dp_hasync *d);
void dp_hasync_names_keep(struct dp_hasync *d, uint16_t slot, const struct ctl_ha_rec *r);
uint32_t dp_hasync_names_resync(struct dp_hasync *d, uint32_t at, uint32_t room);

/* A new question a worker's name budget admitted (DP_EVT_NAME): to the peer. */
void dp_hasync_name_new(struct dp_hasync *d, const struct dp_evt *e);

/* The event loop's turn: a resync the peer wants, its records installed and acknowledged. */
void dp_hasync_tick(struct dp_hasync *d);

/* Whether the stream runs (ha.sync_peer or ha.sync_listen). */
bool dp_hasync_on(const struct dp_hasync *d);

/*
 * This box stalled: the peer's stream is dropped so that the peer resyncs. Returns a
 * ticket for dp_hasync_resynced().
 */
uint64_t dp_hasync_redo(struct dp_hasync *d);

/* Whether a resync of the peer's, begun after ticket conn was taken, is all installed. */
bool dp_hasync_resynced(const struct dp_hasync *d, uint64_t conn);

/* The stream's metrics (a scrape's thread). */
void dp_hasync_render(struct dp_hasync *d, FILE *out);

/* Stops the stream. */
void dp_hasync_stop(struct dp_hasync *d);

#endif

/*
 * What the daemon's main lcore offers the control concerns (control/): the one way to the
 * workers, plain C so control/ can use it without DPDK. The records the workers write the
 * other way are dp_api.h's; the main loop takes them once a turn, before it serves the
 * control socket, and hands each to the concern that serves its kind.
 */
#ifndef DP_PLANE_H
#define DP_PLANE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct dp_evt_ports;
struct pol_config;

/* A VM of the running generation, by its slot. */
struct dp_plane_vm {
	const char *name;	/* valid while that generation runs */
	uint32_t conf_policy;	/* its configured policy: its budgets are that policy's */
	uint8_t budgets;	/* how many egress budgets it has */
};

struct dp_plane {
	void *dp;
	unsigned int nworkers;
	/*
	 * Put cfg (the file's configuration, or a grants view of it; it must outlive the
	 * generation) in force on every worker, every name resolved so far (the records up
	 * to now taken first) judged under it, and the slow path's sets after it. closing (a
	 * change that ends or narrows what is allowed) never waits on room. 0, or -errno with
	 * a message on err and nothing changed.
	 */
	int (*generation)(void *dp, const struct pol_config *cfg, bool closing, FILE *err);
	/* The running generation's id. */
	uint32_t (*generation_id)(void *dp);
	/*
	 * What (VM slot, name) opens under the running generation, as its workers judge it
	 * again (the names a publish judged); nothing when it does not know the name.
	 */
	void (*name_ports)(void *dp, uint16_t slot, const char *name, struct dp_evt_ports *out);
	/* The running generation's VM slots, and slot's VM (false: none there). */
	uint16_t (*nslots)(void *dp);
	bool (*vm)(void *dp, uint16_t slot, struct dp_plane_vm *out);
	/* Budget use: the bytes worker w ever sent through (slot, budget b). */
	uint64_t (*budget_used)(void *dp, unsigned int w, uint16_t slot, unsigned int b);
	/*
	 * Budget allowance: worker w may send bytes more through (slot, budget b), counted
	 * from this epoch on (each new epoch resets what it spent); bytes 0: nothing.
	 */
	void (*budget_allow)(void *dp, unsigned int w, uint16_t slot, unsigned int b,
	    uint32_t epoch, uint64_t bytes);
	/* Worker w answers its held query (slot, seq: a DP_EVT_ASK record's) REFUSED. */
	void (*deny_ask)(void *dp, unsigned int worker, uint32_t slot, uint64_t seq);
};

#endif

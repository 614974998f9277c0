/*
 * The fleet agent (issue 27): this gateway's side of the fleet's etcd store (the records
 * are ctl_fleet_rec.h's). Two threads of its own talk to etcd, since every etcd call
 * blocks (ctl_etcd.h):
 *
 *   watcher  lists the prefix, then watches it (hasleader) from the list's revision; keeps
 *            the store's grants, revocations and gateways' statuses, and judges this
 *            shard's bundle as it arrives (signatures, target, serial, expiry, compile:
 *            ctl_bundle_judge()), so the control loop only puts a verdict in force.
 *   writer   this gateway's status (on change and every CTL_FLEET_HEARTBEAT_MS) and the
 *            revocations made on this box, retried until the store has them.
 *
 * They hand what they learn to the control loop through an inbox under a mutex, and wake
 * it (the wake callback). The loop (ctl_fleet_tick()) puts it in force: the grants
 * through ctl_grants_live_store_sync(), a bundle through ctl_reload_policy(), the events,
 * and the cache on disk. Verdicts never wait on the store: it is not in the data path.
 * While the store is unreachable the last verified policy and grants stay in force
 * (grants end by their own expiry on this clock), namegate_fleet_connected reads 0, and
 * on reconnect the watcher lists again and the loop converges on what it finds.
 */
#ifndef CTL_FLEET_H
#define CTL_FLEET_H

#include <stdio.h>

#define CTL_FLEET_HEARTBEAT_MS	2000	/* status rewritten at least this often */
#define CTL_FLEET_RETRY_MS	500	/* between attempts after the store failed */

struct ctl_approvals;
struct ctl_events;
struct ctl_fleet;
struct ctl_grants_live;
struct ctl_reload;
struct ctl_sock;
struct pol_config;

/*
 * Starts the agent for cfg's fleet: (*cfgp)->fleet_endpoints must be set. First the
 * verified cache (fleet.cache) is put in force if there is one, even past its not_after
 * (an event says so, and namegate_fleet_cache_expired); an unverified one never is. Then
 * the threads. cfgp, events (may be NULL), grants and reload are kept; wake is called from
 * the threads when the inbox has something. NULL with why on failure (no password file,
 * a bad key, out of memory): the daemon must not start without the fleet it was told of.
 */
struct ctl_fleet *ctl_fleet_start(struct pol_config **cfgp, struct ctl_events *events,
    struct ctl_grants_live *grants, struct ctl_reload *reload, struct ctl_approvals *approvals,
    void (*wake)(void), char *why, size_t whylen);

/* Stops the threads (each notices within about a second) and frees f (NULL: nothing). */
void ctl_fleet_stop(struct ctl_fleet *f);

/* The control loop, each turn: what the threads handed over, put in force. */
void ctl_fleet_tick(struct ctl_fleet *f);

/*
 * namegate_fleet_connected, namegate_policy_info{serial,digest},
 * namegate_fleet_apply_seconds (put in the store to in force here), namegate_fleet_
 * cache_expired, namegate_fleet_bundles_refused_total: any thread (the scrape).
 */
void ctl_fleet_render(struct ctl_fleet *f, FILE *out);

/* Serve fleet (this gateway's view: its state and every gateway's status) on s. */
int ctl_fleet_serve(struct ctl_fleet *f, struct ctl_sock *s);

#endif /* CTL_FLEET_H */

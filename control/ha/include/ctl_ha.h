/*
 * The HA pair's role (namegate(8), HA PAIR). keepalived elects; namegate reads its
 * vrrp_notify_fifo on a thread of its own, so a role change reaches the workers' gate
 * without waiting for the event loop, and forwards only while keepalived says MASTER.
 * The event loop logs each change, answers namegatectl ha, and renders namegate_ha_role.
 * No DPDK: the daemon hands in what touches the workers as callbacks.
 */
#ifndef CTL_HA_H
#define CTL_HA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* STARTING: no line read yet. Only MASTER forwards. */
#define CTL_HA_ROLES(X)			\
	X(STARTING,	"starting")	\
	X(BACKUP,	"backup")	\
	X(MASTER,	"master")	\
	X(FAULT,	"fault")	\
	X(STOP,		"stop")

enum ctl_ha_role {
#define X(id, name) CTL_HA_##id,
	CTL_HA_ROLES(X)
#undef X
	CTL_HA_ROLE_MAX
};

/* "master", ...; "?" past the list. */
const char *ctl_ha_role_name(enum ctl_ha_role r);

enum ctl_ha_line {
	CTL_HA_LINE_ROLE,	/* the instance's new state, in *role */
	CTL_HA_LINE_OTHER,	/* well formed, not for us: a GROUP, another instance, a state
				 * that is no role (MASTER_RX_LOWER_PRI, priority changes) */
	CTL_HA_LINE_MALFORMED,
};

#define CTL_HA_LINE_MAX	512	/* bytes of one FIFO line, newline excluded */

/*
 * One line keepalived wrote to the FIFO, without its newline (len bytes; no NUL needed):
 *   INSTANCE "NAME" STATE PRIORITY
 * with STATE one of MASTER BACKUP FAULT STOP (keepalived.conf(5), vrrp_notify_fifo).
 * instance NULL: any instance's lines count; else only NAME's. Never reads past len.
 */
enum ctl_ha_line ctl_ha_line_parse(const char *buf, size_t len, const char *instance,
    enum ctl_ha_role *role);

/* Takeover announcements, written into buf (at least CTL_HA_FRAME_MAX bytes): lengths. */
#define CTL_HA_FRAME_MAX	90
/* A gratuitous ARP request from mac for ip4 (RFC 5227 s3), tagged with vlan unless 0. */
size_t ctl_ha_garp(uint8_t *buf, const uint8_t *mac, uint16_t vlan, const uint8_t *ip4);
/*
 * An unsolicited Neighbor Advertisement (RFC 4861 s7.2.6) from mac for ip6 to all-nodes,
 * override set, with the target link-layer address option; checksum filled in.
 */
size_t ctl_ha_una(uint8_t *buf, const uint8_t *mac, uint16_t vlan, const uint8_t *ip6);
/* A RARP request from mac (RFC 903): what hypervisors send after a migration. */
size_t ctl_ha_rarp(uint8_t *buf, const uint8_t *mac, uint16_t vlan);

/* Called on the FIFO reader's thread at each change of role: the workers' gate. */
typedef void ctl_ha_role_fn(enum ctl_ha_role role, void *arg);
/*
 * Called on the event loop: milliseconds since the workers last all showed they run, or
 * -1 while they do not run yet.
 */
typedef int64_t ctl_ha_beat_fn(void *arg);
/* Called on the event loop: why this box may not lead besides the above, or NULL. */
typedef const char *ctl_ha_veto_fn(void *arg);

struct ctl_ha_conf {
	const char *fifo;		/* ha.notify_fifo */
	const char *instance;		/* ha.instance, or NULL */
	uint32_t heartbeat_ms;		/* ha.heartbeat_timeout_ms */
	ctl_ha_role_fn *on_role;
	ctl_ha_beat_fn *beat;
	ctl_ha_veto_fn *veto;		/* or NULL */
	void *arg;			/* for all three */
};

struct ctl_ha;
struct ctl_events;
struct ctl_sock;

/*
 * Opens the FIFO (made, mode 0600, when the path does not exist: whichever of keepalived
 * and namegate starts first), then reads it on a thread of its own. Role STARTING: the
 * gate stays shut until the first line. Returns NULL with a one-line reason in err when
 * the FIFO cannot be opened or is something else. events may be NULL. conf's strings
 * are copied.
 */
struct ctl_ha *ctl_ha_start(const struct ctl_ha_conf *conf, struct ctl_events *events,
    char *err, size_t errlen);

/* Stops the reader and frees h. NULL is a no-op. */
void ctl_ha_stop(struct ctl_ha *h);

/*
 * The event loop's turn: logs each change since the last (an "ha_role" event). Returns
 * true when the box became master since the last turn and is master still: the moment
 * to announce.
 */
bool ctl_ha_tick(struct ctl_ha *h);

/*
 * Writes value ("0\n": may lead; "1\n": may not) to keepalived's track_file at path, in
 * place, which keepalived reads at once (inotify): a stopping namegate hands over without
 * waiting for the next check. 0, or -errno with a reason in err.
 */
int ctl_ha_track_write(const char *path, int value, char *err, size_t errlen);

/* The current role (any thread). */
enum ctl_ha_role ctl_ha_role(const struct ctl_ha *h);

/*
 * Serves "ha" (ctl_sock.h):
 *   {"role":"master","since":"2026-12-05T11:00:00.123Z","seconds":12.3,"instance":"VI_1",
 *    "notify_fifo":"/run/namegate-ha.fifo","healthy":true,"reason":"",
 *    "heartbeat_age_ms":3,"heartbeat_timeout_ms":1000,"changes":4,
 *    "lines":{"read":9,"ignored":3,"malformed":0},"reopened":0}
 * healthy: whether the box may lead (namegatectl ha --check): a role read, the
 * workers' heartbeat no older than the timeout, and not behind on sync
 * (ctl_ha_behind()); reason says why not. "instance" "" and
 * heartbeat_age_ms -1 when none. 0 or -errno.
 */
int ctl_ha_serve(struct ctl_ha *h, struct ctl_sock *s);

/*
 * Serves "ha" for a namegate without ha: in its configuration: an error that says so
 * (-ENOENT), so namegatectl ha tells the operator why, not that the command is unknown.
 */
int ctl_ha_serve_absent(struct ctl_sock *s);

struct json_object;
typedef struct json_object *ctl_ha_json_fn(void *arg);

/*
 * Event loop: namegatectl ha's reply gets key, an object fn makes at each request (the
 * sync stream's state, the guard's); fn NULL removes it. Up to CTL_HA_EXTRAS such keys.
 */
#define CTL_HA_EXTRAS	2
void ctl_ha_extra(struct ctl_ha *h, const char *key, ctl_ha_json_fn *fn, void *arg);

/*
 * Whether the box is behind on sync (true, with why into why, len bytes): the sync
 * stream's say in namegatectl ha --check (event loop).
 */
typedef bool ctl_ha_behind_fn(void *arg, char *why, size_t len);

/*
 * Event loop: the box may not take the lead while fn says it is behind (a master keeps
 * it: it forwards with its own state); fn NULL removes it.
 */
void ctl_ha_behind(struct ctl_ha *h, ctl_ha_behind_fn *fn, void *arg);

/* namegate_ha_role (one sample per role, 1 for the current) and its changes (any thread). */
void ctl_ha_render(const struct ctl_ha *h, FILE *out);

#endif

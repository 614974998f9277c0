/*
 * The daemon's answers on the control socket (control/sock/include/ctl_sock.h has the protocol and the
 * JSON shapes). Called on the main lcore from the main loop, so a reload is safe here.
 */
#ifndef DP_CTLSOCK_H
#define DP_CTLSOCK_H

#include "ctl_sock.h"

struct dp_control;

/* Serve the daemon's own commands (status, stats, bindings, flows, reload, check, suggest). */
int dp_ctlsock_serve(struct ctl_sock *s, struct dp_control *c);

#endif

/*
 * The daemon's answers on the control socket (control/sock/include/ctl_sock.h has the protocol and the
 * JSON shapes). Called on the main lcore from the main loop, so a reload is safe here.
 */
#ifndef DP_CTLSOCK_H
#define DP_CTLSOCK_H

#include <stddef.h>

#include "ctl_sock.h"

struct dp_control;
struct pol_config;

/*
 * The control sockets cfg names: control_socket with its group, and the read-only
 * control_socket_readonly when set. The socket, or NULL with a one-line reason in err.
 */
struct ctl_sock *dp_ctlsock_open(const struct pol_config *cfg, char *err, size_t errlen);

/* Serve the daemon's own commands (status, stats, bindings, flows, reload, check, suggest). */
int dp_ctlsock_serve(struct ctl_sock *s, struct dp_control *c);

#endif

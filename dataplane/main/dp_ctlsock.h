/*
 * The daemon's answers on the control socket (control/sock/include/ctl_sock.h has the protocol and the
 * JSON shapes). Called on the main lcore from the main loop, so a reload is safe here.
 */
#ifndef DP_CTLSOCK_H
#define DP_CTLSOCK_H

#include "ctl_sock.h"

extern const struct ctl_sock_ops dp_ctlsock_ops;	/* arg: struct dp_control * */

#endif

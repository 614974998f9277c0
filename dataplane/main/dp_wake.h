/*
 * The main lcore's sleep: one poll(2) on the control socket and an eventfd the workers
 * write when they hand it work while it sleeps (dp_main_wake() in dp_evt.h), with a
 * timeout for the work it does by the clock. No fixed tick: a binding reaches nftables as
 * soon as the main lcore can take it, and an idle daemon wakes about once a second.
 */
#ifndef DP_WAKE_H
#define DP_WAKE_H

struct ctl_sock;
struct dp_ctx;

/* The eventfd, into ctx->wake_fd (-1 before). 0 or -errno. */
int dp_wake_open(struct dp_ctx *ctx);
void dp_wake_close(struct dp_ctx *ctx);

/*
 * Wake the main lcore from a signal handler (async-signal-safe): a flag the handler set is
 * then seen at once, whichever thread the kernel delivered the signal to.
 */
void dp_wake_from_signal(void);

/*
 * Sleep until the control socket has work (served after the turn: ctl_sock_serve_ready()),
 * a worker or a signal wakes it, or timeout_ms pass; not at all when a worker's ring
 * already holds something for the main lcore.
 */
void dp_wake_wait(struct dp_ctx *ctx, struct ctl_sock *sock, int timeout_ms);

#endif

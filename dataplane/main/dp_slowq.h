/*
 * The exception path's TAPs, owned by the main lcore (one queue each): it writes what the
 * workers hand it for the kernel, and hands back to a worker what the kernel's bridge let
 * through, which that worker sends on out of the VM or uplink port on its own queue. So
 * the kernel's bridge and nftables run on the main lcore's thread, never on a worker's,
 * and a worker never makes the TAP syscalls.
 */
#ifndef DP_SLOWQ_H
#define DP_SLOWQ_H

struct dp_ctx;

/*
 * Move what is waiting, both ways, a few bursts a queue: the workers' frames to the TAPs
 * and the TAPs' frames to the workers (what is left keeps the next sleep from starting).
 * Losses (a TAP that would not take a frame, a full ring back) are counted in
 * ctx->main_drops. Returns the frames moved.
 */
unsigned int dp_slowq_run(struct dp_ctx *ctx);

#endif

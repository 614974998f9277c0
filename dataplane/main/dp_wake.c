/*
 * The main lcore's sleep and its wakers (dp_wake.h).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_ring.h>

#include "ctl_sock.h"
#include "dp.h"
#include "dp_wake.h"

static volatile int dp_wake_signal_fd = -1;	/* the running daemon's, for signal handlers */

int
dp_wake_open(struct dp_ctx *ctx)
{
	if ((ctx->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
		return -errno;
	dp_wake_signal_fd = ctx->wake_fd;
	return 0;
}

void
dp_wake_close(struct dp_ctx *ctx)
{
	dp_wake_signal_fd = -1;
	if (ctx->wake_fd >= 0)
		close(ctx->wake_fd);
	ctx->wake_fd = -1;
}

void
dp_wake_from_signal(void)
{
	int fd = dp_wake_signal_fd;

	if (fd >= 0)
		(void)eventfd_write(fd, 1);
}

/* Is anything waiting on a ring the main lcore drains? */
static bool
dp_wake_work_queued(const struct dp_ctx *ctx)
{
	for (unsigned int i = 0; i < ctx->nworkers; i++) {
		const struct dp_worker *w = ctx->workers[i];

		if (rte_ring_count(w->bind_evts) != 0 || rte_ring_count(w->evts) != 0 ||
		    rte_ring_count(w->slow_out) != 0)
			return true;
	}
	return false;
}

void
dp_wake_wait(struct dp_ctx *ctx, struct ctl_sock *sock, int timeout_ms)
{
	int fds[3] = { ctx->wake_fd, ctx->slow_rx_fd[0], ctx->slow_rx_fd[1] };
	bool ready[3] = { false };
	eventfd_t n;

	/*
	 * Announce the sleep before the last look at the rings (dp_main_wake()'s other half):
	 * a worker that enqueues after this look sees the flag and writes the eventfd.
	 */
	atomic_store_explicit(&ctx->main_asleep, true, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	if (dp_wake_work_queued(ctx))
		timeout_ms = 0;
	/* the TAPs' fds: a frame the kernel sends out later than our write also wakes us */
	if (sock != NULL)
		(void)ctl_sock_wait(sock, timeout_ms, fds, ctx->slow_path ? 3 : 1, ready);
	atomic_store_explicit(&ctx->main_asleep, false, memory_order_relaxed);
	if (ready[0])
		(void)eventfd_read(ctx->wake_fd, &n);	/* nonblocking: reset it for the next sleep */
}

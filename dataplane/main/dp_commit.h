/*
 * EAL's memory committed at start. With hugepages the kernel backs every page when EAL
 * maps it; with --no-huge (a VM without hugepages, the lab) EAL maps plain anonymous
 * memory that the kernel backs only on first touch. The tables would then take a page
 * fault for each 4 KiB a VM's flows and answers first reach, on the worker's hot path and
 * for minutes after a start, and a host short of memory would find out under load rather
 * than at start. So namegate backs it all at once, before a frame arrives.
 */
#ifndef DP_COMMIT_H
#define DP_COMMIT_H

/*
 * Back every page of EAL's memory that is not hugepages: 0, or -errno when the kernel
 * cannot (ENOMEM: not enough memory; EINVAL: a kernel older than 5.14, where pages are
 * still backed on first touch).
 */
int dp_commit_eal_memory(void);

#endif

/*
 * The kernel side of the exception path (SPEC s2, s4 step 8): a Linux bridge joining the
 * two TAP devices namegate sends slow-path frames through, so that `table bridge namegate`
 * judges them in the kernel. rtnetlink over libmnl; no DPDK.
 */
#ifndef CTL_BRIDGE_H
#define CTL_BRIDGE_H

/*
 * Create bridge brname (replacing one left over from an earlier run), enslave ports a and
 * b to it, and bring all three up. Returns 0, or -errno with a one-line reason in err.
 */
int ctl_bridge_create(const char *brname, const char *a, const char *b, char *err,
    size_t errlen);

/* Delete bridge brname if it exists. 0 or -errno. */
int ctl_bridge_delete(const char *brname);

#endif

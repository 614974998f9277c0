/*
 * The table of DNS queries in flight, one per worker: what dp_dns.c and dp_dns_tcp.c
 * remember of each query they forward (dp_dns_int.h), so that only its answer comes back.
 */
#ifndef DP_DNS_PENDING_H
#define DP_DNS_PENDING_H

#include <stdint.h>

#define DP_PENDING_SECONDS	5	/* how long a forwarded query waits for its answer */

struct dp_pending;

struct dp_pending *dp_pending_create(const char *name, uint32_t cap, uint16_t nvms, int socket);
void dp_pending_free(struct dp_pending *t);
/* The EAL memory dp_pending_create() takes (dp_mem.h). */
uint64_t dp_pending_mem(uint32_t cap, uint16_t nvms);
/* Forget up to budget queries that waited past DP_PENDING_SECONDS. */
unsigned int dp_pending_age(struct dp_pending *t, uint64_t now, unsigned int budget);
/* Queries of vm in flight (main lcore: a removed VM's slot waits for none, dp_vmslot.h). */
uint32_t dp_pending_count(const struct dp_pending *t, uint16_t vm);

#endif

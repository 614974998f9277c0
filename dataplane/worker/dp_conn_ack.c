/*
 * The server's ACK of a flow's judged bytes, on the lean path (dp_burst.c): the one frame
 * of nearly every connection toward the VM that is not steady only because the flow still
 * keeps what was judged of its first bytes. What dp_conn_uplink_any() would do to it,
 * without its frame decoded for it (test_dp_conn_plain holds the two to one answer).
 */
#include <string.h>

#include "dp_conn.h"
#include "dp_tls.h"

bool
dp_conn_uplink_judged(struct dp_worker *w, uint64_t steady, struct dp_flow *f, uint8_t flags,
    uint32_t ack, uint16_t win)
{
	uint64_t word;

	/*
	 * steady but for its judged bytes: its generation's, no module's, in no budget, no
	 * flow log; and no HA peer, which hears when the server has the hello (dp_ha_note())
	 */
	memcpy(&word, &f->gen, sizeof(word));
	if (((word ^ steady) << 16) != 0 || w->ctx->ha)
		return false;
	dp_conn_uplink_steady(w, f, true, flags, ack, win);
	dp_tls_peer_ack(w, f);	/* all of them acknowledged: let them go */
	return true;
}

/*
 * SNI verdicts (SPEC s4 step 5): on a TLS port the client's first bytes must be a
 * ClientHello naming a host the VM may reach. Until the verdict the client's segments are
 * held, not forwarded, so no payload byte reaches the server before namegate has judged
 * it; then they are released in order, or the connection is cut both ways.
 */
#ifndef DP_TLS_H
#define DP_TLS_H

#include <stdint.h>

#include <rte_mbuf.h>

#include "dp.h"
#include "dp_conn.h"
#include "dp_fate.h"
#include "dp_flow.h"
#include "dp_hold.h"
#include "dp_reason.h"
#include "sni/pkt.h"
#include "sni/tls.h"

struct dp_hold;
struct dp_lean;

/*
 * A client segment m with payload on flow f, whose verdict is still pending: held, and
 * decided once the ClientHello is whole. Returns m's fate (HELD: taken into the hold).
 */
struct dp_fate dp_tls_client(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p,
    uint16_t vm, struct dp_flow *f);

/*
 * dp_tls_client() of lean frame m (dp_lean.h) from the VM, l what the lean check read of
 * it (no SYN, no URG), on a flow whose hello is pending, and its fate acted on as
 * dp_out_flow_apply() would: a segment within the window is judged or held from the
 * frame's payload, any other decoded into p first and taken the general way. p is
 * decoded for every fate but a pass (EGRESS) or HELD (m taken), which need nothing of it.
 * Returns true: m is taken.
 */
bool dp_tls_client_lean(struct dp_worker *w, struct rte_mbuf *m,
    const struct dp_lean *l, struct pkt *p, uint16_t vm, struct dp_flow *f);

/*
 * A client segment p with payload on TCP flow f whose hello was judged: may it pass? Bytes
 * that overlap the judged ones must equal them (compared while the server has not yet
 * acknowledged them all; afterwards it ignores them); otherwise the flow is cut (reason
 * rewrite, at the server's last ACK).
 */
struct dp_fate dp_tls_verify(struct dp_worker *w, const struct pkt *p, struct dp_flow *f);

/*
 * A segment from the server on f, which has judged bytes (its flags, sequence number seq,
 * len of sequence space taken: its payload, and 1 for a FIN; its ACK number ack), tracked
 * already: once an ACK covers the
 * judged bytes, their copy is freed. Only the ACK of a segment in the server's stream
 * (dp_flow_peer_in_order()) counts, never f->peer_ack, which any segment with the flow's
 * addresses moves: a spoofed ACK let a hello the server never read be rewritten.
 */
void dp_tls_peer_ack(struct dp_worker *w, struct dp_flow *f, uint8_t tcp_flags, uint32_t seq,
    uint32_t len, uint32_t ack);

/*
 * dp_tls_peer_ack() of a flow f that reads no hello (its tls neither PENDING nor SNIFF),
 * inline: the server has every judged byte and ignores them if they come again, so there
 * is nothing to compare from now on (and no offset to misread once the sequence numbers
 * wrap). A first hello's flow keeps where the hello ended until the server's answer
 * (DP_HELLO_ACKED), and takes nothing more till then (dp_tls_server_hello()).
 */
static inline void
dp_tls_peer_ack_judged(struct dp_worker *w, struct dp_flow *f, uint8_t tcp_flags,
    uint32_t seq, uint32_t len, uint32_t ack)
{
	/* acknowledged, the first hello's answer not come yet: nothing more to take */
	if (unlikely(f->hello_phase == DP_HELLO_ACKED))
		return;
	if (dp_flow_peer_in_order(f, seq, len) && dp_flow_peer_ack_taken(f, tcp_flags, ack) &&
	    (int32_t)(ack - (f->isn + f->judged)) >= 0) {
		dp_hold_put(w, &f->hold);
		/*
		 * a first hello whose answer has not come: judged stays, where the client's
		 * next bytes start, until the answer says it asks for no second hello
		 */
		if (unlikely(f->hello_phase == DP_HELLO_OPEN)) {
			f->hello_phase = DP_HELLO_ACKED;
			return;
		}
		f->tls = DP_TLS_NONE;
		f->judged = 0;
	}
}

/*
 * The server's segment on f (its flags, sequence number seq, len bytes of payload at
 * payload, its ACK number ack) while f's first hello waits for its answer (DP_HELLO_OPEN,
 * DP_HELLO_ACKED), its ACK taken first (dp_tls_peer_ack_judged()): the server's first
 * bytes tell. A HelloRetryRequest (or bytes too few to tell one from it) makes the
 * client's next bytes a second hello, held and judged as the first was, from where the
 * server's ACK says its stream stands; any other answer settles the flow's hellos. A
 * segment that is not the server's first bytes changes nothing.
 */
void dp_tls_server_hello(struct dp_worker *w, struct dp_flow *f, uint8_t tcp_flags,
    uint32_t seq, const uint8_t *payload, uint32_t len, uint32_t ack);

/*
 * dp_tls_server_hello() of a segment with data on a flow that keeps judged bytes, where a
 * first hello may wait for its answer, inline: one test.
 */
static __rte_always_inline void
dp_tls_server_first(struct dp_worker *w, struct dp_flow *f, uint8_t tcp_flags, uint32_t seq,
    const uint8_t *payload, uint32_t len, uint32_t ack)
{
	/* the length first: most segments on such a flow are the server's bare ACKs */
	if (len != 0 &&
	    unlikely(f->hello_phase >= DP_HELLO_OPEN && f->hello_phase <= DP_HELLO_ACKED))
		dp_tls_server_hello(w, f, tcp_flags, seq, payload, len, ack);
}

/*
 * What the QUIC path (dp_quic_flow.c) shares with TCP's. dp_tls_judge: the verdict on a
 * whole hello (st its parse status), DP_REASON_ALLOWED when it may pass. dp_tls_release:
 * the held bytes sent on. dp_tls_refuse: denied r (name the SNI when there was one), the
 * fate of the frame at hand (act: what became of it) with the held stream cut, or in audit
 * mode counted and released.
 */
enum dp_reason dp_tls_judge(struct dp_worker *w, struct dp_flow *f, uint16_t vm,
    enum sni_status st, const struct tls_hello *hello);
void dp_tls_release(struct dp_worker *w, struct dp_hold *h, struct dp_flow *f);
struct dp_fate dp_tls_refuse(struct dp_worker *w, struct dp_hold *h, struct dp_flow *f,
    enum dp_reason r, const char *name, size_t len, enum dp_fate_act act);

/*
 * Housekeeping: cut flows whose ClientHello did not complete within DP_HOLD_SECONDS, and
 * free judged bytes unacknowledged after DP_VERIFY_SECONDS.
 */
void dp_tls_expire(struct dp_worker *w);

#endif

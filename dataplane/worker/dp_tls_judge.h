/*
 * An SNI judged (dp_tls.c's hello verdicts): the binding's word on the name, inline, or
 * the policy's, a call (dp_tls_judge.c), as is a name with capitals, lowered first; and
 * the verdict on a whole hello made of it.
 */
#ifndef DP_TLS_JUDGE_H
#define DP_TLS_JUDGE_H

#include <stddef.h>
#include <stdint.h>

#include "api/dp_api.h"
#include "dp.h"
#include "dp_bind.h"
#include "dp_flow.h"
#include "dp_hold.h"
#include "dp_reason.h"
#include "sni/tls.h"

/*
 * The SNI name (len bytes, lower case, hashing to hash) of a flow its binding does not
 * vouch for, judged in full by the policy and, strict, the bindings. Not inlined: the
 * bound name, the common case, needs none of this path's stack frame.
 */
enum dp_reason dp_tls_judge_policy(struct dp_worker *w, struct dp_flow *f, uint16_t vm,
    const char *name, size_t len, uint64_t hash);

/*
 * An SNI with capitals (len bytes at name): bindings and budgets know names in lower
 * case. The name by value: a pointer to the hello kept for this call alone was spilled
 * across the parse on the common way.
 */
enum dp_reason dp_tls_judge_folded(struct dp_worker *w, struct dp_flow *f, uint16_t vm,
    const uint8_t *name, size_t len);

/*
 * Does the binding that admitted f vouch for an SNI hashing to hash? When the SNI is the
 * name the lookup found (f->name_bound), and f stands on the generation that judged it:
 * that generation's policy allowed the name on f's port (pol_ports_allow() never allows
 * what pol_match_name() would not), and the name had resolved to the address, as strict
 * asks. A reload moves f to a new generation only once its name passed there
 * (dp_conn_current), so the verdict is never an older policy's. Any other SNI is judged
 * in full: what vouches for one name says nothing of another.
 */
static inline bool
dp_tls_bound_name(const struct dp_flow *f, const struct dp_gen *g, uint64_t hash)
{
	return f->name_bound && f->how == DP_ADMIT_BINDING && f->gen == g->id &&
	    f->name_hash == hash;
}

/*
 * The SNI name n (in lower case) judged: the binding's word on it, or the policy's. n is
 * read again past the hash: the common case keeps neither of its words across the call.
 */
static inline enum dp_reason
dp_tls_judge_lower(struct dp_worker *w, struct dp_flow *f, uint16_t vm, const struct sni_name *n)
{
	uint64_t hash = dp_name_hash((const char *)n->p, n->len);

	/* the name's budget is in f's already: the binding's names gave theirs at the open */
	if (dp_tls_bound_name(f, w->gen, hash)) {
		dp_flow_acct(w->flows, f)->name_kind = DP_FLOW_NAME_SNI;
		return DP_REASON_ALLOWED;
	}
	return dp_tls_judge_policy(w, f, vm, (const char *)n->p, n->len, hash);
}

/*
 * The verdict on a whole ClientHello, or DP_REASON_ALLOWED when it may pass. Inlined in
 * TCP's two paths to it, which every hello on a TLS port takes; QUIC calls dp_tls_judge().
 */
static inline __attribute__((always_inline)) enum dp_reason
dp_tls_judge_hello(struct dp_worker *w, struct dp_flow *f, uint16_t vm, enum sni_status st,
    const struct tls_hello *hello)
{
	if (st == SNI_ABSENT)
		return DP_REASON_NO_SNI;
	if (st != SNI_FOUND || hello->sni.len > SNI_HOST_MAX)
		return DP_REASON_NOT_TLS;
	/* ECH: judged on the outer SNI, the only name visible (SPEC s4.5) */
	if (!hello->sni_lower)
		return dp_tls_judge_folded(w, f, vm, hello->sni.p, hello->sni.len);
	return dp_tls_judge_lower(w, f, vm, &hello->sni);
}

/*
 * The first len bytes of f's held stream (from f->isn) parsed as its hello: after a
 * HelloRetryRequest (DP_HELLO_RETRY), they are the client's second, which may follow
 * change_cipher_spec records.
 */
static __rte_always_inline enum sni_status
dp_tls_parse(struct dp_worker *w, const struct dp_flow *f, const uint8_t *buf, size_t len,
    struct tls_hello *hello)
{
	if (unlikely(f->hello_phase == DP_HELLO_RETRY))
		return tls_hello_parse_retry(buf, len, w->holds->scratch,
		    sizeof(w->holds->scratch), hello);
	return tls_hello_parse_sni(buf, len, w->holds->scratch, sizeof(w->holds->scratch),
	    hello);
}

/*
 * dp_tls_judge_hello() of a hello parsed from the first len bytes of the stream at buf,
 * which namegate sends on if it is allowed: bytes past the hello among them must carry no
 * handshake record, which the server would read as a second hello once it asks for one
 * (tls_hello_tail_ok()). No client sends one before the server answers.
 */
static __rte_always_inline enum dp_reason
dp_tls_judge_stream(struct dp_worker *w, struct dp_flow *f, uint16_t vm, enum sni_status st,
    const struct tls_hello *hello, const uint8_t *buf, size_t len)
{
	enum dp_reason r = dp_tls_judge_hello(w, f, vm, st, hello);

	if (r == DP_REASON_ALLOWED && unlikely(len > hello->stream_len) &&
	    !tls_hello_tail_ok(buf + hello->stream_len, len - hello->stream_len))
		return DP_REASON_NOT_TLS;
	return r;
}

#endif

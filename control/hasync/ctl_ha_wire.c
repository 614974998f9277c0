/*
 * The sync stream's records and frames (ctl_ha_wire.h draws them). The peer's bytes arrive
 * decrypted and authenticated, but a peer is a box that may run another version or be
 * broken: every read goes through a cursor bounded by the record.
 */
#include <string.h>

#include "ctl_ha_wire.h"

struct ha_rd {
	const uint8_t *p;
	size_t len;		/* bytes left */
};

static bool
ha_rd_take(struct ha_rd *r, size_t n, const uint8_t **at)
{
	if (r->len < n)
		return false;
	*at = r->p;
	r->p += n;
	r->len -= n;
	return true;
}

static bool
ha_rd_be(struct ha_rd *r, size_t n, uint64_t *v)
{
	const uint8_t *p;

	if (!ha_rd_take(r, n, &p))
		return false;
	*v = 0;
	for (size_t i = 0; i < n; i++)
		*v = *v << 8 | p[i];
	return true;
}

/* u8 len | bytes, 1 to max of them. */
static bool
ha_rd_str(struct ha_rd *r, size_t max, const char **s, uint8_t *slen)
{
	const uint8_t *p;
	uint64_t n;

	if (!ha_rd_be(r, 1, &n) || n == 0 || n > max || !ha_rd_take(r, (size_t)n, &p))
		return false;
	*s = (const char *)p;
	*slen = (uint8_t)n;
	return true;
}

static uint8_t *
ha_wr_be(uint8_t *p, uint64_t v, size_t n)
{
	for (size_t i = n; i-- > 0; v >>= 8)
		p[i] = (uint8_t)v;
	return p + n;
}

static uint8_t *
ha_wr_str(uint8_t *p, const char *s, uint8_t n)
{
	*p++ = n;
	memcpy(p, s, n);
	return p + n;
}

static bool
ha_str_ok(const char *s, uint8_t n, size_t max)
{
	return s != NULL && n > 0 && n <= max;
}

/* FLOW and FLOW_END's head: the VM, the peer's address, the ports. NULL if r is not one. */
static uint8_t *
ha_wr_conn(uint8_t *p, const struct ctl_ha_rec *r)
{
	if (!ha_str_ok(r->vm, r->vm_len, CTL_HA_VM_MAX) || (r->family != 4 && r->family != 6))
		return NULL;
	p = ha_wr_str(p, r->vm, r->vm_len);
	*p++ = r->family;
	memcpy(p, r->addr, r->family == 4 ? 4 : 16);
	p += r->family == 4 ? 4 : 16;
	p = ha_wr_be(p, r->flow.vm_port, 2);
	return ha_wr_be(p, r->flow.peer_port, 2);
}

/* A FLOW's state and name; NULL when a peer would refuse them (one spelling each). */
static uint8_t *
ha_wr_flow(uint8_t *p, const struct ctl_ha_rec *r)
{
	const struct ctl_ha_flow *f = &r->flow;

	if (f->name_bound > 1 || (f->how == CTL_HA_FLOW_BY_ADDR && r->name_len != 0) ||
	    (f->how == CTL_HA_FLOW_BY_NAME && !ha_str_ok(r->name, r->name_len,
	    CTL_HA_NAME_MAX)) || (f->how != CTL_HA_FLOW_BY_ADDR && f->how != CTL_HA_FLOW_BY_NAME))
		return NULL;
	*p++ = f->how;
	*p++ = f->name_bound;
	p = ha_wr_be(p, f->isn, 4);
	p = ha_wr_be(p, f->vm_nxt, 4);
	p = ha_wr_be(p, f->peer_ack, 4);
	p = ha_wr_be(p, f->peer_wnd, 4);
	p = ha_wr_be(p, f->peer_isn, 4);
	*p++ = f->vm_wscale;
	*p++ = f->peer_wscale;
	p = ha_wr_be(p, r->ttl, 4);
	*p++ = r->name_len;
	if (r->name_len > 0)
		memcpy(p, r->name, r->name_len);
	return p + r->name_len;
}

size_t
ctl_ha_rec_encode(const struct ctl_ha_rec *r, uint8_t *buf)
{
	uint8_t *p = buf;

	*p++ = (uint8_t)r->type;
	/* the five that name a VM and a name */
	if ((r->type == CTL_HA_REC_BIND || r->type == CTL_HA_REC_BUDGET ||
	    r->type == CTL_HA_REC_GRANT || r->type == CTL_HA_REC_REVOKE ||
	    r->type == CTL_HA_REC_NAMES) &&
	    (!ha_str_ok(r->vm, r->vm_len, CTL_HA_VM_MAX) ||
	    !ha_str_ok(r->name, r->name_len, CTL_HA_NAME_MAX)))
		return 0;
	switch (r->type) {
	case CTL_HA_REC_BIND:
		if (r->family != 4 && r->family != 6)
			return 0;
		p = ha_wr_str(p, r->vm, r->vm_len);
		*p++ = r->family;
		memcpy(p, r->addr, r->family == 4 ? 4 : 16);
		p += r->family == 4 ? 4 : 16;
		p = ha_wr_be(p, r->ttl, 4);
		p = ha_wr_str(p, r->name, r->name_len);
		break;
	case CTL_HA_REC_BUDGET:
		if (r->per == 0 || r->merge > CTL_HA_MERGE_MAX)
			return 0;
		p = ha_wr_str(p, r->vm, r->vm_len);
		p = ha_wr_str(p, r->name, r->name_len);
		p = ha_wr_be(p, r->per, 4);
		p = ha_wr_be(p, r->age, 4);
		p = ha_wr_be(p, r->bytes, 8);
		*p++ = r->merge;
		break;
	case CTL_HA_REC_GRANT:
		if (r->ttl == 0)
			return 0;
		p = ha_wr_str(p, r->vm, r->vm_len);
		p = ha_wr_str(p, r->name, r->name_len);
		p = ha_wr_be(p, r->ttl, 4);
		break;
	case CTL_HA_REC_REVOKE:
		p = ha_wr_str(p, r->vm, r->vm_len);
		p = ha_wr_str(p, r->name, r->name_len);
		break;
	case CTL_HA_REC_NAMES:
		if (r->suffix_len >= r->name_len)
			return 0;
		p = ha_wr_str(p, r->vm, r->vm_len);
		p = ha_wr_be(p, r->qtype, 2);
		*p++ = r->suffix_len;
		p = ha_wr_str(p, r->name, r->name_len);
		break;
	case CTL_HA_REC_ACK:
	case CTL_HA_REC_RESYNC_END:
		p = ha_wr_be(p, r->seq, 8);
		break;
	case CTL_HA_REC_RESYNC_BEGIN:
		break;
	case CTL_HA_REC_FLOW:
		if ((p = ha_wr_conn(p, r)) == NULL || (p = ha_wr_flow(p, r)) == NULL)
			return 0;
		break;
	case CTL_HA_REC_FLOW_END:
		if ((p = ha_wr_conn(p, r)) == NULL)
			return 0;
		break;
	default:
		return 0;
	}
	return (size_t)(p - buf);
}

/* FLOW and FLOW_END's head (ha_wr_conn()). */
static bool
ha_rd_conn(struct ha_rd *rd, struct ctl_ha_rec *r)
{
	const uint8_t *a;
	uint64_t v, vp, pp;

	if (!ha_rd_str(rd, CTL_HA_VM_MAX, &r->vm, &r->vm_len) || !ha_rd_be(rd, 1, &v) ||
	    (v != 4 && v != 6) || !ha_rd_take(rd, v == 4 ? 4 : 16, &a) ||
	    !ha_rd_be(rd, 2, &vp) || !ha_rd_be(rd, 2, &pp))
		return false;
	r->family = (uint8_t)v;
	memcpy(r->addr, a, v == 4 ? 4 : 16);
	r->flow.vm_port = (uint16_t)vp;
	r->flow.peer_port = (uint16_t)pp;
	return true;
}

/* A FLOW's state and name (ha_wr_flow()): what it would not write is refused. */
static bool
ha_rd_flow(struct ha_rd *rd, struct ctl_ha_rec *r)
{
	struct ctl_ha_flow *f = &r->flow;
	uint64_t how, bound, v[5], ws[2], ttl, n;
	const uint8_t *p;

	if (!ha_rd_be(rd, 1, &how) || !ha_rd_be(rd, 1, &bound) || bound > 1 ||
	    (how != CTL_HA_FLOW_BY_ADDR && how != CTL_HA_FLOW_BY_NAME))
		return false;
	for (int i = 0; i < 5; i++)
		if (!ha_rd_be(rd, 4, &v[i]))
			return false;
	if (!ha_rd_be(rd, 1, &ws[0]) || !ha_rd_be(rd, 1, &ws[1]) || !ha_rd_be(rd, 4, &ttl) ||
	    !ha_rd_be(rd, 1, &n) ||
	    (how == CTL_HA_FLOW_BY_ADDR ? n != 0 : n == 0 || n > CTL_HA_NAME_MAX) ||
	    !ha_rd_take(rd, (size_t)n, &p))
		return false;
	*f = (struct ctl_ha_flow){ .vm_port = f->vm_port, .peer_port = f->peer_port,
		.how = (uint8_t)how, .name_bound = (uint8_t)bound, .vm_wscale = (uint8_t)ws[0],
		.peer_wscale = (uint8_t)ws[1], .isn = (uint32_t)v[0], .vm_nxt = (uint32_t)v[1],
		.peer_ack = (uint32_t)v[2], .peer_wnd = (uint32_t)v[3], .peer_isn = (uint32_t)v[4] };
	r->ttl = (uint32_t)ttl;
	r->name = n > 0 ? (const char *)p : NULL;
	r->name_len = (uint8_t)n;
	return true;
}

bool
ctl_ha_rec_parse(const uint8_t *buf, size_t len, struct ctl_ha_rec *r)
{
	struct ha_rd rd = { .p = buf, .len = len };
	const uint8_t *a;
	uint64_t v;

	memset(r, 0, sizeof(*r));
	if (!ha_rd_be(&rd, 1, &v))
		return false;
	r->type = (enum ctl_ha_rec_type)v;
	switch (v) {
	case CTL_HA_REC_BIND:
		if (!ha_rd_str(&rd, CTL_HA_VM_MAX, &r->vm, &r->vm_len) || !ha_rd_be(&rd, 1, &v) ||
		    (v != 4 && v != 6) || !ha_rd_take(&rd, v == 4 ? 4 : 16, &a))
			return false;
		r->family = (uint8_t)v;
		memcpy(r->addr, a, v == 4 ? 4 : 16);
		if (!ha_rd_be(&rd, 4, &v) ||
		    !ha_rd_str(&rd, CTL_HA_NAME_MAX, &r->name, &r->name_len))
			return false;
		r->ttl = (uint32_t)v;
		break;
	case CTL_HA_REC_BUDGET:
		if (!ha_rd_str(&rd, CTL_HA_VM_MAX, &r->vm, &r->vm_len) ||
		    !ha_rd_str(&rd, CTL_HA_NAME_MAX, &r->name, &r->name_len) ||
		    !ha_rd_be(&rd, 4, &v) || v == 0)
			return false;
		r->per = (uint32_t)v;
		if (!ha_rd_be(&rd, 4, &v))
			return false;
		r->age = (uint32_t)v;
		if (!ha_rd_be(&rd, 8, &r->bytes) || !ha_rd_be(&rd, 1, &v) ||
		    v > CTL_HA_MERGE_MAX)
			return false;
		r->merge = (uint8_t)v;
		break;
	case CTL_HA_REC_GRANT:
		if (!ha_rd_str(&rd, CTL_HA_VM_MAX, &r->vm, &r->vm_len) ||
		    !ha_rd_str(&rd, CTL_HA_NAME_MAX, &r->name, &r->name_len) ||
		    !ha_rd_be(&rd, 4, &v) || v == 0)
			return false;
		r->ttl = (uint32_t)v;
		break;
	case CTL_HA_REC_REVOKE:
		if (!ha_rd_str(&rd, CTL_HA_VM_MAX, &r->vm, &r->vm_len) ||
		    !ha_rd_str(&rd, CTL_HA_NAME_MAX, &r->name, &r->name_len))
			return false;
		break;
	case CTL_HA_REC_NAMES:
		if (!ha_rd_str(&rd, CTL_HA_VM_MAX, &r->vm, &r->vm_len) || !ha_rd_be(&rd, 2, &v))
			return false;
		r->qtype = (uint16_t)v;
		if (!ha_rd_be(&rd, 1, &v) ||
		    !ha_rd_str(&rd, CTL_HA_NAME_MAX, &r->name, &r->name_len) ||
		    v >= r->name_len)
			return false;
		r->suffix_len = (uint8_t)v;
		break;
	case CTL_HA_REC_ACK:
	case CTL_HA_REC_RESYNC_END:
		if (!ha_rd_be(&rd, 8, &r->seq))
			return false;
		break;
	case CTL_HA_REC_RESYNC_BEGIN:
		break;
	case CTL_HA_REC_FLOW:
		if (!ha_rd_conn(&rd, r) || !ha_rd_flow(&rd, r))
			return false;
		break;
	case CTL_HA_REC_FLOW_END:
		if (!ha_rd_conn(&rd, r))
			return false;
		break;
	default:
		return false;
	}
	return rd.len == 0;		/* nothing trails a record */
}

enum ctl_ha_frame
ctl_ha_frame_next(const uint8_t *buf, size_t len, size_t *flen)
{
	size_t n;

	if (len < 2)
		return CTL_HA_FRAME_MORE;
	n = (size_t)buf[0] << 8 | buf[1];
	if (n < 1 || 2 + n > CTL_HA_WIRE_MAX)
		return CTL_HA_FRAME_BAD;
	if (len < 2 + n)
		return CTL_HA_FRAME_MORE;
	*flen = 2 + n;
	return CTL_HA_FRAME_OK;
}

/*
 * The netlink side of the nft module: one NETLINK_NETFILTER socket, batches built with
 * libnftnl and sent in one sendmsg(), the acknowledgement of every message read and checked,
 * and simple requests (the ruleset generation, dumps of our table) read to their end.
 *
 * nfnetlink handles a batch synchronously inside sendmsg(): when it returns, every ack the
 * kernel will send is already queued on our socket (nftables' mnl_batch_talk relies on the
 * same), so reading stops when all are in, or when the queue is empty after an error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>

#include <libmnl/libmnl.h>
#include <libnftnl/common.h>

#include "nft_int.h"

#define NFT_BATCH_PAGE		(32 * 4096)	/* nftables: BATCH_PAGE_SIZE */
#define NFT_NLMSG_MAX		(UINT16_MAX + 4096)	/* the largest message we build */
#define NFT_RX_BYTES		65536	/* the kernel sends dumps in <= 32 KiB datagrams */
#define NFT_REPLY_MS		2000	/* a reply later than this is lost */
#define NFT_ACK_TRUESIZE	1024	/* receive-buffer cost of one queued ack, generously */

void
nft_warn(const struct nft_ctx *c, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "namegate: nft: table %s: ", c->table);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

uint32_t
nft_gen_next(uint32_t gen)
{
	/* nf_tables_commit() bumps base_seq by one per commit, skipping 0 */
	return gen + 1 == 0 ? 1 : gen + 1;
}

/* Grow a socket buffer to at least want bytes; FORCE because we run as root (CAP_NET_ADMIN). */
static void
nft_sock_buf(struct nft_ctx *c, int *have, int force_opt, int opt, int want)
{
	int fd = mnl_socket_get_fd(c->nl);

	if (want <= *have)
		return;
	if (setsockopt(fd, SOL_SOCKET, force_opt, &want, sizeof(want)) < 0 &&
	    setsockopt(fd, SOL_SOCKET, opt, &want, sizeof(want)) < 0)
		return;
	*have = want;
}

int
nft_sock_open(struct nft_ctx *c)
{
	struct timeval tv = { .tv_sec = NFT_REPLY_MS / 1000 };
	int one = 1, fd, rc;

	if ((c->rx = malloc(NFT_RX_BYTES)) == NULL)
		return -ENOMEM;
	c->rxlen = NFT_RX_BYTES;
	if ((c->nl = mnl_socket_open(NETLINK_NETFILTER)) == NULL)
		return -errno;
	if (mnl_socket_bind(c->nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		rc = -errno;
		nft_sock_close(c);
		return rc;
	}
	c->portid = mnl_socket_get_portid(c->nl);
	fd = mnl_socket_get_fd(c->nl);
	/*
	 * CAP_ACK: an error ack quotes only the header, not a 64 KiB element list. EXT_ACK: the
	 * kernel says which attribute it disliked, which goes into the log.
	 */
	(void)setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	(void)setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0) {
		rc = -errno;
		nft_sock_close(c);
		return rc;
	}
	c->seq = (uint32_t)time(NULL);
	return 0;
}

void
nft_sock_close(struct nft_ctx *c)
{
	if (c->nl != NULL)
		mnl_socket_close(c->nl);
	c->nl = NULL;
	free(c->rx);
	c->rx = NULL;
}

int
nft_batch_start(struct nft_ctx *c, struct nft_batch *b, uint32_t genid)
{
	struct nlmsghdr *nlh;

	memset(b, 0, sizeof(*b));
	if ((b->nb = nftnl_batch_alloc(NFT_BATCH_PAGE, NFT_NLMSG_MAX)) == NULL)
		return -ENOMEM;
	b->genid = genid;
	b->begin_seq = c->seq++;
	memset(nftnl_batch_buffer(b->nb), 0, NFT_MSG_BOUND);
	nlh = nftnl_batch_begin(nftnl_batch_buffer(b->nb), b->begin_seq);
	/*
	 * Optimistic concurrency: the kernel refuses the batch with ERESTART unless the ruleset
	 * is still at genid, so after a commit we know the generation is exactly genid + 1 and
	 * that nobody else's change slipped in between (nft_check() relies on it).
	 */
	if (genid != 0)
		mnl_attr_put_u32(nlh, NFNL_BATCH_GENID, htonl(genid));
	nft_batch_next(b);
	/*
	 * The commit reports the generation it made (NEWGEN) to us when the batch's first
	 * message after begin has NLM_F_ECHO: nfnetlink hands the commit the batch from there,
	 * and the kernel answers under that message's sequence number, before the acks. So
	 * nft_batch_commit() learns it without a GETGEN round trip. That first message is a
	 * NEWTABLE of our table without attributes, which changes nothing (no flags to update,
	 * so no transaction and no echo of its own); echo on a NEWSETELEM would send every
	 * element back.
	 */
	nlh = nft_batch_hdr(c, b, NFT_MSG_NEWTABLE, NLM_F_ECHO | NLM_F_CREATE, NFT_MSG_BOUND);
	mnl_attr_put_strz(nlh, NFTA_TABLE_NAME, c->table);
	b->echo_seq = nlh->nlmsg_seq;
	nft_batch_next(b);
	return b->bad ? -ENOMEM : 0;
}

/*
 * The header of the next message, NLM_F_ACK added; fill it, then nft_batch_next(). bound is
 * the most the message can take: libmnl 1.0.4 leaves attribute padding unwritten, and the
 * batch pages come from malloc(), so we zero what the message may use rather than send
 * stale heap bytes. The tail always has NFT_NLMSG_MAX bytes (the page overrun) free.
 */
struct nlmsghdr *
nft_batch_hdr(struct nft_ctx *c, struct nft_batch *b, uint16_t type, uint16_t flags,
    size_t bound)
{
	void *buf = nftnl_batch_buffer(b->nb);

	memset(buf, 0, bound < NFT_NLMSG_MAX ? bound : NFT_NLMSG_MAX);
	b->nmsgs++;
	return nftnl_nlmsg_build_hdr(buf, type, NFT_FAMILY, flags | NLM_F_ACK, c->seq++);
}

void
nft_batch_next(struct nft_batch *b)
{
	if (nftnl_batch_update(b->nb) < 0)
		b->bad = true;
}

void
nft_batch_free(struct nft_batch *b)
{
	if (b->nb != NULL)
		nftnl_batch_free(b->nb);
	b->nb = NULL;
}

struct nft_ext {
	const char *msg;	/* the kernel's explanation, if it gave one */
	uint16_t type;		/* NFT_MSG_* of the message acked */
};

static int
nft_ext_attr(const struct nlattr *a, void *data)
{
	struct nft_ext *x = data;

	if (mnl_attr_type_valid(a, NLMSGERR_ATTR_MAX) < 0)
		return MNL_CB_OK;	/* newer kernel: skip what we don't know */
	switch (mnl_attr_get_type(a)) {
	case NLMSGERR_ATTR_MSG:
		if (mnl_attr_validate(a, MNL_TYPE_NUL_STRING) == 0)
			x->msg = mnl_attr_get_str(a);
		break;
	}
	return MNL_CB_OK;
}

/*
 * NLMSG_ERROR: struct nlmsgerr { int error; struct nlmsghdr msg; [msg payload unless
 * NLM_F_CAPPED] } then, with NLM_F_ACK_TLVS, NLMSGERR_ATTR_* (RFC 3549 plus extended acks).
 * Returns the (negative) error, or 1 when the message is too short to say.
 */
static int
nft_err_parse(const struct nlmsghdr *nlh, struct nft_ext *x)
{
	const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);
	size_t len = mnl_nlmsg_get_payload_len(nlh), off = sizeof(*e);

	memset(x, 0, sizeof(*x));
	if (len < sizeof(*e))
		return 1;
	x->type = e->msg.nlmsg_type & 0xff;	/* NFNL_SUBSYS_NFTABLES << 8 | NFT_MSG_* */
	if (e->error != 0 && (nlh->nlmsg_flags & NLM_F_ACK_TLVS)) {
		if (!(nlh->nlmsg_flags & NLM_F_CAPPED) && e->msg.nlmsg_len >= sizeof(e->msg))
			off += e->msg.nlmsg_len - sizeof(e->msg);
		if (off < len)
			(void)mnl_attr_parse_payload((const uint8_t *)e + off, len - off,
			    nft_ext_attr, x);
	}
	return e->error > 0 ? -e->error : e->error;
}

static const char *
nft_msg_name(uint16_t type)
{
	switch (type) {
	case NFT_MSG_NEWTABLE:		return "new table";
	case NFT_MSG_DELTABLE:		return "delete table";
	case NFT_MSG_NEWCHAIN:		return "new chain";
	case NFT_MSG_NEWRULE:		return "new rule";
	case NFT_MSG_NEWSET:		return "new set";
	case NFT_MSG_NEWSETELEM:	return "new set elements";
	case NFT_MSG_NEWOBJ:		return "new counter";
	default:			return "message";
	}
}

/* Empty the receive queue of whatever an aborted exchange left in it. */
static void
nft_drain(struct nft_ctx *c)
{
	ssize_t n;

	do
		n = recv(mnl_socket_get_fd(c->nl), c->rx, c->rxlen, MSG_DONTWAIT);
	while (n >= 0 || errno == EINTR);
}

struct nft_acks {
	uint32_t got, errors;
	int err;		/* the first error */
	bool dead;		/* the kernel rejected the batch as a whole */
	uint32_t gen;		/* the generation the commit's NEWGEN gave; 0: none came */
};

static int nft_gen_msg(const struct nlmsghdr *nlh, void *data);

static void
nft_ack_one(struct nft_ctx *c, const struct nft_batch *b, const struct nlmsghdr *nlh,
    struct nft_acks *a)
{
	uint32_t off = nlh->nlmsg_seq - b->begin_seq;	/* 0: begin, 1..nmsgs: ours */
	struct nft_ext x;
	int err;

	if (nlh->nlmsg_seq == b->echo_seq &&
	    nlh->nlmsg_type == (NFNL_SUBSYS_NFTABLES << 8 | NFT_MSG_NEWGEN)) {
		uint32_t gen = 0;

		if (nft_gen_msg(nlh, &gen) == 0)
			a->gen = gen;	/* the commit's: queued before every ack */
		return;
	}
	if (nlh->nlmsg_type != NLMSG_ERROR || off > b->nmsgs)
		return;		/* not an ack of this batch */
	if ((err = nft_err_parse(nlh, &x)) > 0) {
		a->errors++;
		if (a->err == 0)
			a->err = -EPROTO;
		return;
	}
	if (off >= 1 && err == 0) {
		a->got++;
		return;
	}
	a->errors++;
	if (a->err == 0)
		a->err = err;
	if (off == 0) {
		/* ERESTART: the generation moved; else the commit failed as a whole */
		a->dead = true;
		if (err != -ERESTART)
			nft_warn(c, "batch: %s%s%s", strerror(-err), x.msg ? ": " : "",
			    x.msg ? x.msg : "");
		return;
	}
	a->got++;
	if (a->errors == 1)	/* the first says why; nft_batch_commit() counts the rest */
		nft_warn(c, "%s (message %u of %u): %s%s%s", nft_msg_name(x.type), off,
		    b->nmsgs, strerror(-err), x.msg ? ": " : "", x.msg ? x.msg : "");
}

static int
nft_acks_read(struct nft_ctx *c, const struct nft_batch *b, struct nft_acks *a)
{
	int fd = mnl_socket_get_fd(c->nl);
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	const struct nlmsghdr *nlh;
	ssize_t n;
	int len;

	while (a->got < b->nmsgs && !a->dead) {
		if ((n = recv(fd, c->rx, c->rxlen, MSG_DONTWAIT)) < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return -errno;	/* ENOBUFS: acks were lost */
			if (a->err != 0)
				break;		/* an aborted batch sends nothing later */
			if ((n = poll(&pfd, 1, NFT_REPLY_MS)) < 0 && errno != EINTR)
				return -errno;
			if (n == 0)
				return -ETIMEDOUT;
			continue;
		}
		len = (int)n;
		for (nlh = (const struct nlmsghdr *)c->rx; mnl_nlmsg_ok(nlh, len);
		    nlh = mnl_nlmsg_next(nlh, &len)) {
			if (nlh->nlmsg_pid == 0 || nlh->nlmsg_pid == c->portid)
				nft_ack_one(c, b, nlh, a);
		}
	}
	return 0;
}

/*
 * End the batch, send it in one sendmsg() and read the ack of every message. Returns 0 when
 * the kernel committed it all, else the first error (-ERESTART: the generation moved since
 * genid, nothing applied). Counts batches, elements and errors.
 */
int
nft_batch_commit(struct nft_ctx *c, struct nft_batch *b)
{
	struct sockaddr_nl snl = { .nl_family = AF_NETLINK };
	struct nft_acks a = { 0 };
	struct iovec *iov = NULL;
	struct msghdr msg;
	size_t total = 0, want;
	int iovlen, rc;

	memset(nftnl_batch_buffer(b->nb), 0, NFT_MSG_BOUND);
	nftnl_batch_end(nftnl_batch_buffer(b->nb), c->seq++);
	nft_batch_next(b);
	if (b->bad) {
		rc = -ENOMEM;
		goto out;
	}
	iovlen = nftnl_batch_iovec_len(b->nb);
	if ((iov = calloc((size_t)iovlen, sizeof(*iov))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	nftnl_batch_iovec(b->nb, iov, (uint32_t)iovlen);
	for (int i = 0; i < iovlen; i++)
		total += iov[i].iov_len;
	/* The batch must fit the send buffer whole, and every ack the receive buffer. */
	want = total + NFT_RX_BYTES;
	nft_sock_buf(c, &c->sndbuf, SO_SNDBUFFORCE, SO_SNDBUF,
	    (int)(want < INT32_MAX / 2 ? want : INT32_MAX / 2));
	want = ((size_t)b->nmsgs + 2) * NFT_ACK_TRUESIZE + 4 * NFT_RX_BYTES;
	nft_sock_buf(c, &c->rcvbuf, SO_RCVBUFFORCE, SO_RCVBUF,
	    (int)(want < INT32_MAX / 2 ? want : INT32_MAX / 2));
	msg = (struct msghdr){
		.msg_name = &snl, .msg_namelen = sizeof(snl),
		.msg_iov = iov, .msg_iovlen = (size_t)iovlen,
	};
	if (sendmsg(mnl_socket_get_fd(c->nl), &msg, 0) < 0) {
		rc = -errno;
		nft_warn(c, "send %zu-byte batch: %s", total, strerror(errno));
		goto out;
	}
	rc = nft_acks_read(c, b, &a);
	nft_drain(c);
	if (rc == 0 && a.err == 0 && a.got < b->nmsgs)
		rc = -EPROTO;
	if (rc != 0) {
		/* Lost or missing acks: we cannot tell whether the kernel committed. */
		nft_warn(c, "reading %u acks (%u in): %s", b->nmsgs, a.got, strerror(-rc));
		c->gen = 0;
	} else {
		rc = a.err;
		if (a.errors > 1)
			nft_warn(c, "batch refused: %u of %u messages failed", a.errors, b->nmsgs);
	}
out:
	free(iov);
	if (rc == 0) {
		/*
		 * The generation as the kernel reported it, not predicted: a commit that changed
		 * something sent NEWGEN (genid + 1, since the kernel held it at genid for us); one
		 * that changed nothing (a refreshed element) sends none and leaves genid as it
		 * was. A predicted "+1" would be the generation of the next change someone else
		 * makes, which would go unseen. Anything else: unknown, and the next check
		 * compares listings.
		 */
		uint32_t now_gen = a.gen != 0 ? a.gen : b->genid;

		c->st.batches++;
		c->st.elements += b->nelems;
		if (b->genid != 0 && (now_gen == nft_gen_next(b->genid) || now_gen == b->genid))
			c->gen = now_gen;
		else
			c->gen = 0;
	} else if (rc != -ERESTART) {	/* a lost race is retried, not a failure */
		c->st.errors += a.errors > 0 ? a.errors : 1;
	}
	return rc;
}

/*
 * Send one request (a dump with NLM_F_DUMP, else a get with NLM_F_ACK) and read its reply to
 * the end, handing each data message to cb. name_attr/name, when name is set, is the one
 * attribute (the table) that selects what to get. Returns 0, cb's error, the kernel's error,
 * or -EINTR when the ruleset changed during the dump (ask again).
 */
int
nft_request(struct nft_ctx *c, uint16_t type, uint16_t flags, uint16_t name_attr,
    const char *name, nft_msg_fn *cb, void *data)
{
	char buf[256] = { 0 };	/* libmnl 1.0.4 leaves attribute padding unwritten */
	struct nlmsghdr *nlh;

	if (!(flags & NLM_F_DUMP))
		flags |= NLM_F_ACK;
	nlh = nftnl_nlmsg_build_hdr(buf, type, NFT_FAMILY, flags, c->seq++);
	if (name != NULL)
		mnl_attr_put_strz(nlh, name_attr, name);
	return nft_talk(c, nlh, cb, data);
}

int
nft_talk(struct nft_ctx *c, const struct nlmsghdr *req, nft_msg_fn *cb, void *data)
{
	const struct nlmsghdr *nlh;
	uint32_t seq = req->nlmsg_seq;
	bool done = false, intr = false;
	int rc = 0, len;
	ssize_t n;

	if (mnl_socket_sendto(c->nl, req, req->nlmsg_len) < 0)
		return -errno;
	while (!done) {
		struct iovec iov = { .iov_base = c->rx, .iov_len = c->rxlen };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

		if ((n = recvmsg(mnl_socket_get_fd(c->nl), &msg, 0)) < 0) {
			if (errno == EINTR)
				continue;
			rc = errno == EAGAIN ? -ETIMEDOUT : -errno;
			break;
		}
		if (msg.msg_flags & MSG_TRUNC) {
			rc = -EMSGSIZE;
			break;
		}
		len = (int)n;
		for (nlh = (const struct nlmsghdr *)c->rx; mnl_nlmsg_ok(nlh, len) && !done;
		    nlh = mnl_nlmsg_next(nlh, &len)) {
			if (nlh->nlmsg_seq != seq ||
			    (nlh->nlmsg_pid != 0 && nlh->nlmsg_pid != c->portid))
				continue;	/* left over from an earlier exchange */
			if (nlh->nlmsg_flags & NLM_F_DUMP_INTR)
				intr = true;
			if (nlh->nlmsg_type == NLMSG_DONE) {
				done = true;
			} else if (nlh->nlmsg_type == NLMSG_ERROR) {
				struct nft_ext x;
				int err = nft_err_parse(nlh, &x);

				if (rc == 0)
					rc = err > 0 ? -EPROTO : err;
				done = true;
			} else if (nlh->nlmsg_type >= NLMSG_MIN_TYPE && rc == 0 && cb != NULL) {
				rc = cb(nlh, data);	/* keep reading to the end anyway */
			}
		}
	}
	if (!done)
		nft_drain(c);
	if (rc == 0 && intr)
		rc = -EINTR;
	return rc;
}

static int
nft_gen_attr(const struct nlattr *a, void *data)
{
	const struct nlattr **tb = data;

	if (mnl_attr_type_valid(a, NFTA_GEN_MAX) < 0)
		return MNL_CB_OK;
	if (mnl_attr_get_type(a) == NFTA_GEN_ID && mnl_attr_validate(a, MNL_TYPE_U32) < 0)
		return MNL_CB_ERROR;
	tb[mnl_attr_get_type(a)] = a;
	return MNL_CB_OK;
}

static int
nft_gen_msg(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *tb[NFTA_GEN_MAX + 1] = { 0 };
	uint32_t *gen = data;

	if ((nlh->nlmsg_type & 0xff) != NFT_MSG_NEWGEN)
		return 0;
	if (mnl_attr_parse(nlh, sizeof(struct nfgenmsg), nft_gen_attr, tb) < 0 ||
	    tb[NFTA_GEN_ID] == NULL)
		return -EPROTO;
	*gen = ntohl(mnl_attr_get_u32(tb[NFTA_GEN_ID]));
	return 0;
}

/* The network namespace's ruleset generation (it moves on every committed batch). */
int
nft_gen_get(struct nft_ctx *c, uint32_t *gen)
{
	int rc;

	*gen = 0;
	if ((rc = nft_request(c, NFT_MSG_GETGEN, 0, 0, NULL, nft_gen_msg, gen)) < 0)
		return rc;
	return *gen != 0 ? 0 : -EPROTO;
}

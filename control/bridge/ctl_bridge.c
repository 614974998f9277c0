/*
 * rtnetlink: create, enslave, bring up, delete. Each request is acknowledged before the
 * next is sent, so an error names the step that failed.
 */
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ctl_bridge.h"

static int
ctl_rtnl(struct nlmsghdr *nlh)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct mnl_socket *nl;
	unsigned int seq = (unsigned int)time(NULL), portid;
	int rc;

	if ((nl = mnl_socket_open(NETLINK_ROUTE)) == NULL)
		return -errno;
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		rc = -errno;
		goto out;
	}
	portid = mnl_socket_get_portid(nl);
	nlh->nlmsg_seq = seq;
	nlh->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) {
		rc = -errno;
		goto out;
	}
	rc = (int)mnl_socket_recvfrom(nl, buf, sizeof(buf));
	if (rc < 0) {
		rc = -errno;
		goto out;
	}
	/* the ack: an NLMSG_ERROR whose error is 0, or the failure's -errno */
	rc = mnl_cb_run(buf, (size_t)rc, seq, portid, NULL, NULL) < 0 ? -errno : 0;
out:
	mnl_socket_close(nl);
	return rc;
}

static struct nlmsghdr *
ctl_link_msg(char *buf, uint16_t type, uint16_t flags, int index)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ifinfomsg *ifm;

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = flags;
	ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
	ifm->ifi_family = AF_UNSPEC;
	ifm->ifi_index = index;
	return nlh;
}

/* Set dev's master (0: none) and bring it up. */
static int
ctl_link_up(int index, int master)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = ctl_link_msg(buf, RTM_NEWLINK, 0, index);
	struct ifinfomsg *ifm = mnl_nlmsg_get_payload(nlh);

	ifm->ifi_flags = IFF_UP;
	ifm->ifi_change = IFF_UP;
	if (master > 0)
		mnl_attr_put_u32(nlh, IFLA_MASTER, (uint32_t)master);
	return ctl_rtnl(nlh);
}

int
ctl_bridge_delete(const char *brname)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	int index = (int)if_nametoindex(brname);

	if (index == 0)
		return 0;
	return ctl_rtnl(ctl_link_msg(buf, RTM_DELLINK, 0, index));
}

int
ctl_bridge_create(const char *brname, const char *a, const char *b, char *err, size_t errlen)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;
	struct nlattr *info;
	const char *step;
	int rc, br, ia, ib;

	ctl_bridge_delete(brname);
	nlh = ctl_link_msg(buf, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, 0);
	mnl_attr_put_strz(nlh, IFLA_IFNAME, brname);
	info = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
	mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "bridge");
	mnl_attr_nest_end(nlh, info);
	step = "create";
	if ((rc = ctl_rtnl(nlh)) != 0)
		goto fail;
	step = "find";
	br = (int)if_nametoindex(brname);
	ia = (int)if_nametoindex(a);
	ib = (int)if_nametoindex(b);
	if (br == 0 || ia == 0 || ib == 0) {
		rc = -ENODEV;
		goto fail;
	}
	step = "enslave";
	if ((rc = ctl_link_up(ia, br)) != 0 || (rc = ctl_link_up(ib, br)) != 0)
		goto fail;
	step = "bring up";
	if ((rc = ctl_link_up(br, 0)) != 0)
		goto fail;
	return 0;
fail:
	snprintf(err, errlen, "bridge %s (%s, %s): %s: %s", brname, a, b, step, strerror(-rc));
	ctl_bridge_delete(brname);
	return rc;
}

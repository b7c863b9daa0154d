/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lo of a fresh network namespace, brought up (child side, or the pool's helper). Also built into
 * bench/proxy-throughput, which gives its client the sandbox's loopback.
 */
#include "config.h"

#include <errno.h>
#include <net/if.h>
#include <stdbool.h>
#include <sys/socket.h>

#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/errno.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include "common/cleanup.h"
#include "launcherd/launcherd-net.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct nl_sock *, nl_socket_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct nl_msg *, nlmsg_free);

/* libnl errors are NLE_* codes; callers want errno. */
static int nl_to_errno(int nle)
{
	switch (-nle < 0 ? nle : -nle) {
	case NLE_NOMEM:
		return -ENOMEM;
	case NLE_PERM:
		return -EPERM;
	case NLE_INVAL:
	case NLE_RANGE:
		return -EINVAL;
	case NLE_NODEV:
	case NLE_OBJ_NOTFOUND:
		return -ENODEV;
	default:
		return -EIO;
	}
}

/*
 * Segment size lo may hand to TCP in one piece. A fresh lo takes 64 KiB; the kernel allows it up
 * to its tso_max_size, 512 KiB less 8 ("BIG TCP", IPv6 since 5.19, IPv4 since 6.3). lo never
 * segments, so a sender's 512 KiB is one trip through both TCP stacks instead of eight: loopback
 * traffic inside the sandbox (its own servers, and every byte it moves through the proxy of
 * network mode `proxy`, whose listener is on this lo) costs several times less CPU per byte.
 * bench/proxy-throughput measures it (docs/NETWORK.md).
 */
#define LO_GSO_MAX_SIZE 524280U
#ifndef IFLA_GSO_IPV4_MAX_SIZE
#define IFLA_GSO_IPV4_MAX_SIZE 63 /* linux/if_link.h of 6.3 */
#endif

/* lo up, with gso sizes when big (0: the kernel's default). */
static int loopback_change(struct nl_sock *sk, bool big)
{
	_cleanup_(nlmsg_freep) struct nl_msg *msg = NULL;
	struct ifinfomsg ifi = {
		.ifi_family = AF_UNSPEC,
		/* A fresh netns has exactly one link, lo, always ifindex 1: name it by index
		 * instead of asking the kernel for it first (one round trip less per netns). */
		.ifi_index = 1,
		.ifi_flags = IFF_UP,
		.ifi_change = IFF_UP,
	};
	int r;

	msg = nlmsg_alloc_simple(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK);
	if (!msg || nlmsg_append(msg, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0)
		return -ENOMEM;
	if (big && (nla_put_u32(msg, IFLA_GSO_MAX_SIZE, LO_GSO_MAX_SIZE) < 0 ||
		    nla_put_u32(msg, IFLA_GSO_IPV4_MAX_SIZE, LO_GSO_MAX_SIZE) < 0))
		return -ENOMEM;
	r = nl_send_auto(sk, msg);
	if (r >= 0)
		r = nl_wait_for_ack(sk);
	return r < 0 ? nl_to_errno(r) : 0;
}

int net_loopback_up(void)
{
	_cleanup_(nl_socket_freep) struct nl_sock *sk = NULL;
	int r;

	sk = nl_socket_alloc();
	if (!sk)
		return -ENOMEM;
	r = nl_connect(sk, NETLINK_ROUTE);
	if (r < 0)
		return nl_to_errno(r);
	/* A kernel before 5.19 refuses a gso size over 64 KiB (one before 6.3 ignores the IPv4
	 * attribute): then lo comes up as it is. */
	r = loopback_change(sk, true);
	if (r == -EINVAL)
		r = loopback_change(sk, false);
	return r;
}

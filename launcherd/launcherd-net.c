/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <net/if.h>

#include <netlink/errno.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>
#include <netlink/socket.h>

#include "common/cleanup.h"
#include "launcherd/launcherd-net.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct nl_sock *, nl_socket_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct rtnl_link *, rtnl_link_put);

/* libnl errors are NLE_* codes; callers want errno. */
static int nl_to_errno(int nle)
{
	switch (-nle < 0 ? nle : -nle) {
	case NLE_NOMEM:
		return -ENOMEM;
	case NLE_PERM:
		return -EPERM;
	case NLE_NODEV:
	case NLE_OBJ_NOTFOUND:
		return -ENODEV;
	default:
		return -EIO;
	}
}

int net_loopback_up(void)
{
	_cleanup_(nl_socket_freep) struct nl_sock *sk = NULL;
	_cleanup_(rtnl_link_putp) struct rtnl_link *lo = NULL, *change = NULL;
	int r;

	sk = nl_socket_alloc();
	if (!sk)
		return -ENOMEM;
	r = nl_connect(sk, NETLINK_ROUTE);
	if (r < 0)
		return nl_to_errno(r);
	r = rtnl_link_get_kernel(sk, 1, NULL, &lo); /* loopback is always ifindex 1 */
	if (r < 0)
		return nl_to_errno(r);
	change = rtnl_link_alloc();
	if (!change)
		return -ENOMEM;
	rtnl_link_set_flags(change, IFF_UP);
	r = rtnl_link_change(sk, lo, change, 0);
	return r < 0 ? nl_to_errno(r) : 0;
}

int net_proxy_listener(uint16_t port, int *ret_fd)
{
	(void)port;
	*ret_fd = -1;
	return -EOPNOTSUPP;
}

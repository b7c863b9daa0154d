/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Network set-up inside the sandbox's fresh network namespace (child side).
 */
#pragma once

#include <stdint.h>

/* Bring the loopback interface up (libnl-route). */
int net_loopback_up(void);

/*
 * Hook for network mode "proxy" (its own issue): create a listening TCP socket on
 * 127.0.0.1:port inside the sandbox's netns, to be passed back to the controller with
 * `spawned`. Not implemented yet: returns -EOPNOTSUPP, and launcherd refuses "proxy" plans.
 */
int net_proxy_listener(uint16_t port, int *ret_fd);

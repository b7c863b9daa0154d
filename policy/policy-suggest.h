/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * "cordon policy suggest ID": from the denials of one process (docs/DENIALS.md), the smallest
 * policy change that would have allowed each, as a policy patch (objects merge, arrays append:
 * docs/PROTOCOL.md, "Policies in requests") and one note per refusal; never applied. Pure: the
 * caller brings what it learned of the host (jansson only, like the rest of libpolicy).
 */
#pragma once

#include <jansson.h>

/*
 * policy: the normalized policy document the process ran under (policy.check's "policy").
 * denials: "denial" events (docs/PROTOCOL.md); an "fs" one may carry "explain" (the answer of
 * policy.explain for its path) and "dir" (the nearest directory of its path that exists on the
 * host). *ret: {"patch": {…} (empty when nothing can be suggested), "items": [{"what", "rule"?,
 * "change"? (the patch part, text), "none"? (why nothing can be suggested)}]}, one item per
 * distinct refusal.
 */
int policy_suggest(json_t *policy, json_t *denials, json_t **ret);

/*
 * Which rule refused system call name under policy (normalized document), in a few words:
 * "syscalls.deny", "launcherd's floor", "syscalls.profile strict", or for a call the floor
 * refuses for some arguments only "launcherd's floor or syscalls.profile default" (the record
 * does not say which). A static string.
 */
const char *policy_syscall_decider(json_t *policy, const char *name);

/*
 * The same for one denial event, by what it says of itself: its "filter" ("floor": launcherd's
 * floor, or "network.mode unix" for a socket family that mode alone refuses; "policy": the
 * policy's deny list or profile), else as policy_syscall_decider() guesses from the name.
 */
const char *policy_denial_decider(json_t *policy, json_t *d);

/* A system call denial in a few words, with the arguments that decided it when the event has
 * them: "unshare CLONE_NEWUSER", "socket AF_PACKET", "socket AF_NETLINK protocol 9",
 * "ioctl TIOCSTI", "mount". NULL: out of memory. */
char *policy_denial_syscall_what(json_t *d);

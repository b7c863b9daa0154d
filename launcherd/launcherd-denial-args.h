/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The arguments that decided a refusal of launcherd's floor (launcherd-seccomp.c), named for a
 * "denial" message (docs/DENIALS.md): the socket family, type and protocol of socket() and
 * socketpair(), the namespace flags of clone() and unshare(), ioctl()'s request,
 * personality()'s persona. Pure code: what the sandbox's init reported is checked here, and
 * each value is named from a fixed table or written as a number, never copied as text.
 */
#pragma once

#include <stdint.h>

#include <jansson.h>

/* The kernel's PID_MAX_LIMIT: a pid in a report above it is not one. */
#define DENIAL_PID_MAX (4U * 1024U * 1024U)

/* 0 when nr and arch can be a refused call of this machine's (its native architecture, or
 * a compat one the floor refuses whole), else -EINVAL. */
int denial_args_check(int32_t nr, uint32_t arch);

/* The named arguments of a refused call to syscall (its name; NULL: none named) as an object
 * to merge into the message: {"family": "AF_NETLINK", "socketType": "SOCK_RAW", "protocol": 9},
 * {"flags": ["CLONE_NEWUSER"]}, {"request": "TIOCSTI"}, {"persona": "0x40000"}, or {} for a call
 * the floor refuses whatever its arguments. NULL: out of memory. */
json_t *denial_args_json(const char *syscall, const uint64_t args[6]);

/* "AF_NETLINK" for 16; NULL for a family this table does not name. */
const char *denial_family_name(uint64_t family);

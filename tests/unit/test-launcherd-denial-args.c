/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The named arguments of the floor's refusals (launcherd/launcherd-denial-args.c): what the
 * sandbox's init reports is checked, and each value named from a table or written as a number.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/json-cleanup.h"
#include "launcherd/launcherd-denial-args.h"
#include "tests/tap.h"

static char *dump(const char *syscall, uint64_t a0, uint64_t a1, uint64_t a2)
{
	const uint64_t args[6] = { a0, a1, a2, 0, 0, 0 };
	_cleanup_json_ json_t *o = denial_args_json(syscall, args);

	return o ? json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT) : NULL;
}

static void is_dump(const char *want, const char *syscall, uint64_t a0, uint64_t a1, uint64_t a2,
		    const char *what)
{
	char *got = dump(syscall, a0, a1, a2);

	is_str(want, got ? got : "(null)", "%s", what);
	free(got);
}

int main(void)
{
	plan_lazy();

	is_dump("{\"family\":\"AF_NETLINK\",\"protocol\":9,\"socketType\":\"SOCK_RAW\"}", "socket",
		16, 3 | 0x80000, 9, "socket: family, type without its flags, protocol");
	is_dump("{\"family\":\"AF_PACKET\",\"protocol\":768,\"socketType\":\"SOCK_DGRAM\"}",
		"socket", 17, 2, 768, "socket: AF_PACKET");
	is_dump("{\"family\":\"AF_VSOCK\",\"socketType\":\"SOCK_STREAM\"}", "socket", 40, 1,
		(uint64_t)-1, "socket: a negative protocol is left out");
	is_dump("{\"family\":\"99\",\"protocol\":0}", "socket", 99, 0, 0,
		"socket: a family the table does not name is its number, a type neither");
	is_dump("{\"family\":\"AF_NETLINK\"}", "socket", 0xffffffff00000010ULL, 15, 70000,
		"socket: the kernel's int, the low 32 bits; a protocol above 16 bits is left out");
	is_dump("{\"family\":\"AF_INET\",\"protocol\":0,\"socketType\":\"SOCK_STREAM\"}",
		"socketpair", 2, 1, 0, "socketpair: family");
	is_dump("{\"flags\":[\"CLONE_NEWUSER\"]}", "unshare", 0x10000000, 0, 0,
		"unshare: CLONE_NEWUSER");
	is_dump("{\"flags\":[\"CLONE_NEWNS\",\"CLONE_NEWNET\",\"CLONE_NEWTIME\"]}", "unshare",
		0x40020080, 0, 0, "unshare: several, CLONE_NEWTIME among them");
	is_dump("{\"flags\":[\"CLONE_NEWPID\"]}", "clone", 0x20000000 | 0x80 | 17, 0, 0,
		"clone: 0x80 is the exit signal's, not CLONE_NEWTIME");
	is_dump("{\"flags\":[]}", "clone", 0x11, 0, 0, "clone: no namespace flag");
	is_dump("{\"request\":\"TIOCSTI\"}", "ioctl", 0, 0xffffffff00005412ULL, 0,
		"ioctl: TIOCSTI, the low 32 bits");
	is_dump("{\"request\":\"TIOCLINUX\"}", "ioctl", 0, 0x541c, 0, "ioctl: TIOCLINUX");
	is_dump("{\"request\":\"0x5413\"}", "ioctl", 0, 0x5413, 0, "ioctl: another, in hex");
	is_dump("{\"persona\":\"0x40000\"}", "personality", 0x40000, 0, 0, "personality");
	is_dump("{}", "mount", 1, 2, 3, "mount: refused whatever its arguments");
	is_dump("{}", NULL, 1, 2, 3, "a call without a name");

	is_int(0, denial_args_check(41, 0xc000003eU), "x86_64 socket is a call");
#if defined(__x86_64__)
	is_int(0, denial_args_check(359, 0x40000003U), "i386 too (the floor refuses it whole)");
	is_int(0, denial_args_check(0x40000000 | 41, 0xc000003eU), "x32's too");
	ok(denial_args_check(0x40000000 | 4096, 0xc000003eU) < 0, "but not beyond the table");
	ok(denial_args_check(0x40000000 | 41, 0x40000003U) < 0, "nor in i386's numbers");
#endif
	ok(denial_args_check(-1, 0xc000003eU) < 0, "a negative number is refused");
	ok(denial_args_check(4096, 0xc000003eU) < 0, "a number out of range is refused");
	ok(denial_args_check(41, 0x12345678U) < 0, "an unknown architecture is refused");
	is_str("AF_UNIX", denial_family_name(1), "AF_UNIX named");
	ok(denial_family_name(46) == NULL, "the first family past the table is not named");
	return tap_exit_status();
}

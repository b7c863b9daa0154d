/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * no-userns COMMAND [ARG]...: run COMMAND on a "hardened host" — a seccomp filter (inherited by
 * everything it runs) makes unshare/clone with CLONE_NEWUSER fail with EPERM and clone3 fail
 * with ENOSYS, so the client cannot create user namespaces itself. The launcherd tests use it to
 * show that such a client still gets a sandbox from the privileged daemon.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <seccomp.h>

int main(int argc, char **argv)
{
	scmp_filter_ctx ctx;

	if (argc < 2) {
		fprintf(stderr, "usage: no-userns COMMAND [ARG]...\n");
		return 2;
	}
	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx ||
	    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 1,
			     SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER)) < 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
			     SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER)) < 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0) < 0 ||
	    seccomp_load(ctx) < 0) {
		fprintf(stderr, "no-userns: cannot install the filter\n");
		return 2;
	}
	seccomp_release(ctx);
	/* Prove the filter works before running the command. */
	if (unshare(CLONE_NEWUSER) == 0 || errno != EPERM) {
		fprintf(stderr, "no-userns: unshare(CLONE_NEWUSER) was not refused\n");
		return 2;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "no-userns: %s: %s\n", argv[1], strerror(errno));
	return 127;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A plan's filter in front of launcherd's notifying floor, one program (seccomp_combine(),
 * launcherd/launcherd-seccomp.c): for the plans cordon's policies compile to, over every system
 * call number of three architectures and the arguments the floor and the profiles decide by, a
 * process sees from the one program (with the init's answers) exactly what it sees from the two
 * filters stacked; and what cannot go in front is refused, so that the two are stacked instead.
 */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/audit.h>

#include "common/cleanup.h"
#include "launcherd/launcherd-seccomp.h"
#include "policy/policy-seccomp.h"
#include "policy/policy-syscalls.h"
#include "tests/seccomp-stacked.h"
#include "tests/tap.h"

#ifndef TIOCSTI
#define TIOCSTI 0x5412
#endif

static struct seccomp_program floors[2];

/* The plan the policy compiles for these rules (the controller's code). */
static int plan_of(const struct policy_syscall_rule *rules, size_t n, struct seccomp_program *ret)
{
	_cleanup_close_ int fd = -1;
	int r = policy_seccomp_program(rules, n, &fd);

	return r < 0 ? r : seccomp_program_read(fd, ret);
}

/* One data point: the same outcome both ways. */
static bool same(const struct seccomp_program *plan, const struct seccomp_program *floor,
		 const struct seccomp_program *combined, const struct seccomp_data *d)
{
	struct seccomp_outcome s = seccomp_stacked(plan->insns, (uint32_t)plan->len, floor->insns,
						   (uint32_t)floor->len, d),
			       c = seccomp_combined(combined->insns, (uint32_t)combined->len,
						    plan->insns, (uint32_t)plan->len, d);

	if (s.action == c.action && s.error == c.error)
		return true;
	diag("nr %d arch %#x a0 %#llx a1 %#llx: stacked %#x/%u, combined %#x/%u", d->nr, d->arch,
	     (unsigned long long)d->args[0], (unsigned long long)d->args[1], s.action, s.error,
	     c.action, c.error);
	return false;
}

/* Every number (and x32's), three architectures, the arguments that decide. Returns the count
 * of points checked, or 0 at the first difference. */
static unsigned compare_all(const struct seccomp_program *plan, const struct seccomp_program *floor)
{
	static const uint32_t arches[] = { AUDIT_ARCH_X86_64, AUDIT_ARCH_I386, AUDIT_ARCH_AARCH64 };
	static const uint64_t a0s[] = { 0,
					1,
					2,
					10,
					16,
					17,
					40,
					CLONE_NEWUSER,
					CLONE_NEWNET | CLONE_VM,
					CLONE_NEWNS,
					0x0040000 /* ADDR_NO_RANDOMIZE */,
					0xffffffff,
					UINT64_MAX };
	static const uint64_t a1s[] = { 0, 1, 2, 3, 10, TIOCSTI, 0x541C, 0x80003 };
	_cleanup_(seccomp_program_done) struct seccomp_program combined = { 0 };
	unsigned n = 0;

	if (seccomp_combine(plan, floor, &combined) < 0)
		return 0;
	for (size_t a = 0; a < ELEMENTSOF(arches); a++)
		for (uint32_t nr = 0; nr < 1100; nr++) {
			/* x32's numbers, and some above every table */
			int32_t sys = nr < 500	  ? (int32_t)nr
				      : nr < 1000 ? (int32_t)(0x40000000U + nr - 500)
						  : (int32_t)(nr * 7919);

			for (size_t i = 0; i < ELEMENTSOF(a0s); i++)
				for (size_t j = 0; j < ELEMENTSOF(a1s); j++) {
					struct seccomp_data d = { .nr = sys,
								  .arch = arches[a],
								  .args = { a0s[i], a1s[j], 9 } };

					if (!same(plan, floor, &combined, &d))
						return 0;
					n++;
				}
		}
	return n;
}

static int combine_of(const struct sock_filter *insns, size_t len)
{
	_cleanup_(seccomp_program_done) struct seccomp_program out = { 0 };
	struct seccomp_program p = { (struct sock_filter *)insns, len };

	return seccomp_combine(&p, &floors[0], &out);
}

int main(void)
{
	size_t n_default, n_strict;
	const struct policy_syscall_rule *def = policy_syscall_profile_rules(
						 POLICY_SYSCALLS_DEFAULT, &n_default),
					 *strict = policy_syscall_profile_rules(
						 POLICY_SYSCALLS_STRICT, &n_strict);
	_cleanup_free_ struct policy_syscall_rule *more = NULL;
	struct seccomp_program plans[4] = { 0 };
	const char *names[4] = { "the default profile", "the strict profile",
				 "the default profile + deny chdir, getcwd, socket",
				 "deny chdir alone" };
	const struct policy_syscall_rule extra[] = { { "chdir", POLICY_SYSCALL_DENY },
						     { "getcwd", POLICY_SYSCALL_DENY },
						     { "socket", POLICY_SYSCALL_DENY } };
	int r;

	plan_lazy();
	for (int u = 0; u < 2; u++) {
		r = seccomp_floor_compile(FLOOR_ACTION_NOTIFY, u, &floors[u]);
		if (r < 0) {
			skip(1, "no notifying floor here: %s", strerror(-r));
			return tap_exit_status();
		}
		ok(seccomp_floor_combinable(&floors[u]),
		   "the notifying floor (%s) reads nothing a plan could leave behind (%zu instructions)",
		   u ? "network unix" : "every other network", floors[u].len);
	}

	more = calloc(n_default + ELEMENTSOF(extra), sizeof(*more));
	if (!more)
		abort();
	memcpy(more, def, n_default * sizeof(*def));
	memcpy(more + n_default, extra, sizeof(extra));
	is_int(0, plan_of(def, n_default, &plans[0]), "the default profile compiles");
	is_int(0, plan_of(strict, n_strict, &plans[1]), "the strict profile compiles");
	is_int(0, plan_of(more, n_default + ELEMENTSOF(extra), &plans[2]),
	       "the default profile with a deny list compiles");
	is_int(0, plan_of(extra, 1, &plans[3]), "a lone deny list compiles");

	for (size_t i = 0; i < ELEMENTSOF(plans); i++)
		for (int u = 0; u < 2; u++) {
			unsigned n = plans[i].len ? compare_all(&plans[i], &floors[u]) : 0;

			ok(n > 0,
			   "%s in front of the floor (%s): what a process sees is the same as "
			   "stacked, at %u points",
			   names[i], u ? "network unix" : "other networks", n);
		}

	/* What the init itself calls: a plan refusing one is stacked instead. */
	{
		const struct policy_syscall_rule k[] = { { "kill", POLICY_SYSCALL_DENY } },
						 pp[] = { { "ppoll", POLICY_SYSCALL_DENY } },
						 io[] = { { "ioctl", POLICY_SYSCALL_IOCTL_TTY } };
		_cleanup_(seccomp_program_done) struct seccomp_program pk = { 0 }, ppp = { 0 },
								       pio = { 0 }, out = { 0 };

		if (plan_of(k, 1, &pk) < 0 || plan_of(pp, 1, &ppp) < 0 || plan_of(io, 1, &pio) < 0)
			abort();
		is_int(-EOPNOTSUPP, seccomp_combine(&pk, &floors[0], &out),
		       "a plan refusing kill (the init forwards signals with it): stacked");
		is_int(-EOPNOTSUPP, seccomp_combine(&ppp, &floors[0], &out),
		       "a plan refusing ppoll (the init waits with it): stacked");
		is_int(0, seccomp_combine(&pio, &floors[0], &out),
		       "a plan refusing terminal ioctls only (not the init's): in front");
	}

	/* Shapes that cannot go in front. */
	{
		const struct sock_filter
			ret_a[] = { BPF_STMT(BPF_LD | BPF_IMM, SECCOMP_RET_ALLOW),
				    BPF_STMT(BPF_RET | BPF_A, 0) },
			ja_out[] = { BPF_STMT(BPF_JMP | BPF_JA, 1),
				     BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) },
			jt_out[] = { BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0),
				     BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 1, 1, 0),
				     BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) },
			jf_out[] = { BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0),
				     BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 1, 0, 1),
				     BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) },
			no_ret[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
				     BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0) },
			log[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_LOG) },
			trace[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE) },
			notif[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF) },
			bad[] = { BPF_STMT(BPF_RET | BPF_K, 0x00010000) },
			kill_trap[] = { BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						 offsetof(struct seccomp_data, nr)),
					BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 1000, 0, 1),
					BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
					BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 1001, 0, 1),
					BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
					BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 1002, 0, 1),
					BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 5000),
					BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
		_cleanup_free_ struct sock_filter *big = NULL;
		size_t n_big = SECCOMP_PROGRAM_MAX_INSNS - floors[0].len + 1;

		is_int(-EOPNOTSUPP, combine_of(ret_a, ELEMENTSOF(ret_a)), "RET A: stacked");
		is_int(-EOPNOTSUPP, combine_of(ja_out, ELEMENTSOF(ja_out)),
		       "a JA past the plan's end (into the floor): stacked");
		is_int(-EOPNOTSUPP, combine_of(jt_out, ELEMENTSOF(jt_out)),
		       "a jt past the plan's end: stacked");
		is_int(-EOPNOTSUPP, combine_of(jf_out, ELEMENTSOF(jf_out)),
		       "a jf past the plan's end: stacked");
		is_int(-EOPNOTSUPP, combine_of(no_ret, ELEMENTSOF(no_ret)),
		       "no RET last (it would fall into the floor): stacked");
		is_int(-EOPNOTSUPP, combine_of(log, 1), "RET LOG (lets the call run): stacked");
		is_int(-EOPNOTSUPP, combine_of(trace, 1), "RET TRACE: stacked");
		is_int(-EOPNOTSUPP, combine_of(notif, 1),
		       "a notification of the plan's own: stacked");
		is_int(-EOPNOTSUPP, combine_of(bad, 1), "an unknown action: stacked");
		is_int(-EOPNOTSUPP, combine_of(NULL, 0), "an empty plan: stacked");
		big = calloc(n_big, sizeof(*big));
		if (!big)
			abort();
		for (size_t i = 0; i < n_big; i++)
			big[i] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
		is_int(-EOPNOTSUPP, combine_of(big, n_big),
		       "%zu + %zu instructions, one too many: stacked", n_big, floors[0].len);
		is_int(0, combine_of(big, n_big - 1), "one fewer: in front");
		{
			struct seccomp_program p = { (struct sock_filter *)kill_trap,
						     ELEMENTSOF(kill_trap) };
			_cleanup_(seccomp_program_done) struct seccomp_program c = { 0 };
			struct seccomp_data d = { .arch = AUDIT_ARCH_X86_64 };
			struct seccomp_outcome o;
			bool all = true;

			is_int(0, seccomp_combine(&p, &floors[0], &c),
			       "kill, trap and an errno above 4095: in front");
			for (int nr = 1000; nr <= 1002 && c.len; nr++) {
				d.nr = nr;
				all = all && same(&p, &floors[0], &c, &d);
			}
			d.nr = 1002;
			o = seccomp_combined(c.insns, (uint32_t)c.len, p.insns, (uint32_t)p.len,
					     &d);
			ok(all && o.action == SECCOMP_RET_ERRNO && o.error == 4095,
			   "  and each seen as stacked (the errno capped at 4095, as the kernel does)");
		}
	}

	for (size_t i = 0; i < ELEMENTSOF(plans); i++)
		seccomp_program_done(&plans[i]);
	seccomp_program_done(&floors[0]);
	seccomp_program_done(&floors[1]);
	return tap_exit_status();
}

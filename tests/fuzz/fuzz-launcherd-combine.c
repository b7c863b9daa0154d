/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * seccomp_combine() (launcherd/launcherd-seccomp.c) on arbitrary plans: the plan's filter comes
 * from the requester, and launcherd puts it in front of its own floor in one program. Input: a
 * struct seccomp_data (64 bytes, zero-padded when shorter), then the plan's instructions.
 *
 * When it combines: nothing in the plan's part of the program can let a call past the floor
 * (no RET that allows, logs or traces; every jump inside the plan's part), and for the input's
 * data, under the native architecture and under its own, a process sees from the one program
 * (with the init's answers) exactly what it sees from the two filters stacked. A broken
 * invariant aborts (a crash to the fuzzer, a failure to the corpus replay).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <linux/audit.h>

#include "common/cleanup.h"
#include "launcherd/launcherd-seccomp.h"
#include "tests/seccomp-stacked.h"

#include "tests/fuzz/fuzz.h"

static void check_same(const struct seccomp_program *plan, const struct seccomp_program *floor,
		       const struct seccomp_program *c, const struct seccomp_data *d)
{
	struct seccomp_outcome s = seccomp_stacked(plan->insns, (uint32_t)plan->len, floor->insns,
						   (uint32_t)floor->len, d),
			       o = seccomp_combined(c->insns, (uint32_t)c->len, plan->insns,
						    (uint32_t)plan->len, d);

	check(s.action == o.action && s.error == o.error);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct seccomp_program floor;
	static bool have_floor, tried;
	_cleanup_(seccomp_program_done) struct seccomp_program c = { 0 };
	_cleanup_free_ struct sock_filter *insns = NULL;
	struct seccomp_program plan;
	struct seccomp_data d = { 0 };
	size_t n;

	if (!tried) {
		tried = true;
		have_floor = seccomp_floor_compile(FLOOR_ACTION_NOTIFY, false, &floor) == 0 &&
			     seccomp_floor_combinable(&floor);
	}
	if (!have_floor)
		return 0;
	memcpy(&d, data, size < sizeof(d) ? size : sizeof(d));
	if (size <= sizeof(d))
		return 0;
	n = (size - sizeof(d)) / sizeof(struct sock_filter);
	if (n == 0 || n > SECCOMP_PROGRAM_MAX_INSNS)
		return 0;
	insns = malloc(n * sizeof(*insns));
	if (!insns)
		return 0;
	memcpy(insns, data + sizeof(d), n * sizeof(*insns));
	plan = (struct seccomp_program){ insns, n };
	if (seccomp_combine(&plan, &floor, &c) < 0)
		return 0;

	check(c.len == n + floor.len && memcmp(c.insns + n, floor.insns, floor.len * 8) == 0);
	for (size_t i = 0; i < n; i++) {
		const struct sock_filter *f = &c.insns[i];
		uint32_t action = f->k & SECCOMP_RET_ACTION_FULL;

		if (BPF_CLASS(f->code) == BPF_RET) {
			check(BPF_RVAL(f->code) == BPF_K);
			check(action == SECCOMP_RET_KILL_PROCESS ||
			      action == SECCOMP_RET_KILL_THREAD || action == SECCOMP_RET_TRAP ||
			      action == SECCOMP_RET_USER_NOTIF ||
			      (action == SECCOMP_RET_ERRNO && (f->k & SECCOMP_RET_DATA) == ENOSYS));
		} else if (BPF_CLASS(f->code) == BPF_JMP) {
			/* Inside the plan's part, or (a JA) exactly to the floor's start. */
			if (BPF_OP(f->code) == BPF_JA)
				check(i + 1 + (size_t)f->k <= n &&
				      (i + 1 + (size_t)f->k < n ||
				       BPF_CLASS(insns[i].code) == BPF_RET));
			else
				check(i + 1 + f->jt < n && i + 1 + f->jf < n);
		}
	}
	check_same(&plan, &floor, &c, &d);
	d.arch = AUDIT_ARCH_X86_64;
	check_same(&plan, &floor, &c, &d);
	d.arch = AUDIT_ARCH_AARCH64;
	check_same(&plan, &floor, &c, &d);
	return 0;
}

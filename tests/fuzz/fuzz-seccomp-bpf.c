/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The seccomp classic-BPF interpreter (launcherd/seccomp-bpf.h) on arbitrary bytes: a struct
 * seccomp_data (64 bytes), then the program's instructions (8 bytes each, a partial one
 * dropped). Each is copied to a buffer of exactly its size, so a read past the program or the
 * data is a sanitizer report; a loop is a timeout. A program the interpreter refuses must run
 * to 0, one it accepts must run the same without the whole-program check (seccomp_bpf_exec(),
 * the init's), which must also be safe on any program; a run must give the same answer twice.
 * A broken invariant aborts.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "launcherd/seccomp-bpf.h"

#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seccomp_data *d;
	struct sock_filter *prog;
	size_t n;
	uint32_t ret;

	if (size < sizeof(*d))
		return 0;
	n = (size - sizeof(*d)) / sizeof(*prog);
	d = malloc(sizeof(*d));
	prog = malloc(n ? n * sizeof(*prog) : 1);
	if (!d || !prog)
		abort();
	memcpy(d, data, sizeof(*d));
	if (n)
		memcpy(prog, data + sizeof(*d), n * sizeof(*prog));
	ret = seccomp_bpf_run(prog, (uint32_t)n, d);
	if (!seccomp_bpf_check(prog, (uint32_t)n))
		check(ret == 0);
	else /* the init's run, without the whole check, on what the kernel loads */
		check(seccomp_bpf_exec(prog, (uint32_t)n, d) == ret);
	check(seccomp_bpf_run(prog, (uint32_t)n, d) == ret);
	/* On anything at all: safe (each instruction checked as it runs), the same twice. */
	check(seccomp_bpf_exec(prog, (uint32_t)n, d) == seccomp_bpf_exec(prog, (uint32_t)n, d));
	free(prog);
	free(d);
	return 0;
}

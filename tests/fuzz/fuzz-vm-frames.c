/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * builtin:vm's guard frames (backends/vm/vm-proto.h) on arbitrary bytes: the first byte picks
 * the parser (GUARD, which the guest agent reads from the host; DENIAL, which the host reads
 * from the guest), the rest is the payload. A parser must stay within the bytes given, and
 * what it accepts must hold: a GUARD's program is whole instructions within the payload, at
 * most VM_GUARD_PROGRAM_MAX bytes; a DENIAL's comm and exe are NUL-terminated within it. A
 * broken invariant aborts.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "backends/vm/vm-proto.h"

#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *b;
	uint32_t len;

	if (size < 1 || size - 1 > VM_FRAME_MAX)
		return 0;
	len = (uint32_t)(size - 1);
	/* A copy of exactly the payload's size: reading past it is a sanitizer report. */
	b = malloc(len ? len : 1);
	if (!b)
		return 0;
	memcpy(b, data + 1, len);
	if (data[0] % 2 == 0) {
		struct vm_guard g;

		if (vm_guard_parse(b, len, &g) == 0) {
			check(g.prog == b + VM_GUARD_FIXED);
			check(g.prog_len % 8 == 0 && g.prog_len <= VM_GUARD_PROGRAM_MAX);
			check(VM_GUARD_FIXED + (size_t)g.prog_len == len);
			check(g.id == vm_get32(b) && g.memory == vm_get64(b + 4));
		}
	} else {
		struct vm_denial d;

		if (vm_denial_parse(b, len, &d) == 0) {
			const uint8_t *end = b + len;
			size_t c = strlen(d.comm), e;

			check((const uint8_t *)d.comm == b + VM_DENIAL_FIXED);
			check((const uint8_t *)d.comm + c < end);
			check(d.exe == d.comm + c + 1);
			e = strlen(d.exe);
			check((const uint8_t *)d.exe + e < end);
			check(d.id == vm_get32(b) && d.pid == vm_get32(b + 24));
		}
	}
	free(b);
	return 0;
}

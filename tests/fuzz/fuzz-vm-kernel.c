/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * builtin:vm's kernel inspector (what `cordon doctor` says of a guest kernel) on arbitrary bytes:
 * the ELF header, program headers and notes are bounds-checked, the version is a bounded,
 * printable string.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "backends/vm/vm-kernel.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vm_kernel_info k;
	size_t n;

	vm_kernel_inspect_buf(data, size, &k);
	n = strnlen(k.version, sizeof(k.version));
	if (n == sizeof(k.version) || (k.pvh && !k.elf))
		abort();
	for (size_t i = 0; i < n; i++)
		if (k.version[i] <= ' ' || k.version[i] >= 0x7f)
			abort();
	return 0;
}

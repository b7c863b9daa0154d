/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* Implemented by every fuzz target; libFuzzer's entry point. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A target's invariant: a broken one aborts (a crash to the fuzzer, a failure to the corpus
 * replay). */
#define check(x)                 \
	do {                     \
		if (!(x))        \
			abort(); \
	} while (0)

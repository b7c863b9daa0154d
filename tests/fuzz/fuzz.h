/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Implemented by every fuzz target; libFuzzer's entry point. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

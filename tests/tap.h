/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A small TAP emitter in the spirit of c-tap-harness: plan, ok, is_int, is_str, diag, skip,
 * skip_all (prints "1..0 # SKIP reason", or fails when CORDON_MUST_WORK=1), bail.
 */
#pragma once

#include <stdbool.h>

#include "common/cleanup.h"

void plan(unsigned n);
/* For tests whose count is known only at the end. */
void plan_lazy(void);
bool ok(bool cond, const char *fmt, ...) _printf_(2, 3);
bool is_int(long long want, long long got, const char *fmt, ...) _printf_(3, 4);
bool is_str(const char *want, const char *got, const char *fmt, ...) _printf_(3, 4);
void diag(const char *fmt, ...) _printf_(1, 2);
void skip(unsigned n, const char *fmt, ...) _printf_(2, 3);
/* Skip the whole test for a missing feature; a failure under CORDON_MUST_WORK=1. */
_noreturn_ void skip_all(const char *fmt, ...) _printf_(1, 2);
_noreturn_ void bail(const char *fmt, ...) _printf_(1, 2);
/* Exit status summarizing the run (0 all passed and the plan matched, 1 otherwise). */
int tap_exit_status(void);

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

/* Fixture helpers shared by the unit tests (each bails on out-of-memory). */
/* $top_srcdir, or "." outside make check. */
const char *tap_srcdir(void);
/* dir/name, malloc'd. */
char *tap_path_in(const char *dir, const char *name);
/* The sorted names in dir ending in suffix, NULL-terminated (free with strv_free). */
char **tap_list_files(const char *dir, const char *suffix);
/*
 * The ".expect" sidecar of an invalid fixture (path ends in ".json"): line 1 the field, line 2
 * the reason, returned as one malloc'd buffer that *ret_field points into (free it); bails when
 * the sidecar is missing or has no second line.
 */
char *tap_read_expect(const char *path, const char **ret_field, const char **ret_reason);
/* Entries of dir other than "." and "..", or -errno. */
int tap_dir_entries(const char *dir);
/* Remove dir and everything below it (no symlink is followed); -errno on failure. */
int tap_rm_rf(const char *dir);

/* Exit status summarizing the run (0 all passed and the plan matched, 1 otherwise). */
int tap_exit_status(void);

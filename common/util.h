/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Pure helpers: no I/O, no global state. Side-effecting OS helpers live in common/system.h.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/cleanup.h"

static inline bool streq(const char *a, const char *b)
{
	return strcmp(a, b) == 0;
}

static inline bool streq_ptr(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

static inline bool isempty(const char *s)
{
	return !s || !*s;
}

/*
 * The command line as execve(2) counts it, end to end (CLI, controller, plan, launcherd, the
 * sandbox's exec): every argv and envp string with its NUL, plus one pointer per string, at most
 * CORDON_ARG_MAX bytes: the kernel's own rule (a quarter of the stack rlimit; 2 MiB, `getconf
 * ARG_MAX`, with the default 8 MiB stack) less a reserve. One string, with its NUL, at most CORDON_ARG_STRLEN_MAX
 * (the kernel's MAX_ARG_STRLEN). A command line over either is refused up front (E2BIG) instead
 * of failing at the sandbox's exec.
 */
#define CORDON_ARG_MAX (2U * 1024U * 1024U - CORDON_ARG_RESERVE)
/* Kept back from the kernel's 2 MiB for what the exec adds itself: the program's path (up to
 * PATH_MAX), the first pointer slot, the sandbox init's own argv[0] (launcherd-light.c). */
#define CORDON_ARG_RESERVE (8U * 1024U)
#define CORDON_ARG_STRLEN_MAX (128U * 1024U)
/* The fewest bytes one string costs (its NUL and its pointer): the most strings there can be. */
#define CORDON_ARG_ITEMS_MAX (CORDON_ARG_MAX / (1U + sizeof(char *)))

/* Returns the rest of s after prefix, or NULL. */
const char *startswith(const char *s, const char *prefix);
bool endswith(const char *s, const char *suffix);

/* Strict decimal parsers: no sign (for unsigned), no blanks, no trailing junk, range checked. */
int safe_atou(const char *s, unsigned *ret);
int safe_atou64(const char *s, uint64_t *ret);
int safe_atoi(const char *s, int *ret);

/* NULL-terminated string vectors. */
size_t strv_length(char *const *l);
void strv_free(char **l);
char **strv_copy(char *const *l);
bool strv_contains(char *const *l, const char *s);
static inline void strv_freep(char ***l)
{
	strv_free(*l);
}
#define _cleanup_strv_free_ _cleanup_(strv_freep)

/*
 * A path is "normalized" when it is absolute, has no "." or ".." component, no empty component
 * ("//"), no trailing slash (except "/" itself), and no control characters.
 */
bool path_is_absolute(const char *p);
bool path_is_normalized(const char *p);
/* True when path equals prefix or lies below it (component-wise, both normalized). */
bool path_startswith(const char *path, const char *prefix);

/* printf into a fresh string; NULL on OOM. */
char *strdup_printf(const char *fmt, ...) _printf_(1, 2);

/* Overflow-checked size arithmetic. */
static inline bool size_add_overflow(size_t a, size_t b, size_t *ret)
{
	return __builtin_add_overflow(a, b, ret);
}
static inline bool size_mul_overflow(size_t a, size_t b, size_t *ret)
{
	return __builtin_mul_overflow(a, b, ret);
}

/* Bounded case-insensitive ASCII compare; true when a equals b ignoring ASCII case. */
bool ascii_strcaseeq(const char *a, const char *b);

/* Standard base64 (RFC 4648, with padding). Encode returns a NUL-terminated string or NULL on
 * OOM; decode refuses anything but canonical input (-EINVAL). */
char *base64_encode(const void *data, size_t len);
int base64_decode(const char *s, size_t len, void **ret, size_t *ret_len);

/* True when s[0..len) is valid UTF-8 without NUL bytes (what a JSON string can carry as is). */
bool utf8_is_valid(const char *s, size_t len);

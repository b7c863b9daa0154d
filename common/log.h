/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Logging. Library code (ipc/, policy/, common/) logs at debug level only; the caller that decides
 * logs once. The log_*_errno() forms return the negative errno they were given, so a caller can
 * write `return log_error_errno(r, "…");`.
 */
#pragma once

#include <stdarg.h>

#include "common/cleanup.h"

enum log_level {
	LOG_LEVEL_ERROR = 3,
	LOG_LEVEL_WARNING = 4,
	LOG_LEVEL_NOTICE = 5,
	LOG_LEVEL_INFO = 6,
	LOG_LEVEL_DEBUG = 7,
};

/* Program name used as prefix; defaults to "cordon". Not copied: pass a literal. */
void log_set_ident(const char *ident);
void log_set_max_level(enum log_level level);
enum log_level log_get_max_level(void);
/* Reads CORDON_LOG_LEVEL (error|warning|notice|info|debug, or 3..7). */
void log_parse_environment(void);

int log_internal(enum log_level level, int error, const char *file, int line, const char *fmt, ...)
	_printf_(5, 6);

#define log_full_errno(level, error, ...)                                           \
	({                                                                          \
		int _e_ = (error);                                                  \
		(level) <= log_get_max_level()                                      \
			? log_internal(level, _e_, __FILE__, __LINE__, __VA_ARGS__) \
			: -(_e_ < 0 ? -_e_ : _e_);                                  \
	})

#define log_debug(...) log_full_errno(LOG_LEVEL_DEBUG, 0, __VA_ARGS__)
#define log_info(...) log_full_errno(LOG_LEVEL_INFO, 0, __VA_ARGS__)
#define log_notice(...) log_full_errno(LOG_LEVEL_NOTICE, 0, __VA_ARGS__)
#define log_warning(...) log_full_errno(LOG_LEVEL_WARNING, 0, __VA_ARGS__)
#define log_error(...) log_full_errno(LOG_LEVEL_ERROR, 0, __VA_ARGS__)

#define log_debug_errno(e, ...) log_full_errno(LOG_LEVEL_DEBUG, e, __VA_ARGS__)
#define log_info_errno(e, ...) log_full_errno(LOG_LEVEL_INFO, e, __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_LEVEL_WARNING, e, __VA_ARGS__)
#define log_error_errno(e, ...) log_full_errno(LOG_LEVEL_ERROR, e, __VA_ARGS__)

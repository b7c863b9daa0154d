/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"

static const char *log_ident = "cordon";
static enum log_level log_max_level = LOG_LEVEL_INFO;

void log_set_ident(const char *ident)
{
	log_ident = ident;
}

void log_set_max_level(enum log_level level)
{
	log_max_level = level;
}

enum log_level log_get_max_level(void)
{
	return log_max_level;
}

void log_parse_environment(void)
{
	static const struct {
		const char *name;
		enum log_level level;
	} names[] = {
		{ "error", LOG_LEVEL_ERROR },	{ "warning", LOG_LEVEL_WARNING },
		{ "notice", LOG_LEVEL_NOTICE }, { "info", LOG_LEVEL_INFO },
		{ "debug", LOG_LEVEL_DEBUG },
	};
	const char *e = getenv("CORDON_LOG_LEVEL");
	unsigned v;

	if (!e)
		return;
	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		if (streq(e, names[i].name)) {
			log_max_level = names[i].level;
			return;
		}
	if (safe_atou(e, &v) >= 0 && v >= LOG_LEVEL_ERROR && v <= LOG_LEVEL_DEBUG)
		log_max_level = (enum log_level)v;
}

int log_internal(enum log_level level, int error, const char *file, int line, const char *fmt, ...)
{
	int saved = errno;
	int e = error < 0 ? -error : error;
	char msg[2048];
	va_list ap;

	/* %m in the format means the error we were given, not whatever errno holds now. */
	errno = e;
	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);

	if (log_max_level >= LOG_LEVEL_DEBUG)
		(void)fprintf(stderr, "%s: %s (%s:%d)\n", log_ident, msg, file, line);
	else
		(void)fprintf(stderr, "%s: %s\n", log_ident, msg);

	errno = saved;
	return -e;
}

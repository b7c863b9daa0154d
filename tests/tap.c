/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/system.h"
#include "common/util.h"
#include "tests/tap.h"

static unsigned tap_planned, tap_run, tap_failed;
static bool tap_lazy;

static void tap_atexit(void)
{
	if (tap_lazy)
		printf("1..%u\n", tap_run);
	else if (tap_planned != tap_run)
		printf("# planned %u tests but ran %u\n", tap_planned, tap_run);
	fflush(stdout);
}

void plan(unsigned n)
{
	tap_planned = n;
	printf("1..%u\n", n);
	fflush(stdout);
	atexit(tap_atexit);
}

void plan_lazy(void)
{
	tap_lazy = true;
	atexit(tap_atexit);
}

static bool vok(bool cond, const char *fmt, va_list ap)
{
	tap_run++;
	if (!cond)
		tap_failed++;
	printf("%sok %u - ", cond ? "" : "not ", tap_run);
	vprintf(fmt, ap);
	putchar('\n');
	fflush(stdout);
	return cond;
}

bool ok(bool cond, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vok(cond, fmt, ap);
	va_end(ap);
	return cond;
}

bool is_int(long long want, long long got, const char *fmt, ...)
{
	bool cond = want == got;
	va_list ap;

	va_start(ap, fmt);
	vok(cond, fmt, ap);
	va_end(ap);
	if (!cond)
		diag("    wanted: %lld\n#      got: %lld", want, got);
	return cond;
}

bool is_str(const char *want, const char *got, const char *fmt, ...)
{
	bool cond = (want && got) ? strcmp(want, got) == 0 : want == got;
	va_list ap;

	va_start(ap, fmt);
	vok(cond, fmt, ap);
	va_end(ap);
	if (!cond)
		diag("    wanted: \"%s\"\n#      got: \"%s\"", want ? want : "(null)",
		     got ? got : "(null)");
	return cond;
}

void diag(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

void skip(unsigned n, const char *fmt, ...)
{
	char reason[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	for (unsigned i = 0; i < n; i++)
		printf("ok %u # SKIP %s\n", ++tap_run, reason);
	fflush(stdout);
}

void skip_all(const char *fmt, ...)
{
	const char *must = getenv("CORDON_MUST_WORK");
	char reason[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	if (must && strcmp(must, "1") == 0) {
		printf("1..1\nnot ok 1 - required feature missing (CORDON_MUST_WORK=1): %s\n",
		       reason);
		fflush(stdout);
		_exit(1);
	}
	printf("1..0 # SKIP %s\n", reason);
	fflush(stdout);
	_exit(0);
}

void bail(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	printf("Bail out! ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	_exit(255);
}

int tap_exit_status(void)
{
	return tap_failed == 0 && (tap_lazy || tap_planned == tap_run) ? 0 : 1;
}

const char *tap_srcdir(void)
{
	const char *s = getenv("top_srcdir");

	return s ? s : ".";
}

char *tap_path_in(const char *dir, const char *name)
{
	char *p = strdup_printf("%s/%s", dir, name);

	if (!p)
		bail("out of memory");
	return p;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char **tap_list_files(const char *dir, const char *suffix)
{
	_cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	if (!d || !l)
		bail("cannot list %s", dir);
	while ((de = readdir(d))) {
		char **nl;

		if (!endswith(de->d_name, suffix))
			continue;
		nl = reallocarray(l, n + 2, sizeof(char *));
		if (!nl)
			bail("out of memory");
		l = nl;
		l[n] = strdup(de->d_name);
		if (!l[n])
			bail("out of memory");
		l[++n] = NULL;
	}
	qsort(l, n, sizeof(char *), cmp_str);
	return TAKE_PTR(l);
}

char *tap_read_expect(const char *path, const char **ret_field, const char **ret_reason)
{
	_cleanup_free_ char *epath = strdup_printf("%.*s.expect", (int)(strlen(path) - 5), path);
	char *expect = NULL, *nl;

	if (!epath || read_full_file(epath, 4096, &expect, NULL) < 0)
		bail("missing %s", epath ? epath : "expect file");
	nl = strchr(expect, '\n');
	if (!nl)
		bail("%s: want two lines", epath);
	*nl = '\0';
	if (endswith(nl + 1, "\n"))
		nl[strlen(nl + 1)] = '\0';
	*ret_field = expect;
	*ret_reason = nl + 1;
	return expect;
}

int tap_dir_entries(const char *dir)
{
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d)))
		if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
			n++;
	return n;
}

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	return remove(path) < 0 ? -1 : 0;
}

int tap_rm_rf(const char *dir)
{
	return nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS) < 0 ? -errno : 0;
}

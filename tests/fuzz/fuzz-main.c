/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Corpus replay for make check (systemd src/fuzz/ style): runs LLVMFuzzerTestOneInput on every
 * file of tests/fuzz/corpus/<target>/ (or of the directories/files given as arguments) and
 * reports each as a TAP line. A crash or sanitizer report fails the test.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/system.h"
#include "common/util.h"
#include "tests/fuzz/fuzz.h"
#include "tests/tap.h"

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void replay_file(const char *path)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r = read_full_file(path, 16U * 1024U * 1024U, &buf, &len);

	if (!ok(r >= 0, "read %s", path))
		return;
	(void)LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
	ok(true, "replayed %s (%zu bytes)", path, len);
}

static int replay_dir(const char *dir)
{
	struct dirent **names = NULL;
	int n = scandir(dir, &names, NULL, NULL);

	if (n < 0)
		return -errno;
	qsort(names, (size_t)n, sizeof(*names), cmp);
	for (int i = 0; i < n; i++) {
		if (names[i]->d_name[0] != '.') {
			_cleanup_free_ char *p = strdup_printf("%s/%s", dir, names[i]->d_name);

			if (p)
				replay_file(p);
		}
		free(names[i]);
	}
	free(names);
	return 0;
}

int main(int argc, char **argv)
{
	plan_lazy();
	if (argc > 1) {
		for (int i = 1; i < argc; i++)
			if (replay_dir(argv[i]) == -ENOTDIR)
				replay_file(argv[i]);
	} else {
		const char *srcdir = getenv("top_srcdir");
		const char *base = strrchr(argv[0], '/');
		_cleanup_free_ char *dir = NULL;

		base = base ? base + 1 : argv[0];
		/* libtool-free build: the program name is the target name. */
		dir = strdup_printf("%s/tests/fuzz/corpus/%s", srcdir ? srcdir : ".",
				    startswith(base, "fuzz-") ? base + 5 : base);
		if (!dir)
			bail("out of memory");
		if (replay_dir(dir) < 0)
			bail("cannot read corpus directory %s", dir);
	}
	return tap_exit_status();
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cordon-vm-helpers: builtin:vm's guest helpers, fetched and verified (vm-helpers.h) in a process
 * of their own, as the user who runs it: `cordon vm fetch-helpers` runs it, and so may the
 * backend, so that neither the CLI nor the controller links libcurl.
 *
 *   cordon-vm-helpers fetch --dir DIR [--base-url URL] [--progress] [--offline] [NAME…]
 *   cordon-vm-helpers download --url URL --sha256 HEX --out FILE [--max-bytes N] [--progress]
 *   cordon-vm-helpers pins
 *
 * fetch: one line per helper on stdout ("NAME reused|fetched SHA256 SIZE PATH"); with --progress
 * a bar on stderr when it is a terminal (a line per download otherwise). On failure, the reason
 * on stderr ("cordon-vm-helpers: …") and exit 1 (2: usage).
 *
 * download: any one file (`cordon vm setup --url`'s kernel package) into FILE, kept only when its
 * sha256 is HEX (and it is at most N bytes, default 1 GiB); "FILE fetched SHA256 SIZE" on stdout.
 * Exit 0; 3 the file does not match (nothing is left); 1 the download failed; 2 usage.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/vm/vm-helpers.h"
#include "common/cleanup.h"
#include "common/util.h"

struct progress {
	bool enabled, tty;
	const char *dir;
	int last_pct;
};

static void on_progress(const char *name, enum vm_helper_state state, uint64_t done, uint64_t total,
			void *ud)
{
	struct progress *p = ud;
	int pct = total ? (int)(done * 100 / total) : 100;

	switch (state) {
	case VM_HELPER_REUSED:
	case VM_HELPER_FETCHED: {
		const struct vm_helper_pin *pin = vm_helper_pin(name);

		if (!pin) { /* download: the caller prints */
			if (p->enabled && p->tty)
				fputc('\n', stderr);
			break;
		}

		if (p->enabled && p->tty && state == VM_HELPER_FETCHED)
			fputc('\n', stderr);
		printf("%s %s %s %llu %s/%s\n", name,
		       state == VM_HELPER_REUSED ? "reused" : "fetched", pin->sha256,
		       (unsigned long long)done, p->dir, name);
		fflush(stdout);
		break;
	}
	case VM_HELPER_FETCHING:
		p->last_pct = -1;
		if (p->enabled && !p->tty && total)
			fprintf(stderr, "fetching %s (%llu bytes)\n", name,
				(unsigned long long)total);
		else if (p->enabled && !p->tty)
			fprintf(stderr, "fetching %s\n", name);
		/* fall through */
	case VM_HELPER_PROGRESS:
		if (p->enabled && p->tty && !total) {
			fprintf(stderr, "\r%-12s %llu bytes", name, (unsigned long long)done);
			p->last_pct = 0;
		} else if (p->enabled && p->tty && pct != p->last_pct) {
			char bar[41];
			int n = pct * 40 / 100;

			memset(bar, '#', (size_t)n);
			memset(bar + n, '.', (size_t)(40 - n));
			bar[40] = '\0';
			fprintf(stderr, "\r%-12s [%s] %3d%% %llu/%llu", name, bar, pct,
				(unsigned long long)done, (unsigned long long)total);
			p->last_pct = pct;
		}
		break;
	}
}

static int usage(FILE *f, int code)
{
	fprintf(f, "Usage: cordon-vm-helpers fetch --dir DIR [--base-url URL] [--progress] "
		   "[--offline] [NAME...]\n"
		   "       cordon-vm-helpers download --url URL --sha256 HEX --out FILE "
		   "[--max-bytes N] [--progress]\n"
		   "       cordon-vm-helpers pins\n"
		   "Default base URL: " VM_HELPERS_BASE_URL "\n");
	return code;
}

static int download(int argc, char **argv)
{
	static const struct option opts[] = { { "url", required_argument, NULL, 'u' },
					      { "sha256", required_argument, NULL, 's' },
					      { "out", required_argument, NULL, 'o' },
					      { "max-bytes", required_argument, NULL, 'm' },
					      { "progress", no_argument, NULL, 'p' },
					      { "help", no_argument, NULL, 'h' },
					      {} };
	_cleanup_free_ char *dir = NULL;
	struct vm_helpers_opts o = { 0 };
	struct progress p = { .last_pct = -1 };
	const char *url = NULL, *sha = NULL, *out = NULL, *slash;
	unsigned long long max = 1ULL << 30, size;
	char err[1024], hex[65];
	int c, r;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
		switch (c) {
		case 'u':
			url = optarg;
			break;
		case 's':
			sha = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		case 'm': {
			char *end;

			errno = 0;
			max = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end || max == 0)
				return usage(stderr, 2);
			break;
		}
		case 'p':
			p.enabled = true;
			break;
		case 'h':
			return usage(stdout, 0);
		default:
			return usage(stderr, 2);
		}
	}
	if (!url || !sha || !out || optind < argc || !path_is_absolute(out) ||
	    !(slash = strrchr(out, '/')) || !slash[1]) {
		fprintf(stderr, "cordon-vm-helpers: download wants --url, --sha256 and an absolute "
				"--out FILE\n");
		return 2;
	}
	dir = strndup(out, slash == out ? 1 : (size_t)(slash - out));
	if (!dir)
		return 1;
	o.dir = dir;
	p.dir = dir;
	p.tty = isatty(STDERR_FILENO);
	o.progress = on_progress;
	o.userdata = &p;
	r = vm_helpers_download(&o, url, slash + 1, sha, max, err, sizeof(err));
	if (r < 0) {
		if (p.enabled && p.tty && p.last_pct >= 0)
			fputc('\n', stderr);
		fprintf(stderr, "cordon-vm-helpers: %s\n", *err ? err : strerror(-r));
		return r == -EBADMSG ? 3 : r == -EINVAL || r == -EPROTONOSUPPORT ? 2 : 1;
	}
	{
		_cleanup_(closep) int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		uint64_t sz = 0;

		if (dfd < 0 || vm_helpers_digest_at(dfd, slash + 1, hex, &sz) < 0)
			return 1;
		size = sz;
	}
	printf("%s fetched %s %llu\n", out, hex, size);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "dir", required_argument, NULL, 'd' },
					      { "base-url", required_argument, NULL, 'u' },
					      { "progress", no_argument, NULL, 'p' },
					      { "offline", no_argument, NULL, 'o' },
					      { "help", no_argument, NULL, 'h' },
					      {} };
	struct vm_helpers_opts o = { 0 };
	struct progress p = { .last_pct = -1 };
	char err[1024];
	int c, r;

	if (argc < 2)
		return usage(stderr, 2);
	if (streq(argv[1], "pins")) {
		for (const struct vm_helper_pin *pin = vm_helper_pins; pin->name; pin++)
			printf("%s %s %llu\n", pin->name, pin->sha256,
			       (unsigned long long)pin->size);
		return 0;
	}
	if (streq(argv[1], "-h") || streq(argv[1], "--help"))
		return usage(stdout, 0);
	if (streq(argv[1], "download"))
		return download(argc - 1, argv + 1);
	if (!streq(argv[1], "fetch"))
		return usage(stderr, 2);
	argc--, argv++;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
		switch (c) {
		case 'd':
			o.dir = optarg;
			break;
		case 'u':
			o.base_url = optarg;
			break;
		case 'p':
			p.enabled = true;
			break;
		case 'o':
			o.offline = true;
			break;
		case 'h':
			return usage(stdout, 0);
		default:
			return usage(stderr, 2);
		}
	}
	if (!o.dir || !path_is_absolute(o.dir)) {
		fprintf(stderr, "cordon-vm-helpers: --dir wants an absolute path\n");
		return 2;
	}
	p.dir = o.dir;
	p.tty = isatty(STDERR_FILENO);
	o.progress = on_progress;
	o.userdata = &p;
	r = vm_helpers_ensure(&o, optind < argc ? (const char *const *)argv + optind : NULL, err,
			      sizeof(err));
	if (r < 0) {
		if (p.enabled && p.tty && p.last_pct >= 0)
			fputc('\n', stderr);
		fprintf(stderr, "cordon-vm-helpers: %s\n", *err ? err : strerror(-r));
		return 1;
	}
	return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cordon vm setup: put a guest kernel in builtin:vm's <vmDir> (its kernel setting's directory,
 * by default $XDG_STATE_HOME/cordon/vm) from the distribution's generic kernel package, fetched
 * and never installed (apt-get download, --package FILE.deb, or --mirror URL with --sha256), and
 * rebuild the initramfs when the guest helpers are there. The work is fetch-kernel.sh's (in
 * pkgdatadir/vm), run here as the user; a download by URL is cordon-vm-helpers' (the CLI links no
 * libcurl).
 *
 * cordon vm fetch-helpers: prefetch builtin:vm's guest helpers into the directory the backend
 * uses (<vmDir>/bin: beside its kernel setting, by default $XDG_STATE_HOME/cordon/vm/bin), from
 * its helpersBaseUrl setting (or the built-in release URL). The settings come from the
 * controller; the download and the verification against the pins are cordon-vm-helpers', run
 * here as the user (the CLI links no libcurl), with its progress bar on this terminal.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/cleanup.h"
#include "common/json-cleanup.h"
#include "common/util.h"
#include "backends/vm/vm-paths.h"

#ifndef CORDON_LIBEXECDIR
#define CORDON_LIBEXECDIR "/usr/local/libexec"
#endif

static const char usage_text[] =
	"Usage: cordon vm setup [--package FILE.deb | --mirror URL] [--sha256 HEX] [--dir DIR]\n"
	"                       [--force] [--json]\n"
	"       cordon vm fetch-helpers [--base-url URL] [--dir DIR] [--json]\n\n"
	"setup: fetch the distribution's generic kernel package (not installed on this host) and\n"
	"put its vmlinux and the modules the guest needs where builtin:vm looks for them.\n"
	"  --package FILE.deb  a linux-image package already here (default: apt-get download, which\n"
	"                      apt verifies through its signed index)\n"
	"  --mirror URL        download the .deb from this URL (https:, http:, file:); needs --sha256\n"
	"  --sha256 HEX        the package's digest: anything else is refused (exit 3)\n"
	"  --dir DIR           <vmDir> (default: builtin:vm's kernel setting's directory, else\n"
	"                      $XDG_STATE_HOME/cordon/vm)\n"
	"  --force             fetch again even if a verified kernel is in place\n"
	"Exit: 0 done, 1 the package could not be had, 3 refused (digest, corrupt, no kernel),\n"
	"4 it could not be put in place; the kernel in place before stays on any failure.\n\n"
	"fetch-helpers: fetch builtin:vm's guest helpers now (they are otherwise fetched when\n"
	"the backend first needs them), each verified against the sha256 this cordon was built\n"
	"with.\n"
	"  --base-url URL  where from (https:, http:, file:); default: builtin:vm's helpersBaseUrl\n"
	"                  setting, else the release mirror cordon was built with\n"
	"  --dir DIR       where to (default: bin/ beside builtin:vm's kernel setting, else\n"
	"                  $XDG_STATE_HOME/cordon/vm/bin)\n";

static const char *setting(json_t *view, const char *id)
{
	json_t *f;
	size_t i;

	json_array_foreach(json_object_get(view, "fields"), i, f) {
		if (!streq_ptr(json_string_value(json_object_get(f, "id")), id))
			continue;
		if (streq_ptr(json_string_value(json_object_get(f, "source")), "unset"))
			return NULL;
		return json_string_value(json_object_get(f, "value"));
	}
	return NULL;
}

static char *default_dir(void)
{
	const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");

	if (!isempty(state))
		return strdup_printf("%s/cordon/vm/bin", state);
	return strdup_printf("%s/.local/state/cordon/vm/bin", isempty(home) ? "/" : home);
}

/* Run cordon-vm-helpers fetch; its lines ("NAME reused|fetched SHA256 SIZE PATH") become the
 * output. */
static int run_fetch(struct cli *cli, const char *dir, const char *base_url)
{
	_cleanup_free_ char *dflt = NULL;
	_cleanup_json_ json_t *list = json_array();
	const char *tool = getenv("CORDON_VM_HELPERS");
	const char *argv[9];
	char line[4096];
	size_t n = 0;
	int p[2], status;
	pid_t pid;
	FILE *f;

	if (isempty(tool)) {
		dflt = strdup_printf("%s/cordon-vm-helpers", CORDON_LIBEXECDIR);
		tool = dflt;
	}
	if (!tool || !list)
		return CLI_EXIT_FAILURE;
	argv[n++] = tool;
	argv[n++] = "fetch";
	argv[n++] = "--dir";
	argv[n++] = dir;
	if (base_url) {
		argv[n++] = "--base-url";
		argv[n++] = base_url;
	}
	argv[n++] = "--progress";
	argv[n] = NULL;

	if (pipe2(p, O_CLOEXEC) < 0) {
		fprintf(stderr, "cordon: vm fetch-helpers: %s\n", strerror(errno));
		return CLI_EXIT_FAILURE;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "cordon: vm fetch-helpers: %s\n", strerror(errno));
		safe_close(p[0]);
		safe_close(p[1]);
		return CLI_EXIT_FAILURE;
	}
	if (pid == 0) {
		if (dup2(p[1], STDOUT_FILENO) < 0)
			_exit(127);
		execv(tool, (char *const *)argv);
		fprintf(stderr, "cordon: vm fetch-helpers: cannot run %s: %s\n", tool,
			strerror(errno));
		_exit(127);
	}
	safe_close(p[1]);
	f = fdopen(p[0], "r");
	while (f && fgets(line, sizeof(line), f)) {
		char name[64], state[16], sha[65], path[3072];
		unsigned long long size;

		if (sscanf(line, "%63s %15s %64s %llu %3071[^\n]", name, state, sha, &size, path) !=
		    5)
			continue;
		if (cli->json)
			json_array_append_new(list, json_pack("{s:s,s:s,s:s,s:I,s:s}", "name", name,
							      "state", state, "sha256", sha, "size",
							      (json_int_t)size, "path", path));
		else
			printf("%s: %s (%llu bytes, sha256 %s) %s\n", name, state, size, sha, path);
	}
	if (f)
		fclose(f);
	else
		safe_close(p[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return CLI_EXIT_FAILURE;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return WIFEXITED(status) && WEXITSTATUS(status) == 2 ? CLI_EXIT_USAGE
								     : CLI_EXIT_FAILURE;
	if (cli->json) {
		_cleanup_json_ json_t *out = json_pack("{s:s,s:O}", "dir", dir, "helpers", list);

		cli_print_json(out);
	}
	return CLI_EXIT_OK;
}

static int fetch_helpers(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = { { "base-url", required_argument, NULL, 'u' },
					      { "dir", required_argument, NULL, 'd' },
					      { "help", no_argument, NULL, 'h' },
					      {} };
	_cleanup_json_ json_t *view = NULL;
	_cleanup_free_ char *dir = NULL;
	const char *base_url = NULL, *dir_arg = NULL;
	int c, r;

	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
		switch (c) {
		case 'u':
			base_url = optarg;
			break;
		case 'd':
			dir_arg = optarg;
			break;
		case 'h':
			printf("%s", usage_text);
			return CLI_EXIT_OK;
		default:
			fprintf(stderr, "%s", usage_text);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s", usage_text);
		return CLI_EXIT_USAGE;
	}
	if (dir_arg && !path_is_absolute(dir_arg))
		return cli_usage_error("vm fetch-helpers", "--dir wants an absolute path", dir_arg);

	/* What the backend would use, unless both are given. */
	if (!dir_arg || !base_url) {
		const char *kernel;

		r = cli_call_simple(cli, "backend.settings.get",
				    json_pack("{s:s}", "backend", "builtin:vm"), &view,
				    "vm fetch-helpers");
		if (r != CLI_EXIT_OK)
			return r;
		if (!base_url)
			base_url = setting(view, "helpersBaseUrl");
		kernel = setting(view, "kernel");
		if (!dir_arg && !isempty(kernel) && strchr(kernel, '/')) {
			const char *slash = strrchr(kernel, '/');

			dir = strdup_printf("%.*s/bin", (int)(slash - kernel), kernel);
		}
	}
	if (dir_arg)
		dir = strdup(dir_arg);
	else if (!dir)
		dir = default_dir();
	if (!dir)
		return CLI_EXIT_FAILURE;
	return run_fetch(cli, dir, isempty(base_url) ? NULL : base_url);
}

/* Run tool with argv, its stdout into out (at most size-1 bytes, NUL-terminated) or /dev/null;
 * stderr is ours. Its exit status, 128+N for a signal, or -errno. */
static int run_child(const char *const *argv, const char *helpers, char *out, size_t size)
{
	size_t len = 0;
	int p[2], status;
	ssize_t k;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		safe_close(p[0]);
		safe_close(p[1]);
		return -errno;
	}
	if (pid == 0) {
		int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0 || dup2(p[1], STDOUT_FILENO) < 0)
			_exit(127);
		if (helpers && setenv("CORDON_VM_HELPERS", helpers, 1) < 0)
			_exit(127);
		execv(argv[0], (char *const *)argv);
		fprintf(stderr, "cordon: vm setup: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	safe_close(p[1]);
	for (;;) {
		char sink[512];
		char *buf = out && len + 1 < size ? out + len : sink;
		size_t room = out && len + 1 < size ? size - 1 - len : sizeof(sink);

		k = read(p[0], buf, room);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		if (buf != sink)
			len += (size_t)k;
	}
	safe_close(p[0]);
	if (out && size)
		out[len] = '\0';
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The value of key in <vmDir>/kernel/source ("KEY VALUE..." lines), or NULL. */
static char *source_field(const char *dir, const char *key)
{
	_cleanup_free_ char *path = strdup_printf("%s/kernel/source", dir);
	FILE *f = path ? fopen(path, "re") : NULL;
	char line[4096], *v = NULL;
	size_t n = strlen(key);

	while (f && !v && fgets(line, sizeof(line), f))
		if (strncmp(line, key, n) == 0 && line[n] == ' ') {
			line[strcspn(line, "\n")] = '\0';
			v = strdup(line + n + 1);
		}
	if (f)
		fclose(f);
	return v;
}

static int setup(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = { { "package", required_argument, NULL, 'p' },
					      { "mirror", required_argument, NULL, 'm' },
					      { "sha256", required_argument, NULL, 's' },
					      { "dir", required_argument, NULL, 'd' },
					      { "force", no_argument, NULL, 'f' },
					      { "help", no_argument, NULL, 'h' },
					      {} };
	_cleanup_free_ char *dir = NULL, *initramfs = NULL, *agent = NULL, *bin = NULL,
			    *dflt_tool = NULL, *dflt_script = NULL;
	_cleanup_json_ json_t *view = NULL;
	const char *package = NULL, *mirror = NULL, *sha = NULL, *dir_arg = NULL;
	const char *tool = getenv("CORDON_VM_HELPERS"), *script = getenv("CORDON_VM_FETCH_KERNEL");
	const char *initrd_setting = NULL, *sargv[20];
	bool force = false, agent_ok = false;
	char out[4096];
	size_t n = 0;
	int c, r;

	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
		switch (c) {
		case 'p':
			package = optarg;
			break;
		case 'm':
			mirror = optarg;
			break;
		case 's':
			sha = optarg;
			break;
		case 'd':
			dir_arg = optarg;
			break;
		case 'f':
			force = true;
			break;
		case 'h':
			printf("%s", usage_text);
			return CLI_EXIT_OK;
		default:
			fprintf(stderr, "%s", usage_text);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s", usage_text);
		return CLI_EXIT_USAGE;
	}
	if (package && mirror)
		return cli_usage_error("vm setup", "--package and --mirror exclude each other",
				       mirror);
	if (mirror && !sha)
		return cli_usage_error("vm setup", "--mirror needs --sha256", mirror);
	if (mirror && !startswith(mirror, "https://") && !startswith(mirror, "http://") &&
	    !startswith(mirror, "file://"))
		return cli_usage_error(
			"vm setup", "--mirror wants an https://, http:// or file:// URL", mirror);
	if (sha && (strlen(sha) != 64 || sha[strspn(sha, "0123456789abcdefABCDEF")]))
		return cli_usage_error("vm setup", "--sha256 wants 64 hex digits", sha);
	if (dir_arg && !path_is_absolute(dir_arg))
		return cli_usage_error("vm setup", "--dir wants an absolute path", dir_arg);
	if (package && access(package, R_OK) < 0) {
		fprintf(stderr, "cordon: vm setup: %s: %s\n", package, strerror(errno));
		return CLI_EXIT_FAILURE;
	}

	/* Where the backend looks, unless --dir says. */
	if (!dir_arg) {
		const char *kernel;

		r = cli_call_simple(cli, "backend.settings.get",
				    json_pack("{s:s}", "backend", "builtin:vm"), &view, "vm setup");
		if (r != CLI_EXIT_OK)
			return r;
		kernel = setting(view, "kernel");
		initrd_setting = setting(view, "initrd");
		if (!isempty(kernel)) {
			const char *slash = strrchr(kernel, '/');

			if (!slash || !streq(slash, "/vmlinux")) {
				fprintf(stderr,
					"cordon: vm setup: builtin:vm's kernel setting is %s; setup "
					"installs DIR/vmlinux: point the setting at one, or give "
					"--dir\n",
					kernel);
				return CLI_EXIT_USAGE;
			}
			dir = strndup(kernel, (size_t)(slash - kernel));
		}
	}
	if (dir_arg)
		dir = strdup(dir_arg);
	else if (!dir) {
		_cleanup_free_ char *b = default_dir();

		dir = b ? strndup(b, strlen(b) - strlen("/bin")) : NULL;
	}
	if (!dir)
		return CLI_EXIT_FAILURE;
	if (isempty(tool)) {
		dflt_tool = strdup_printf("%s/cordon-vm-helpers", CORDON_LIBEXECDIR);
		tool = dflt_tool;
	}
	if (isempty(script)) {
		dflt_script = strdup_printf("%s/fetch-kernel.sh", VM_SCRIPTS_DIR);
		script = dflt_script;
	}
	bin = strdup_printf("%s/bin", dir);
	agent = strdup_printf("%s/bin/agent", dir);
	initramfs = strdup_printf("%s/initramfs.cpio.gz", dir);
	if (!tool || !script || !bin || !agent || !initramfs)
		return CLI_EXIT_FAILURE;
	/* The initramfs is rebuilt from the agent only when it is the pinned one (else the
	 * activation fetches it and builds the initramfs then). */
	if (isempty(initrd_setting) && access(agent, F_OK) == 0) {
		const char *vargv[] = { tool, "fetch", "--offline", "--dir", bin, "agent", NULL };

		agent_ok = run_child(vargv, NULL, NULL, 0) == 0;
		if (!agent_ok)
			fprintf(stderr,
				"cordon: vm setup: the guest agent in %s does not verify: the "
				"initramfs is built when builtin:vm is activated\n",
				bin);
	}

	sargv[n++] = "/bin/sh";
	sargv[n++] = script;
	if (package) {
		sargv[n++] = "--package";
		sargv[n++] = package;
	}
	if (mirror) {
		sargv[n++] = "--url";
		sargv[n++] = mirror;
	}
	if (sha) {
		sargv[n++] = "--sha256";
		sargv[n++] = sha;
	}
	if (isempty(initrd_setting)) {
		sargv[n++] = "--initramfs";
		sargv[n++] = initramfs;
		if (agent_ok) {
			sargv[n++] = "--agent";
			sargv[n++] = agent;
		}
	}
	if (force)
		sargv[n++] = "--force";
	if (isatty(STDERR_FILENO))
		sargv[n++] = "--progress";
	sargv[n++] = dir;
	sargv[n] = NULL;
	r = run_child(sargv, tool, out, sizeof(out));
	if (r != 0) {
		if (r < 0)
			fprintf(stderr, "cordon: vm setup: cannot run %s: %s\n", script,
				strerror(-r));
		else if (r > 4)
			fprintf(stderr, "cordon: vm setup: %s failed (status %d)\n", script, r);
		return r == 2 ? CLI_EXIT_USAGE : r == 3 || r == 4 ? r : CLI_EXIT_FAILURE;
	}
	{
		_cleanup_free_ char *kernel = strdup_printf("%s/vmlinux", dir);
		_cleanup_free_ char *pkg = source_field(dir, "package");
		_cleanup_free_ char *digest = source_field(dir, "sha256");
		_cleanup_free_ char *verified = source_field(dir, "verified");
		_cleanup_free_ char *from = source_field(dir, "from");
		bool have_initramfs = isempty(initrd_setting) && access(initramfs, R_OK) == 0;

		if (cli->json) {
			_cleanup_json_ json_t *o = json_pack(
				"{s:s,s:s,s:s?,s:s?,s:s?,s:s?,s:s?}", "dir", dir, "kernel", kernel,
				"package", pkg, "sha256", digest, "verified", verified, "from",
				from, "initramfs", have_initramfs ? initramfs : NULL);

			cli_print_json(o);
		} else {
			printf("kernel: %s (%s)\n", kernel, pkg ? pkg : "?");
			printf("package sha256: %s, verified: %s\n", digest ? digest : "?",
			       verified ? verified : "?");
			if (have_initramfs)
				printf("initramfs: %s\n", initramfs);
			else if (isempty(initrd_setting))
				printf("initramfs: built when builtin:vm is activated\n");
		}
	}
	return CLI_EXIT_OK;
}

int cli_cmd_vm(struct cli *cli, int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "%s", usage_text);
		return CLI_EXIT_USAGE;
	}
	if (streq(argv[1], "-h") || streq(argv[1], "--help")) {
		printf("%s", usage_text);
		return CLI_EXIT_OK;
	}
	if (streq(argv[1], "fetch-helpers"))
		return fetch_helpers(cli, argc - 1, argv + 1);
	if (streq(argv[1], "setup"))
		return setup(cli, argc - 1, argv + 1);
	fprintf(stderr, "cordon: vm: unknown command \"%s\"\n%s", argv[1], usage_text);
	return CLI_EXIT_USAGE;
}

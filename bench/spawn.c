/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench/spawn: what a sandboxed /bin/true costs through cordon-launcherd, paired against
 * bubblewrap and plain fork+exec on the same run. Not a test: numbers depend on the machine;
 * quote the ratios.
 *
 *   bench/spawn [--launcherd PATH] [--rounds N] [--seconds S] [--bwrap PATH] [--plan-filter]
 *   bench/spawn --launcherd-only [--seconds S]   (launcherd's throughput alone: for a profiler)
 *
 * Latency: request → reaped, the three commands alternating A B C A B C … for N rounds; medians
 * of each, and medians of the per-round ratios launcherd/bwrap and differences
 * launcherd − fork+exec. Throughput: 2 concurrent clients doing back-to-back spawns, launcherd
 * vs bwrap, S seconds each in four alternating slices (L B B L). Namespace teardown runs in
 * kernel work queues after a sandbox is gone, so a slice's work does not end with it: each slice
 * counts until the machine is back to the load it had before the run (polled every 100 ms), so
 * that each side pays for its own deferred work and never for the other's; the whole machine's
 * CPU time over the slices, per sandbox, says what a sandbox costs however the work was spread.
 * Idle RSS of the daemon before and after.
 *
 * The launcherd sandbox is a full one: mount, pid, net, ipc, uts and cgroup namespaces, a tmpfs
 * root with /usr read-only and the merged-/usr links, proc, a minimal dev, a private /tmp,
 * pivot_root, all capabilities dropped, no-new-privs, Landlock (ABI as available: fs rights,
 * TCP, scopes), the seccomp floor. bwrap runs with --unshare-all and the same mounts. With
 * --plan-filter the plan also carries the seccomp program that `cordon run` compiles for the
 * default policy's syscalls profile (policy_seccomp_program(), stacked on the floor), as the
 * controller's plans do.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench-stats.h"
#include "common/json-cleanup.h"
#include "common/system.h"
#include "common/util.h"
#include "backends/ctl-launcher.h"
#include "policy/policy-default.h"
#include "policy/policy-seccomp.h"
#include "policy/policy-syscalls.h"

static const char *plan_text =
	"{\"argv\":[\"/bin/true\"],\"envp\":[\"PATH=/usr/bin:/bin\"],\"cwd\":\"/\","
	"\"mounts\":["
	"{\"type\":\"bind\",\"source\":0,\"target\":\"/usr\"},"
	"{\"type\":\"symlink\",\"target\":\"/bin\",\"link\":\"usr/bin\"},"
	"{\"type\":\"symlink\",\"target\":\"/lib\",\"link\":\"usr/lib\"},"
	"{\"type\":\"symlink\",\"target\":\"/lib64\",\"link\":\"usr/lib64\"},"
	"{\"type\":\"proc\",\"target\":\"/proc\"},"
	"{\"type\":\"dev\",\"target\":\"/dev\"},"
	"{\"type\":\"tmpfs\",\"target\":\"/tmp\"}],"
	"\"landlock\":{\"required\":true,\"fs\":["
	"{\"path\":\"/usr\",\"access\":[\"execute\",\"read-file\",\"read-dir\"]},"
	"{\"path\":\"/tmp\",\"access\":[\"read-file\",\"read-dir\",\"write-file\",\"make-reg\","
	"\"remove-file\",\"make-dir\",\"remove-dir\",\"truncate\"]},"
	"{\"path\":\"/dev\",\"access\":[\"read-file\",\"write-file\",\"read-dir\"]},"
	"{\"path\":\"/proc\",\"access\":[\"read-file\",\"read-dir\"]}],"
	"\"net\":{\"bindTcp\":[],\"connectTcp\":[]},"
	"\"scope\":[\"abstract-unix-socket\",\"signal\"]},"
	"\"network\":\"none\",\"dieWithRequester\":true}";

static const char floor_text[] = "{\"maxNetwork\":\"host\"}\n";
static const char *bwrap_path = "/usr/bin/bwrap";
static json_t *plan, *versus; /* versus: --versus, a second plan measured in the same rounds */
/* The plan's fds: 0 is /usr, 1 the plan's seccomp program with --plan-filter. */
static int plan_fds[2] = { -1, -1 };
static size_t n_plan_fds = 1;

static double now_ms(void)
{
	return (double)now_nsec() / 1e6;
}

static int run_argv(char *const argv[])
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		(void)dup2(null, 1);
		(void)dup2(null, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

static int run_plain(void)
{
	char *argv[] = { (char *)"/bin/true", NULL };

	return run_argv(argv);
}

static int run_bwrap(void)
{
	char *argv[] = { (char *)bwrap_path,
			 (char *)"--unshare-all",
			 (char *)"--ro-bind",
			 (char *)"/usr",
			 (char *)"/usr",
			 (char *)"--symlink",
			 (char *)"usr/bin",
			 (char *)"/bin",
			 (char *)"--symlink",
			 (char *)"usr/lib",
			 (char *)"/lib",
			 (char *)"--symlink",
			 (char *)"usr/lib64",
			 (char *)"/lib64",
			 (char *)"--proc",
			 (char *)"/proc",
			 (char *)"--dev",
			 (char *)"/dev",
			 (char *)"--tmpfs",
			 (char *)"/tmp",
			 (char *)"--die-with-parent",
			 (char *)"/bin/true",
			 NULL };

	return run_argv(argv);
}

static int run_launcherd(struct ctl_launcher *l)
{
	struct ctl_launcher_error err;
	struct ctl_launcher_exit ex;
	_cleanup_free_ char *id = NULL;
	int pidfd = -1, r;

	r = ctl_launcher_spawn(l, plan, plan_fds, n_plan_fds, &id, &pidfd, &err);
	if (r < 0) {
		(void)fprintf(stderr, "spawn: %s\n", err.message);
		return r;
	}
	r = ctl_launcher_wait_exit(l, id, &ex);
	safe_close(pidfd);
	if (r < 0)
		return r;
	return ex.exit_code == 0 && !ex.signal ? 0 : -EIO;
}

static long rss_kib(pid_t pid)
{
	char path[64], line[256];
	long kib = -1;
	FILE *f;

	(void)snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	(void)fclose(f);
	return kib;
}

/* All CPUs' busy and total time so far, in clock ticks, from /proc/stat; false if unreadable. */
static bool cpu_ticks(unsigned long long *ret_busy, unsigned long long *ret_total)
{
	unsigned long long v[10] = { 0 }, total = 0;
	FILE *f = fopen("/proc/stat", "re");
	int n;

	if (!f)
		return false;
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
		   &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
	(void)fclose(f);
	if (n != 10)
		return false;
	for (int i = 0; i < 10; i++)
		total += v[i];
	*ret_busy = total - v[3] - v[4]; /* idle and iowait aside */
	*ret_total = total;
	return true;
}

/* Busy fraction of all CPUs over the next 100 ms; -1 if unreadable. */
static double cpu_busy(void)
{
	unsigned long long b0, t0, b1, t1;

	if (!cpu_ticks(&b0, &t0))
		return -1;
	(void)usleep(100000);
	if (!cpu_ticks(&b1, &t1) || t1 == t0)
		return -1;
	return (double)(b1 - b0) / (double)(t1 - t0);
}

/* Wait (at most 3 s) until the CPUs are back to the load they had before the run; returns
 * when the last busy 100 ms window ended (ms, now_ms() clock). */
static double settle(double baseline)
{
	for (int i = 0; i < 30; i++) {
		double b = cpu_busy();

		if (b < 0 || b <= baseline + 0.05)
			return now_ms() - 100;
	}
	return now_ms();
}

/* 2 concurrent clients for seconds; returns total spawns. */
static long throughput_slice(const char *socket_path, bool use_launcherd, double seconds)
{
	int pipes[2][2];
	pid_t kids[2];
	long total = 0;

	for (int k = 0; k < 2; k++) {
		if (pipe(pipes[k]) < 0)
			return -1;
		kids[k] = fork();
		if (kids[k] == 0) {
			struct ctl_launcher *l = NULL;
			double end = now_ms() + seconds * 1000;
			long n = 0;

			if (use_launcherd && (ctl_launcher_connect(socket_path, &l) < 0 ||
					      ctl_launcher_hello(l, NULL, NULL) < 0))
				_exit(1);
			while (now_ms() < end)
				if ((use_launcherd ? run_launcherd(l) : run_bwrap()) == 0)
					n++;
			(void)!write(pipes[k][1], &n, sizeof(n));
			_exit(0);
		}
		safe_close(pipes[k][1]);
	}
	for (int k = 0; k < 2; k++) {
		long n = 0;

		if (read(pipes[k][0], &n, sizeof(n)) == (ssize_t)sizeof(n))
			total += n;
		safe_close(pipes[k][0]);
		(void)waitpid(kids[k], NULL, 0);
	}
	return total;
}

/*
 * One throughput slice: throughput_slice(), counted until the machine is back to baseline (its
 * deferred work done too, at least the clients' seconds): the sandboxes, its length and the CPU
 * time of the whole machine over it, in ms.
 */
struct slice {
	long n;
	double ms, cpu;
};

static struct slice run_slice(const char *socket_path, bool use_launcherd, double seconds,
			      double baseline)
{
	double tick_ms = 1000.0 / (double)sysconf(_SC_CLK_TCK), t0 = now_ms();
	unsigned long long b0 = 0, b1 = 0, t;
	bool ticks = cpu_ticks(&b0, &t);
	struct slice s = { .n = throughput_slice(socket_path, use_launcherd, seconds) };

	s.ms = settle(baseline) - t0;
	s.cpu = ticks && cpu_ticks(&b1, &t) ? (double)(b1 - b0) * tick_ms : 0;
	if (s.ms < seconds * 1000)
		s.ms = seconds * 1000;
	return s;
}

/* CPU ms per sandbox over slices, less what the other load took meanwhile. */
static double cpu_per_sandbox(double cpu, double ms, long n, double baseline)
{
	return n ? (cpu - baseline * ms * (double)sysconf(_SC_NPROCESSORS_ONLN)) / (double)n : 0;
}

/*
 * The seccomp program the controller gives a plan for the default policy's syscalls (as
 * policy-compile.c does it: the policy's effective spec, then libseccomp through the cache), as
 * fd 1 of every spawn and "seccomp":{"program":1} in the plan(s); its instruction count.
 */
static int plan_filter_add(size_t *ret_insns)
{
	_cleanup_policy_ struct policy *p = NULL;
	_cleanup_free_ struct policy_syscall_rule *rules = NULL;
	size_t n = 0;
	struct stat st;
	int r, fd = -1;

	r = policy_default_new(&p);
	if (r < 0)
		return r;
	r = policy_syscall_spec(p, &rules, &n);
	if (r < 0)
		return r;
	r = policy_seccomp_program(rules, n, &fd);
	if (r < 0)
		return r;
	if (fstat(fd, &st) < 0) {
		r = negative_errno();
		safe_close(fd);
		return r;
	}
	plan_fds[1] = fd;
	n_plan_fds = 2;
	*ret_insns = (size_t)st.st_size / 8; /* struct sock_filter: 8 bytes */
	for (json_t *pl = plan; pl; pl = pl == plan ? versus : NULL)
		if (json_object_set_new(pl, "seccomp", json_pack("{s:i}", "program", 1)) < 0)
			return -ENOMEM;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "launcherd", required_argument, NULL, 'l' },
		{ "rounds", required_argument, NULL, 'n' },
		{ "seconds", required_argument, NULL, 's' },
		{ "bwrap", required_argument, NULL, 'b' },
		{ "plan", required_argument, NULL, 'p' },
		{ "versus", required_argument, NULL, 'v' },
		{ "launcherd-only", no_argument, NULL, 'o' },
		{ "plan-filter", no_argument, NULL, 'f' },
		{},
	};
	const char *launcherd = "./cordon-launcherd", *plan_file = NULL, *versus_file = NULL;
	char sock[] = "/tmp/cordon-bench.XXXXXX";
	char sock_path[64], floor_path[64];
	int ret = 1;
	int rounds = 300, c, r;
	bool only = false, plan_filter = false;
	size_t filter_insns = 0;
	double seconds = 5;
	struct ctl_launcher *l = NULL;
	double *t_plain, *t_bwrap, *t_ld, *ratio, *diff, *t_vs, *vs_ratio, *vs_diff;
	pid_t ld;
	long rss_idle, rss_after;
	double baseline;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0)
		switch (c) {
		case 'l':
			launcherd = optarg;
			break;
		case 'n':
			rounds = atoi(optarg);
			break;
		case 's':
			seconds = atof(optarg);
			break;
		case 'b':
			bwrap_path = optarg;
			break;
		case 'p': /* another plan, fd 0 = /usr, for measuring variants */
			plan_file = optarg;
			break;
		case 'v': /* a variant plan, timed in the same alternation as the plan */
			versus_file = optarg;
			break;
		case 'o': /* launcherd's throughput alone, e.g. under perf record */
			only = true;
			break;
		case 'f': /* the plan(s) carry the default profile's seccomp program */
			plan_filter = true;
			break;
		default:
			return 2;
		}
	if (geteuid() != 0) {
		(void)fprintf(stderr,
			      "bench/spawn: run as root (it starts a privileged launcherd)\n");
		return 2;
	}
	if (access(bwrap_path, X_OK) < 0) {
		(void)fprintf(stderr, "bench/spawn: no bwrap at %s\n", bwrap_path);
		return 2;
	}
	plan = plan_file ? json_load_file(plan_file, 0, NULL) : json_loads(plan_text, 0, NULL);
	versus = versus_file ? json_load_file(versus_file, 0, NULL) : NULL;
	plan_fds[0] = open("/usr", O_PATH | O_CLOEXEC);
	if (!plan || (versus_file && !versus) || plan_fds[0] < 0)
		return 1;
	if (plan_filter) {
		r = plan_filter_add(&filter_insns);
		if (r < 0) {
			(void)fprintf(stderr, "bench/spawn: --plan-filter: %s\n", strerror(-r));
			return 1;
		}
	}
	if (!mkdtemp(sock))
		return 1;
	(void)snprintf(sock_path, sizeof(sock_path), "%s/ld.sock", sock);
	(void)snprintf(floor_path, sizeof(floor_path), "%s/floor.json", sock);
	/* A floor that lets --plan variants measure network "host" too. */
	if (write_file_atomic(floor_path, floor_text, strlen(floor_text), 0644) < 0)
		return 1;

	ld = fork();
	if (ld == 0) {
		int null = open("/dev/null", O_RDWR);

		/* Not left behind when we are killed (Ctrl-C in bench/denials-cost.sh). */
		(void)prctl(PR_SET_PDEATHSIG, SIGTERM);
		(void)dup2(null, 2);
		execl(launcherd, launcherd, "--socket", sock_path, "--floor", floor_path,
		      (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 200 && ctl_launcher_connect(sock_path, &l) < 0; i++)
		(void)usleep(10000);
	if (!l || ctl_launcher_hello(l, NULL, NULL) < 0) {
		(void)fprintf(stderr, "bench/spawn: launcherd did not start\n");
		goto out;
	}
	rss_idle = rss_kib(ld);
	if (only) {
		struct slice sl;

		for (int i = 0; i < 20; i++)
			(void)run_launcherd(l);
		baseline = cpu_busy();
		sl = run_slice(sock_path, true, seconds, baseline);
		if (sl.n <= 0)
			goto out;
		if (plan_filter)
			printf("the plan carries a seccomp filter (the default profile's, %zu "
			       "instructions)\n",
			       filter_insns);
		printf("launcherd alone, 2 concurrent clients: %.1f sandboxes/s, CPU per sandbox "
		       "%.3f ms (until its deferred work is done: %.2f s; all CPUs, less the other "
		       "load)\n",
		       (double)sl.n * 1000 / sl.ms, cpu_per_sandbox(sl.cpu, sl.ms, sl.n, baseline),
		       sl.ms / 1000);
		ret = 0;
		goto out;
	}
	/* The load other processes put on the machine, measured before we add ours. */
	baseline = cpu_busy();

	t_plain = calloc((size_t)rounds, sizeof(double));
	t_bwrap = calloc((size_t)rounds, sizeof(double));
	t_ld = calloc((size_t)rounds, sizeof(double));
	ratio = calloc((size_t)rounds, sizeof(double));
	diff = calloc((size_t)rounds, sizeof(double));
	t_vs = calloc((size_t)rounds, sizeof(double));
	vs_ratio = calloc((size_t)rounds, sizeof(double));
	vs_diff = calloc((size_t)rounds, sizeof(double));
	if (!t_plain || !t_bwrap || !t_ld || !ratio || !diff || !t_vs || !vs_ratio || !vs_diff)
		goto out;
	/* Warm-up: caches, the daemon's first allocations. */
	for (int i = 0; i < 20; i++) {
		(void)run_plain();
		(void)run_bwrap();
		(void)run_launcherd(l);
	}
	for (int i = 0; i < rounds; i++) {
		double t0 = now_ms();

		if (run_plain() < 0)
			goto out;
		t_plain[i] = now_ms() - t0;
		t0 = now_ms();
		if (run_bwrap() < 0)
			goto out;
		t_bwrap[i] = now_ms() - t0;
		t0 = now_ms();
		if (run_launcherd(l) < 0)
			goto out;
		t_ld[i] = now_ms() - t0;
		ratio[i] = t_ld[i] / t_bwrap[i];
		diff[i] = t_ld[i] - t_plain[i];
		if (versus) {
			json_t *p = plan;

			plan = versus;
			t0 = now_ms();
			r = run_launcherd(l);
			t_vs[i] = now_ms() - t0;
			plan = p;
			if (r < 0)
				goto out;
			vs_ratio[i] = t_vs[i] / t_ld[i];
			vs_diff[i] = t_vs[i] - t_ld[i];
		}
	}

	printf("latency, request -> reaped, /bin/true, %d paired rounds (medians)", rounds);
	if (plan_filter)
		printf("; the plan carries a seccomp filter (the default profile's, %zu instructions)",
		       filter_insns);
	printf("\n");
	printf("  fork+exec            %7.3f ms\n", bench_median(t_plain, (size_t)rounds));
	printf("  bwrap --unshare-all  %7.3f ms\n", bench_median(t_bwrap, (size_t)rounds));
	printf("  launcherd (full)     %7.3f ms\n", bench_median(t_ld, (size_t)rounds));
	printf("  launcherd / bwrap    %7.3f     (target <= 0.6)\n",
	       bench_median(ratio, (size_t)rounds));
	printf("  launcherd - fork+exec %6.3f ms  (target <= 1.0 ms)\n",
	       bench_median(diff, (size_t)rounds));
	if (versus) {
		printf("  launcherd, --versus  %7.3f ms\n", bench_median(t_vs, (size_t)rounds));
		printf("  versus / plan        %7.3f     (paired)\n",
		       bench_median(vs_ratio, (size_t)rounds));
		printf("  versus - plan        %7.3f ms  (paired)\n",
		       bench_median(vs_diff, (size_t)rounds));
	}
	fflush(stdout);

	{
		struct slice lds = { 0 }, bw = { 0 }; /* sums over each side's slices */
		double ld_tp, bw_tp;

		(void)settle(baseline);
		for (int slice = 0; slice < 4; slice++) {
			bool ld_turn = slice == 0 || slice == 3;
			struct slice sl = run_slice(sock_path, ld_turn, seconds / 2, baseline);
			struct slice *sum = ld_turn ? &lds : &bw;

			sum->n += sl.n;
			sum->ms += sl.ms;
			sum->cpu += sl.cpu;
		}
		ld_tp = (double)lds.n * 1000 / lds.ms;
		bw_tp = (double)bw.n * 1000 / bw.ms;
		printf("throughput, 2 concurrent clients, %.1f s each (slices L B B L, each until its "
		       "deferred work is done: %.2f s, %.2f s; other load %.0f%% CPU)\n",
		       seconds, lds.ms / 1000, bw.ms / 1000, baseline * 100);
		printf("  launcherd            %7.1f sandboxes/s\n", ld_tp);
		printf("  bwrap                %7.1f sandboxes/s\n", bw_tp);
		printf("  launcherd / bwrap    %7.2f     (target >= 3)\n", ld_tp / bw_tp);
		printf("  CPU per sandbox (all CPUs, less the other load): launcherd %.3f ms, bwrap "
		       "%.3f ms\n",
		       cpu_per_sandbox(lds.cpu, lds.ms, lds.n, baseline),
		       cpu_per_sandbox(bw.cpu, bw.ms, bw.n, baseline));
	}
	if (versus) {
		struct slice a = { 0 }, b = { 0 };
		json_t *p = plan;

		(void)settle(baseline);
		for (int slice = 0; slice < 4; slice++) {
			bool plan_turn = slice == 0 || slice == 3;
			struct slice sl, *sum = plan_turn ? &a : &b;

			plan = plan_turn ? p : versus; /* the clients fork with it */
			sl = run_slice(sock_path, true, seconds / 2, baseline);
			sum->n += sl.n;
			sum->ms += sl.ms;
			sum->cpu += sl.cpu;
		}
		plan = p;
		printf("throughput, plan vs --versus (slices P V V P): %.1f vs %.1f sandboxes/s "
		       "(versus / plan %.2f); CPU per sandbox %.3f vs %.3f ms\n",
		       (double)a.n * 1000 / a.ms, (double)b.n * 1000 / b.ms,
		       ((double)b.n / b.ms) / ((double)a.n / a.ms),
		       cpu_per_sandbox(a.cpu, a.ms, a.n, baseline),
		       cpu_per_sandbox(b.cpu, b.ms, b.n, baseline));
	}
	rss_after = rss_kib(ld);
	printf("launcherd RSS: idle at start %ld KiB, idle after the runs %ld KiB (target <= 4096)\n",
	       rss_idle, rss_after);

	ret = 0;
out:
	ctl_launcher_free(l);
	(void)kill(ld, SIGTERM);
	(void)waitpid(ld, NULL, 0);
	(void)unlink(floor_path);
	(void)rmdir(sock);
	return ret;
}

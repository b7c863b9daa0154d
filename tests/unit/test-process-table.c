/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The process table (controller-process.c) against the fake backend of test-activation.c: a
 * process started with controller_process_start_internal() runs through the active instance,
 * its exit report reaches the callback with the exit code, a signal ends it with the signal's
 * report, a process whose instance is lost ends with reason "launcher-lost", a failed or
 * refused spawn, an exit report that overtakes the spawn answer, and many processes leave an
 * idle table and no fd behind.
 */
#define CORE_FIXTURE_ONLY 1
#include "tests/unit/test-activation.c"

/* Start argv and wait for its end; bails when it does not end. */
static void run(const char *argv, struct proc *p)
{
	int r = proc_start(argv, p);

	if (r < 0)
		bail("cannot start %s: %s", argv, strerror(-r));
	if (!core_run_until(cond_proc_done, p, 10000))
		bail("%s did not end", argv);
}

static void test_exit_code(void)
{
	struct proc p;

	run("[\"fake-exit\", \"7\"]", &p);
	is_int(7, proc_int(&p, "exitCode"), "exit: the exit code reaches the callback");
	is_str("exited", proc_str(&p, "reason"), "exit: reason exited");
	is_int(0, proc_int(&p, "signal"), "exit: no signal");
	is_str(p.id, proc_str(&p, "processId"), "exit: the callback names the process");
	is_str(ctl.active->name, proc_str(&p, "launcher"), "exit: run by the active instance");
	ok(fake_call_index("spawn", ctl.active->name) >= 0, "exit: through the fake's spawn");
	ok(controller_processes_idle(&ctl), "exit: the table is idle afterwards");
	proc_done_free(&p);

	run("[\"fake-exit\", \"0\"]", &p);
	is_int(0, proc_int(&p, "exitCode"), "exit 0: exit code 0");
	proc_done_free(&p);
}

static void test_real_child(void)
{
	struct proc p;

	run("[\"real\", \"hello from the sandbox\", \"3\"]", &p);
	is_int(3, proc_int(&p, "exitCode"), "real child: its exit code");
	is_str("hello from the sandbox", proc_str(&p, "stdout"),
	       "real child: its stdout is captured");
	is_str("", proc_str(&p, "stderr"), "real child: nothing on stderr");
	proc_done_free(&p);
}

struct answered_wait {
	size_t mark;
	unsigned n;
};

static bool cond_answered(void *ud)
{
	struct answered_wait *w = ud;

	return fake_call_count("answered", w->mark) >= w->n;
}

/* Wait until the fake answered n spawns since mark (from its timers). */
static bool answered(size_t mark, unsigned n)
{
	struct answered_wait w = { mark, n };

	return core_run_until(cond_answered, &w, 5000);
}

static void test_signal(void)
{
	struct proc p;
	int r;
	size_t mark = json_array_size(fake_calls);

	r = proc_start("[\"fake-hang\"]", &p);
	is_int(0, r, "signal: started");
	ok(answered(mark, 1), "signal: the spawn is answered");
	ok(!p.done, "signal: it runs until killed");
	controller_processes_kill_all(&ctl);
	ok(core_run_until(cond_proc_done, &p, 5000), "signal: it ends once killed");
	is_int(SIGKILL, proc_int(&p, "signal"), "signal: the signal's report (9)");
	is_str("signaled", proc_str(&p, "reason"), "signal: reason signaled");
	proc_done_free(&p);

	/* A killed real child: the report comes from its pidfd. */
	mark = json_array_size(fake_calls);
	r = proc_start("[\"real\", \"\", \"hang\"]", &p);
	is_int(0, r, "signal, real child: started");
	ok(answered(mark, 1), "signal, real child: the spawn is answered");
	ok(!p.done, "signal, real child: it runs until killed");
	controller_processes_kill_all(&ctl);
	ok(core_run_until(cond_proc_done, &p, 5000), "signal, real child: it ends once killed");
	is_int(SIGKILL, proc_int(&p, "signal"), "signal, real child: signal 9");
	proc_done_free(&p);
}

static void test_lost(void)
{
	struct backend_instance *bi = ctl.active;
	struct proc p, q;
	size_t mark = json_array_size(fake_calls);
	char name[192];
	int r;

	(void)snprintf(name, sizeof(name), "%s", bi->name);
	r = proc_start("[\"fake-hang\"]", &p);
	if (r >= 0)
		r = proc_start("[\"real\", \"\", \"hang\"]", &q);
	is_int(0, r, "lost: two processes started");
	ok(answered(mark, 2), "lost: both spawns are answered");
	fake_lose(bi);
	ok(core_run_until(cond_proc_done, &p, 5000) && core_run_until(cond_proc_done, &q, 5000),
	   "lost: both end");
	is_str("launcher-lost", proc_str(&p, "reason"), "lost: reason launcher-lost");
	is_str("launcher-lost", proc_str(&q, "reason"), "lost, real child: reason launcher-lost");
	is_int(SIGKILL, proc_int(&p, "signal"), "lost: reported as killed");
	ok(core_run_until(cond_active, NULL, 5000) && ctl.active != bi,
	   "lost: another instance is active");
	ok(run_until_call("dispose", name), "lost: the lost instance is disposed of");
	proc_done_free(&p);
	proc_done_free(&q);

	/* A process started while it starts (not yet answered) ends too. */
	bi = ctl.active;
	(void)snprintf(name, sizeof(name), "%s", bi->name);
	r = proc_start("[\"fake-exit\", \"0\"]", &p);
	is_int(0, r, "lost while starting: started");
	ok(!p.done, "lost while starting: not answered yet");
	fake_lose(bi);
	ok(core_run_until(cond_proc_done, &p, 5000), "lost while starting: it ends");
	/* It never started: the core answers its start as failed. */
	is_str("spawn-failed", proc_str(&p, "reason"), "lost while starting: reason spawn-failed");
	ok(core_run_until(cond_active, NULL, 5000), "lost while starting: an instance is active");
	ok(run_until_call("dispose", name), "lost while starting: the lost one is disposed of");
	proc_done_free(&p);
}

static void test_failed_spawns(void)
{
	struct proc p;
	int r;

	run("[\"fake-fail\"]", &p);
	is_str("spawn-failed", proc_str(&p, "reason"), "launcher error: reason spawn-failed");
	ok(json_is_object(json_object_get(p.result, "error")), "launcher error: the error object");
	proc_done_free(&p);

	r = proc_start("[\"fake-refuse\"]", &p);
	ok(r < 0 && !p.done && !p.id, "refused spawn: fails at once, no callback (%d)", r);
	proc_done_free(&p);

	run("[\"fake-early\", \"5\"]", &p);
	is_int(5, proc_int(&p, "exitCode"), "exit report before the spawn answer: claimed");
	proc_done_free(&p);
	ok(controller_processes_idle(&ctl), "failed spawns: the table is idle");
}

#define MANY 200

static void test_many(void)
{
	struct proc *ps = calloc(MANY, sizeof(*ps));
	int others = count_fds(NULL) - count_fds("pidfd"), pidfds = count_fds("pidfd");
	int started = 0, done = 0, right = 0, real = 0;

	if (!ps)
		bail("out of memory");
	for (int i = 0; i < MANY; i++) {
		char argv[64];

		if (i % 10 == 9 && ++real)
			(void)snprintf(argv, sizeof(argv), "[\"real\", \"%d\", \"%d\"]", i,
				       i % 256);
		else
			(void)snprintf(argv, sizeof(argv), "[\"fake-exit\", \"%d\"]", i % 256);
		started += proc_start(argv, &ps[i]) == 0;
	}
	is_int(MANY, started, "many: %d processes started", MANY);
	ok(!controller_processes_idle(&ctl), "many: the table is busy");
	for (int i = 0; i < MANY; i++) {
		if (!core_run_until(cond_proc_done, &ps[i], 10000))
			break;
		done++;
		right += proc_int(&ps[i], "exitCode") == i % 256;
	}
	is_int(MANY, done, "many: all ended");
	is_int(MANY, right, "many: each with its own exit code");
	ok(controller_processes_idle(&ctl), "many: the table is idle afterwards");
	for (int k = 0; k < 10; k++)
		(void)event_loop_run_once(ctl.host.loop, 5);
	is_int(others, count_fds(NULL) - count_fds("pidfd"), "many: no fd left behind");
	/* A finished process keeps its pidfd while it stays in the table (until pruned, or
	 * controller_processes_free(): the teardown checks none is left). */
	ok(count_fds("pidfd") <= pidfds + real,
	   "many: at most the pidfds of the finished real children are held (%d more)",
	   count_fds("pidfd") - pidfds);
	for (int i = 0; i < MANY; i++)
		proc_done_free(&ps[i]);
	free(ps);
}

int main(void)
{
	plan_lazy();
	core_setup();
	test_exit_code();
	test_real_child();
	test_signal();
	test_lost();
	test_failed_spawns();
	test_many();
	core_teardown();
	return tap_exit_status();
}

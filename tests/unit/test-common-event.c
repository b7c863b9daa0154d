/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * common/event.c: io sources, one-shot and periodic timers, re-arming and disarming, freeing a
 * source from inside its own callback and from another callback of the same round, exit codes,
 * and no fd left behind.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "common/event.h"
#include "common/system.h"
#include "tests/tap.h"

struct io_state {
	int calls;
	int fd;
	uint32_t revents;
	void *userdata;
	bool free_self;
	bool drain;
};

static int on_io(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct io_state *st = userdata;
	char buf[64];

	st->calls++;
	st->fd = fd;
	st->revents = revents;
	st->userdata = userdata;
	if (st->drain)
		(void)loop_read(fd, buf, sizeof(buf));
	if (st->free_self)
		event_source_free(s);
	return 0;
}

/* Two sources that each free the other: only the first of a round may run. */
struct pair {
	struct event_source *a, *b;
	int calls_a, calls_b;
};

static int on_pair_a(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct pair *p = userdata;

	p->calls_a++;
	event_source_free(p->b);
	p->b = NULL;
	return 0;
}

static int on_pair_b(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct pair *p = userdata;

	p->calls_b++;
	event_source_free(p->a);
	p->a = NULL;
	return 0;
}

struct timer_state {
	struct event_loop *loop;
	int calls;
	int exit_after;
	int exit_code;
	bool free_self;
};

static int on_timer(struct event_source *s, void *userdata)
{
	struct timer_state *t = userdata;

	t->calls++;
	if (t->free_self)
		event_source_free(s);
	if (t->exit_after && t->calls == t->exit_after)
		event_loop_exit(t->loop, t->exit_code);
	return -EIO; /* a failing callback is only logged */
}

static void must_write(int fd, const char *s)
{
	if (loop_write(fd, s, strlen(s)) < 0)
		bail("write: %m");
}

/* Run rounds until pred holds or ms of wall clock pass. */
static void run_for(struct event_loop *l, int ms, const int *counter, int want)
{
	unsigned long long end = now_nsec() + (unsigned long long)ms * 1000000ULL;

	while (*counter < want && now_nsec() < end)
		(void)event_loop_run_once(l, 10);
}

static void test_io(struct event_loop *l)
{
	struct io_state st = { 0 };
	struct event_source *s = NULL;
	int p[2];

	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		bail("pipe2: %m");
	is_int(0, event_add_io(l, p[0], EPOLLIN, on_io, &st, &s), "event_add_io succeeds");
	is_int(0, event_loop_run_once(l, 0), "nothing ready: the round dispatches nothing");
	is_int(0, st.calls, "and the callback did not run");
	must_write(p[1], "x");
	st.drain = true;
	is_int(1, event_loop_run_once(l, 1000), "a readable pipe dispatches one event");
	is_int(1, st.calls, "the io callback ran once");
	ok(st.fd == p[0] && (st.revents & EPOLLIN) && st.userdata == &st,
	   "with its fd, EPOLLIN and its userdata");
	is_int(-EEXIST, event_add_io(l, p[0], EPOLLIN, on_io, &st, NULL),
	       "the same fd cannot be added twice");

	/* Switch the events mask: nothing fires with no events, EPOLLOUT fires at once. */
	event_source_free(s);
	st = (struct io_state){ 0 };
	is_int(0, event_add_io(l, p[1], 0, on_io, &st, &s), "watch the write end with no events");
	(void)event_loop_run_once(l, 0);
	is_int(0, st.calls, "an empty events mask never fires");
	is_int(0, event_source_set_events(s, EPOLLOUT), "event_source_set_events to EPOLLOUT");
	(void)event_loop_run_once(l, 1000);
	ok(st.calls == 1 && (st.revents & EPOLLOUT), "the writable pipe now fires with EPOLLOUT");
	event_source_free(s);
	event_source_free(NULL);

	/* Freeing itself from its own callback: it must never run again, and not crash. */
	st = (struct io_state){ .free_self = true };
	(void)event_add_io(l, p[0], EPOLLIN, on_io, &st, NULL);
	must_write(p[1], "xy");
	(void)event_loop_run_once(l, 1000);
	(void)event_loop_run_once(l, 50); /* still readable: one byte left */
	is_int(1, st.calls, "a source that freed itself is not dispatched again");
	is_int(0, event_add_io(l, p[0], EPOLLIN, on_io, &st, &s),
	       "its fd was removed from epoll: it can be added again");
	event_source_free(s);

	safe_close(p[0]);
	safe_close(p[1]);
}

static void test_free_other(struct event_loop *l)
{
	struct pair pr = { 0 };
	int p[2], q[2];

	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0 || pipe2(q, O_CLOEXEC | O_NONBLOCK) < 0)
		bail("pipe2: %m");
	if (event_add_io(l, p[0], EPOLLIN, on_pair_a, &pr, &pr.a) < 0 ||
	    event_add_io(l, q[0], EPOLLIN, on_pair_b, &pr, &pr.b) < 0)
		bail("event_add_io failed");
	must_write(p[1], "x");
	must_write(q[1], "x");
	is_int(2, event_loop_run_once(l, 1000), "both sources are ready in the same round");
	is_int(1, pr.calls_a + pr.calls_b,
	       "the source freed by the first callback does not run in that round");
	(void)event_loop_run_once(l, 1000);
	ok((pr.calls_a == 2 && pr.calls_b == 0) || (pr.calls_a == 0 && pr.calls_b == 2),
	   "next round only the survivor runs again (a=%d b=%d)", pr.calls_a, pr.calls_b);
	event_source_free(pr.a);
	event_source_free(pr.b);
	safe_close(p[0]);
	safe_close(p[1]);
	safe_close(q[0]);
	safe_close(q[1]);
}

static void test_timers(struct event_loop *l)
{
	struct timer_state one = { .loop = l }, per = { .loop = l }, dis = { .loop = l };
	struct timer_state selff = { .loop = l, .free_self = true };
	struct timer_state dog = { .loop = l, .exit_after = 1, .exit_code = -ETIMEDOUT };
	struct event_source *s1 = NULL, *sp = NULL, *sd = NULL, *sf = NULL, *sw = NULL;
	unsigned long long t0;

	t0 = now_nsec();
	is_int(0, event_add_timer(l, 20000, false, on_timer, &one, &s1),
	       "add a 20 ms one-shot timer");
	run_for(l, 2000, &one.calls, 1);
	is_int(1, one.calls, "the one-shot timer fired");
	ok(now_nsec() - t0 >= 20000000ULL, "not before 20 ms (%llu us)", (now_nsec() - t0) / 1000);
	run_for(l, 80, &one.calls, 2);
	is_int(1, one.calls, "and did not fire again");

	is_int(0, event_timer_set(s1, 10000, false), "re-arm the one-shot timer");
	run_for(l, 2000, &one.calls, 2);
	is_int(2, one.calls, "the re-armed timer fired again");
	event_source_free(s1);

	t0 = now_nsec();
	per.exit_after = 3;
	per.exit_code = 42;
	is_int(0, event_add_timer(l, 5000, true, on_timer, &per, &sp), "add a 5 ms periodic timer");
	if (event_add_timer(l, 5000000, false, on_timer, &dog, &sw) <
	    0) /* a watchdog, not a hang */
		bail("cannot add the watchdog timer");
	is_int(42, event_loop_run(l), "event_loop_run returns the code given to event_loop_exit");
	event_source_free(sw);
	is_int(3, per.calls, "the periodic timer fired three times before the exit");
	ok(now_nsec() - t0 >= 15000000ULL, "which took at least 15 ms");
	event_source_free(sp);

	is_int(0, event_add_timer(l, 30000, true, on_timer, &dis, &sd),
	       "add a 30 ms periodic timer");
	is_int(0, event_timer_set(sd, 0, false), "disarm it");
	run_for(l, 100, &dis.calls, 1);
	is_int(0, dis.calls, "a disarmed timer does not fire");
	event_source_free(sd);

	is_int(0, event_add_timer(l, 1000, true, on_timer, &selff, &sf),
	       "add a periodic timer that frees itself");
	run_for(l, 2000, &selff.calls, 1);
	run_for(l, 50, &selff.calls, 2);
	is_int(1, selff.calls, "a periodic timer freed in its callback stops");
}

int main(void)
{
	struct event_loop *l = NULL;
	int fds_before;

	plan(34);
	fds_before = count_open_fds();
	is_int(0, event_loop_new(&l), "event_loop_new");
	ok(count_open_fds() == fds_before + 1, "the loop holds one fd (epoll)");

	test_io(l);
	test_free_other(l);
	test_timers(l);

	event_loop_free(l);
	event_loop_free(NULL);
	is_int(fds_before, count_open_fds(),
	       "no fd left behind (timerfds closed with their sources)");
	return tap_exit_status();
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Live sandboxes: start (parent side of the spawn), the child's status pipe, the pidfd, the
 * timeout timer, kill, exit reports and cleanup. Everything is driven by the event loop, so the
 * daemon never waits for a child that is still setting up.
 *
 * Life of a sandbox:
 *   SETTING_UP  clone3 done; the status pipe resolves it: a record (step, errno) means the
 *               set-up failed (reply "error"), EOF means exec succeeded (reply "spawned").
 *   RUNNING     until the pidfd says the init exited; then "exit" is sent to the requester.
 *   FAILED      set-up failed; reaped silently.
 * In every case the cgroup is removed and the entry freed once the init is reaped. The init is
 * pid 1 of its pid namespace: the kernel has killed and reaped every other process of the
 * sandbox before its exit becomes visible to us.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <linux/sched.h>
#include <linux/seccomp.h>

#include "common/json-cleanup.h"
#include "common/log.h"
#include "common/system.h"
#include "common/util.h"
#include "ipc/ipc-fdpass.h"
#include "launcherd/launcherd-apply.h"
#include "launcherd/launcherd-audit.h"
#include "launcherd/launcherd-landlock.h"
#include "launcherd/launcherd-light.h"
#include "launcherd/launcherd-mount.h"
#include "launcherd/launcherd-mountinfo.h"
#include "launcherd/launcherd-plan.h"
#include "launcherd/launcherd-trace.h"
#include "launcherd/launcherd.h"

#define CGROUP_RMDIR_RETRY_USEC (20 * 1000)
#define CGROUP_RMDIR_TRIES 250

static const char *strna(const char *s)
{
	return s ? s : "n/a";
}

enum sandbox_state {
	SB_SETTING_UP,
	SB_RUNNING,
	SB_FAILED,
	SB_EXITED, /* "exit" sent on the init's report; the init itself is not reaped yet */
};

struct sandbox {
	struct launcherd *d;
	struct sandbox *next;
	char id[24];
	uid_t uid;
	struct conn *conn; /* the requester; NULL once it disconnected */
	int64_t seq;	   /* of the spawn request, for the reply */
	enum sandbox_state state;
	enum kill_reason kill_reason;
	bool die_with_requester;
	pid_t pid;
	int pidfd;
	int status_fd;
	int report_fd;	/* the init's report (struct apply_report) */
	int proxy_sock; /* network "proxy": the child sends the listener here */
	int mntns_fd;	/* its mount namespace, when from the pool: released after "exit" */
	int netns_fd;	/* its own network namespace ("none", "loopback"): recycled when freed */
	struct event_source *pidfd_src, *status_src, *timer_src, *report_src;
	struct sandbox_cgroup cgroup;
	uint64_t pids_max, memory_max; /* counted against the per-user ceilings */
	unsigned long long start_usec;
	json_t *unenforced;	    /* for "spawned" */
	int cgroup_error;	    /* creating its cgroup failed: the child was killed */
	struct apply_report report; /* valid when have_report */
	bool have_report;
	/* Its set-up child reports its audit session as the report pipe's first record
	 * (APPLY_REPORT_SESSION): until a first record is read. */
	bool session_first;
	bool trail_open;       /* its start is in the admin's trail, its end not yet */
	char floor_rules[128]; /* the admin floor's rules it was held to, for its end record */
};

/* A cgroup whose directory could not be removed yet (a dying task still pinned it). */
struct cgroup_reaper {
	struct sandbox_cgroup cg;
	struct event_source *timer;
	unsigned tries;
};

static int reaper_retry(struct event_source *s, void *userdata)
{
	struct cgroup_reaper *cr = userdata;

	if (sandbox_cgroup_remove(&cr->cg) == -EBUSY && ++cr->tries < CGROUP_RMDIR_TRIES)
		return 0; /* periodic timer: try again */
	if (cr->tries >= CGROUP_RMDIR_TRIES)
		log_warning("cannot remove cgroup \"%s\": still busy", strna(cr->cg.paths[0]));
	event_source_free(s);
	sandbox_cgroup_done(&cr->cg);
	free(cr);
	return 0;
}

static void cgroup_cleanup(struct launcherd *d, struct sandbox_cgroup *cg)
{
	struct cgroup_reaper *cr;

	if (sandbox_cgroup_remove(cg) != -EBUSY) {
		sandbox_cgroup_done(cg);
		return;
	}
	cr = calloc(1, sizeof(*cr));
	if (!cr || event_add_timer(d->loop, CGROUP_RMDIR_RETRY_USEC, true, reaper_retry, cr,
				   &cr->timer) < 0) {
		log_warning("cannot schedule removal of cgroup \"%s\"", strna(cg->paths[0]));
		free(cr);
		sandbox_cgroup_done(cg);
		return;
	}
	cr->cg = *cg;
	sandbox_cgroup_init(cg);
}

/*
 * The admin's trail: in privileged mode, one record per sandbox start and end in the system log,
 * whoever asked for it, so that an admin sees every user's sandboxes in one place. Key=value
 * text, sent as syslog(3) sends it (RFC 3164 over the /dev/log datagram socket, which journald
 * serves too, with SYSLOG_IDENTIFIER=cordon-launcherd), to CORDON_LAUNCHERD_TRAIL_SOCKET when
 * the environment names another socket. Rate-limited per uid by a token bucket (TRAIL_BURST
 * records, then TRAIL_PER_SEC a second); what a uid could not log is counted and said in one
 * record before its next one. Never blocks: a full or absent log loses the record.
 */
#define TRAIL_BURST 20
#define TRAIL_PER_SEC 2
#define TRAIL_UIDS 64
#define TRAIL_ARGV0_MAX 64
#define TRAIL_PRI (3 * 8 + 6) /* LOG_DAEMON | LOG_INFO */

struct trail_bucket {
	uid_t uid;
	bool used;
	unsigned tokens;
	unsigned long long refill_usec; /* when the last token was added */
	unsigned long long suppressed;
};

static struct trail_bucket trail_buckets[TRAIL_UIDS];

static void trail_send(const char *msg)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;
	const char *path = getenv("CORDON_LAUNCHERD_TRAIL_SOCKET");
	char buf[1024], when[32];
	struct tm tm;
	time_t now = time(NULL);
	int n;

	if (!path || !*path)
		path = "/dev/log";
	if (strlen(path) >= sizeof(sa.sun_path))
		return;
	strcpy(sa.sun_path, path);
	/* A socket per record (two a sandbox): nothing held open between them. */
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || !localtime_r(&now, &tm) ||
	    strftime(when, sizeof(when), "%b %e %H:%M:%S", &tm) == 0)
		return;
	n = snprintf(buf, sizeof(buf), "<%d>%s cordon-launcherd[%d]: %s", TRAIL_PRI, when,
		     (int)getpid(), msg);
	if (n > 0)
		(void)sendto(fd, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1,
			     MSG_NOSIGNAL, (struct sockaddr *)&sa, sizeof(sa));
}

/* The uid's bucket: its own, a free one, or the one idle longest (whose count is said now). */
static struct trail_bucket *trail_bucket(uid_t uid, unsigned long long now)
{
	struct trail_bucket *b = NULL, *oldest = NULL;

	for (size_t i = 0; i < TRAIL_UIDS; i++) {
		struct trail_bucket *t = &trail_buckets[i];

		if (t->used && t->uid == uid)
			return t;
		if (!t->used && !b)
			b = t;
		else if (t->used && (!oldest || t->refill_usec < oldest->refill_usec))
			oldest = t;
	}
	if (!b)
		b = oldest;
	if (b->used && b->suppressed) {
		char msg[128];

		(void)snprintf(msg, sizeof(msg), "event=trail-suppressed uid=%u suppressed=%llu",
			       (unsigned)b->uid, b->suppressed);
		trail_send(msg);
	}
	*b = (struct trail_bucket){
		.uid = uid, .used = true, .tokens = TRAIL_BURST, .refill_usec = now
	};
	return b;
}

void launcherd_trail(uid_t uid, const char *msg)
{
	unsigned long long now = now_usec();
	struct trail_bucket *b = trail_bucket(uid, now);
	unsigned long long add = (now - b->refill_usec) * TRAIL_PER_SEC / 1000000ULL;

	if (add) {
		b->tokens = b->tokens + add >= TRAIL_BURST ? TRAIL_BURST
							   : (unsigned)(b->tokens + add);
		b->refill_usec = b->tokens == TRAIL_BURST
					 ? now
					 : b->refill_usec + add * 1000000ULL / TRAIL_PER_SEC;
	}
	if (b->tokens == 0) {
		b->suppressed++;
		return;
	}
	b->tokens--;
	if (b->suppressed) {
		char sup[128];

		(void)snprintf(sup, sizeof(sup), "event=trail-suppressed uid=%u suppressed=%llu",
			       (unsigned)uid, b->suppressed);
		trail_send(sup);
		b->suppressed = 0;
	}
	trail_send(msg);
}

/* argv[0], at most TRAIL_ARGV0_MAX bytes of it, every byte outside printable ASCII and
 * space, '"', '\\', '=' as \xHH: one word a parser can split on. */
static void trail_escape(const char *in, char *out, size_t size)
{
	size_t o = 0;

	for (size_t i = 0; in && in[i] && i < TRAIL_ARGV0_MAX && o + 5 < size; i++) {
		unsigned char ch = (unsigned char)in[i];

		if (ch <= ' ' || ch >= 0x7f || ch == '"' || ch == '\\' || ch == '=')
			o += (size_t)snprintf(out + o, size - o, "\\x%02x", ch);
		else
			out[o++] = (char)ch;
	}
	out[o] = '\0';
	if (!o)
		(void)snprintf(out, size, "-");
}

static void trail_start(struct sandbox *s, const struct plan *plan, bool filter, bool cgroup)
{
	char argv0[TRAIL_ARGV0_MAX * 4 + 8], msg[TRAIL_MSG_MAX];

	if (s->d->mode != LAUNCHERD_PRIVILEGED)
		return;
	trail_escape(plan->argv ? plan->argv[0] : NULL, argv0, sizeof(argv0));
	(void)snprintf(msg, sizeof(msg),
		       "event=sandbox-start uid=%u sandbox=%s pid=%d argv0=%s network=%s "
		       "layers=namespaces,floor%s%s%s",
		       (unsigned)s->uid, s->id, (int)s->pid, argv0,
		       plan_network_to_string(plan->network), filter ? ",seccomp" : "",
		       plan->has_landlock ? ",landlock" : "", cgroup ? ",cgroup" : "");
	launcherd_trail(s->uid, msg);
	floor_rules(&s->d->floor, s->floor_rules, sizeof(s->floor_rules));
	s->trail_open = true;
}

static void trail_end(struct sandbox *s, int code, int sig, const char *reason)
{
	char msg[TRAIL_MSG_MAX];
	int n;

	if (!s->trail_open)
		return;
	s->trail_open = false;
	n = snprintf(msg, sizeof(msg),
		     "event=sandbox-end uid=%u sandbox=%s pid=%d exit=%d signal=%d reason=%s "
		     "durationMs=%llu floor=%s",
		     (unsigned)s->uid, s->id, (int)s->pid, code, sig, reason,
		     (now_usec() - s->start_usec) / 1000ULL, s->floor_rules);
	/* With the denial reader, the record waits for the sandbox's last denials (they may
	 * trail its end), and says how many there were. */
	if (audit_sandbox_trail(s->id, msg))
		return;
	if (n > 0 && (size_t)n < sizeof(msg))
		(void)snprintf(msg + n, sizeof(msg) - (size_t)n, " denials=- denialsSuppressed=-");
	launcherd_trail(s->uid, msg);
}

void launcherd_trail_floor_refused(struct conn *c, const char *request, const struct plan *plan,
				   const char *code, const char *rule, const char *field)
{
	char argv0[TRAIL_ARGV0_MAX * 4 + 8], fld[TRAIL_ARGV0_MAX * 4 + 8], msg[TRAIL_MSG_MAX];

	if (c->d->mode != LAUNCHERD_PRIVILEGED)
		return;
	trail_escape(plan && plan->argv ? plan->argv[0] : NULL, argv0, sizeof(argv0));
	trail_escape(field, fld, sizeof(fld));
	(void)snprintf(msg, sizeof(msg),
		       "event=floor-refused uid=%u request=%s code=%s rule=%s field=%s argv0=%s "
		       "network=%s",
		       (unsigned)c->peer.uid, request, code, rule ? rule : "-", fld, argv0,
		       plan ? plan_network_to_string(plan->network) : "-");
	launcherd_trail(c->peer.uid, msg);
}

static void sandbox_free(struct sandbox *s)
{
	struct launcherd *d = s->d;

	trail_end(s, 0, 0, s->state == SB_FAILED ? "setup-failed" : "gone");
	audit_sandbox_ended(s->id);
	for (struct sandbox **p = &d->sandboxes; *p; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			break;
		}
	d->n_sandboxes--;
	event_source_free(s->pidfd_src);
	event_source_free(s->status_src);
	event_source_free(s->timer_src);
	event_source_free(s->report_src);
	safe_close(s->pidfd);
	safe_close(s->status_fd);
	safe_close(s->report_fd);
	safe_close(s->proxy_sock);
	netns_pool_release(&d->netns_pool, s->mntns_fd);
	/* Its init is reaped: its pid namespace, so every process it had, is gone. */
	netns_pool_recycle(&d->netns_pool, s->netns_fd, s->uid);
	cgroup_cleanup(d, &s->cgroup);
	json_decref(s->unenforced);
	free(s);
	launcherd_maybe_exit(d);
}

struct sandbox *sandbox_find(struct launcherd *d, const char *id, uid_t uid)
{
	/* One whose exit was reported stays killable until its init is reaped: the report comes
	 * as soon as the command is reaped, the init and the namespaces' teardown may still be
	 * going, and a kill of what is ending anyway costs nothing. */
	for (struct sandbox *s = d->sandboxes; s; s = s->next)
		/* Another user's sandbox is reported as absent: no existence oracle. */
		if (s->uid == uid && streq(s->id, id) && s->state != SB_FAILED)
			return s;
	return NULL;
}

void sandbox_usage(struct launcherd *d, uid_t uid, unsigned *ret_count, uint64_t *ret_pids,
		   uint64_t *ret_memory)
{
	*ret_count = 0;
	*ret_pids = *ret_memory = 0;
	for (struct sandbox *s = d->sandboxes; s; s = s->next)
		/* One whose exit was reported runs nothing any more: only its init is going. That
		 * report can be trusted: the init is not the requester's to tamper with (it is
		 * never dumpable, launcherd-light.c), and the command never holds the report fd. */
		if (s->uid == uid && s->state != SB_EXITED) {
			(*ret_count)++;
			*ret_pids += s->pids_max;
			*ret_memory += s->memory_max;
		}
}

int sandbox_signal(struct sandbox *s, int sig, enum kill_reason reason)
{
	if (sig == SIGKILL) {
		if (s->kill_reason == KILL_NONE)
			s->kill_reason = reason;
		(void)sandbox_cgroup_kill(&s->cgroup);
	}
	/* Why this is safe: the pidfd names exactly the process we cloned; it cannot have been
	 * recycled into another user's process. */
	if (syscall(SYS_pidfd_send_signal, s->pidfd, sig, NULL, 0) < 0 && errno != ESRCH)
		return -errno;
	return 0;
}

static bool read_report(struct sandbox *s, unsigned max);
static void send_exit(struct sandbox *s, const struct apply_report *rep, const siginfo_t *si);

static void send_spawned(struct sandbox *s)
{
	_cleanup_json_ json_t *m = NULL;
	int fds[2] = { s->pidfd, -1 };
	size_t n_fds = 1;

	/* Its audit session: the report pipe's first record, from its set-up child (then
	 * launcherd need not look its init up in /proc for it). */
	if (s->session_first)
		(void)read_report(s, 1);
	audit_sandbox_exec(s->id); /* its audit session is set by now */
	if (!s->conn)
		return;
	if (s->proxy_sock >= 0) {
		/* The listener the child made in the sandbox's netns (sent before its exec). */
		char c;
		size_t got = 0;

		if (ipc_recv_with_fds(s->proxy_sock, &c, 1, &fds[1], 1, &got, MSG_DONTWAIT) == 1 &&
		    got == 1)
			n_fds = 2;
		s->proxy_sock = safe_close(s->proxy_sock);
	}
	m = json_pack("{s:s,s:I,s:s,s:i}", "type", "spawned", "seq", (json_int_t)s->seq, "sandbox",
		      s->id, "pid", (int)s->pid);
	if (!m || conn_send(s->conn, m, fds, n_fds) < 0)
		log_debug("cannot send spawned for %s", s->id);
	safe_close(fds[1]);
}

static void send_setup_error(struct sandbox *s, const struct apply_status *st)
{
	const char *step = apply_step_to_string((enum apply_step)st->step);
	char field[64] = "";

	if (!s->conn)
		return;
	if (st->step == STEP_MOUNT && st->index >= 0)
		(void)snprintf(field, sizeof(field), "plan.mounts[%d]", st->index);
	else if (st->step == STEP_LANDLOCK && st->index >= 0)
		(void)snprintf(field, sizeof(field), "plan.landlock.fs[%d]", st->index);
	else if (st->step == STEP_RLIMIT && st->index >= 0)
		(void)snprintf(field, sizeof(field), "plan.rlimits");
	else if (st->step == STEP_SECCOMP && st->index >= 0)
		(void)snprintf(field, sizeof(field), "plan.seccomp.program");
	else if (st->step == STEP_CWD)
		(void)snprintf(field, sizeof(field), "plan.cwd");
	else if (st->step == STEP_EXEC)
		(void)snprintf(field, sizeof(field), "plan.argv[0]");

	if (st->step == STEP_EXEC)
		(void)conn_send_error(s->conn, s->seq, "exec-failed", st->error, field, step,
				      "cannot execute \"%s\": %s", "argv[0]", strerror(st->error));
	else
		(void)conn_send_error(s->conn, s->seq, "setup-failed", st->error, field, step,
				      "sandbox set-up failed at step \"%s\"%s%s: %s", step,
				      *field ? " for " : "", field, strerror(st->error));
}

static int on_report(struct event_source *src, int fd, uint32_t revents, void *userdata);

/* Resolve the status pipe: 1 when resolved (reply sent), 0 when nothing to read yet. */
static int status_resolve(struct sandbox *s)
{
	struct apply_status st;
	ssize_t n;

	do
		n = read(s->status_fd, &st, sizeof(st));
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN)
		return 0;

	event_source_free(s->status_src);
	s->status_src = NULL;
	s->status_fd = safe_close(s->status_fd);

	if (n == (ssize_t)sizeof(st)) {
		s->state = SB_FAILED;
		/* It saw its cgroup channel close before our kill landed: say why it closed. */
		if (st.step == STEP_CGROUP && s->cgroup_error)
			st.error = -s->cgroup_error;
		send_setup_error(s, &st);
		return 1;
	}
	if (n == 0 && s->cgroup_error) {
		/* We killed it: its cgroup could not be made. */
		struct apply_status cg = { .step = STEP_CGROUP,
					   .error = -s->cgroup_error,
					   .index = -1 };

		s->state = SB_FAILED;
		send_setup_error(s, &cg);
		return 1;
	}
	if (n != 0) {
		/* A short record or a read error: the child died mid-report. */
		struct apply_status unknown = { .step = STEP_CLONE, .error = EIO, .index = -1 };

		s->state = SB_FAILED;
		send_setup_error(s, &unknown);
		return 1;
	}
	/* EOF: the close-on-exec write end went away at execve. */
	s->state = SB_RUNNING;
	launcherd_trace(s->id, "exec-seen");
	send_spawned(s);
	launcherd_trace(s->id, "spawned-sent");
	if (s->have_report) {
		/* Read with the session (its set-up child could not write that record). */
		if (s->report.alone && s->state == SB_RUNNING)
			send_exit(s, &s->report, NULL);
	} else if (event_add_io(s->d->loop, s->report_fd, EPOLLIN, on_report, s, &s->report_src) <
		   0)
		/* Without it, the exit is reported when the init is reaped, as for a killed
		 * init. */
		s->report_src = NULL;
	return 1;
}

static int on_status(struct event_source *src, int fd, uint32_t revents, void *userdata)
{
	struct sandbox *s = userdata;

	if (s->state == SB_SETTING_UP)
		(void)status_resolve(s);
	return 0;
}

/* The init's report into s->report, when it wrote one: true and s->have_report set. The
 * floor's refusals it reported before (DENIAL records, sandbox-init.h) go to the denial reader,
 * at most max records a call (64: the init limits itself to far fewer, and one sandbox never
 * holds the loop); first of all, when asked for, the set-up child's audit session. Never
 * blocks. */
static bool read_report(struct sandbox *s, unsigned max)
{
	struct apply_report rep;
	ssize_t n = -1;
	unsigned i;

	if (s->report_fd < 0)
		return false;
	for (i = 0; i < max; i++) {
		bool first = s->session_first;

		do
			n = read(s->report_fd, &rep, sizeof(rep));
		while (n < 0 && errno == EINTR);
		if (n != (ssize_t)sizeof(rep))
			break;
		s->session_first = false;
		/* Written by the init, as the requester: the reader checks each field. */
		if (rep.type == APPLY_REPORT_DENIAL)
			audit_sandbox_notified(s->id, rep.dropped, rep.nr, rep.arch, rep.pid,
					       rep.args, rep.comm, rep.by_plan != 0);
		else if (rep.type == APPLY_REPORT_DROPPED)
			audit_sandbox_dropped(s->id, rep.dropped);
		/* Written by our own set-up child before the init ran: taken only as the first
		 * record, and only when the child was asked for it; one the init wrote (as the
		 * requester) can never come first, and any later one ends the report. */
		else if (rep.type == APPLY_REPORT_SESSION && first)
			audit_sandbox_session(s->id, rep.session);
		else
			break;
	}
	if (i == max || (n < 0 && errno == EAGAIN))
		return false; /* more to come: the loop calls us again */
	/* EXIT is the last record: the init writes it and exits. Anything else (a short record,
	 * an unknown type, EOF) ends the report without one. */
	event_source_free(s->report_src);
	s->report_src = NULL;
	s->report_fd = safe_close(s->report_fd);
	s->have_report = n == (ssize_t)sizeof(rep) && rep.type == APPLY_REPORT_EXIT;
	if (s->have_report)
		s->report = rep;
	return s->have_report;
}

/* "exit": from the init's report of the command's status (rep), else from the init's own (si:
 * killed by a cancel, a timeout or the OOM killer before it could report). */
static void send_exit(struct sandbox *s, const struct apply_report *rep, const siginfo_t *si)
{
	_cleanup_json_ json_t *m = NULL;
	const char *reason;
	bool pids_hit, oom;
	int code = 0, sig = 0;

	s->state = SB_EXITED;
	sandbox_cgroup_limits_hit(&s->cgroup, &pids_hit, &oom);
	if (rep) {
		code = WIFEXITED(rep->status) ? WEXITSTATUS(rep->status) : 0;
		sig = WIFSIGNALED(rep->status) ? WTERMSIG(rep->status) : 0;
	} else if (si->si_code == CLD_EXITED)
		code = si->si_status;
	else
		sig = si->si_status;

	if (s->kill_reason == KILL_TIMEOUT)
		reason = "timeout";
	else if (s->kill_reason != KILL_NONE)
		reason = "killed";
	else if (sig == SIGKILL && oom)
		reason = "memory";
	else
		reason = sig ? "signaled" : "exited";
	trail_end(s, code, sig, reason);

	if (!s->conn)
		return;
	m = json_pack("{s:s,s:s,s:i,s:i,s:i,s:s,s:I,s:{s:b,s:b}}", "type", "exit", "sandbox", s->id,
		      "pid", (int)s->pid, "exitCode", code, "signal", sig, "reason", reason,
		      "durationUsec", (json_int_t)(now_usec() - s->start_usec), "limits", "pids",
		      pids_hit, "memory", oom);
	if (!m || conn_send(s->conn, m, NULL, 0) < 0)
		log_debug("cannot send exit for %s", s->id);
	launcherd_trace(s->id, "exit-sent");
}

/* The command ended. When the init was left alone, nothing of the sandbox runs any more: the
 * exit is final now, and the init's own exit and the namespaces' teardown need not delay it. */
static int on_report(struct event_source *src, int fd, uint32_t revents, void *userdata)
{
	struct sandbox *s = userdata;

	if (read_report(s, 64) && s->report.alone && s->state == SB_RUNNING)
		send_exit(s, &s->report, NULL);
	return 0;
}

static int on_pidfd(struct event_source *src, int fd, uint32_t revents, void *userdata)
{
	struct sandbox *s = userdata;
	siginfo_t si = { 0 };

	if (waitid(P_PIDFD, (id_t)s->pidfd, &si, WEXITED | WNOHANG) < 0) {
		if (errno == EINTR)
			return 0;
		log_warning_errno(errno, "waitid on sandbox %s: %m", s->id);
	} else if (si.si_pid == 0)
		return 0; /* not yet */
	launcherd_trace(s->id, "init-reaped");

	/* The child is gone, so its ends of the pipes are closed: this cannot block. */
	if (s->state == SB_SETTING_UP)
		(void)status_resolve(s);
	if (s->state == SB_RUNNING) {
		/* Its write end is gone with it: this reaches the EXIT record or EOF, past at most
		 * the init's backlog (SANDBOX_INIT_REPORT_BACKLOG, a few calls' worth). Bounded
		 * all the same. */
		for (unsigned i = 0; i < 16 && !s->have_report && s->report_fd >= 0; i++)
			(void)read_report(s, 64);
		send_exit(s, s->have_report ? &s->report : NULL, &si);
	}
	sandbox_free(s);
	return 0;
}

static int on_timeout(struct event_source *src, void *userdata)
{
	struct sandbox *s = userdata;

	(void)sandbox_signal(s, SIGKILL, KILL_TIMEOUT);
	return 0;
}

void sandbox_detach_conn(struct launcherd *d, struct conn *c)
{
	for (struct sandbox *s = d->sandboxes; s; s = s->next) {
		if (s->conn != c)
			continue;
		/* A sandbox still setting up has nobody to report to: always killed. */
		if (s->die_with_requester || s->state == SB_SETTING_UP || d->single)
			(void)sandbox_signal(s, SIGKILL, KILL_REQUEST);
		s->conn = NULL;
	}
}

void sandbox_kill_all(struct launcherd *d)
{
	for (struct sandbox *s = d->sandboxes; s; s = s->next)
		(void)sandbox_signal(s, SIGKILL, KILL_SHUTDOWN);
}

static void make_id(char *buf, size_t size)
{
	uint64_t r = 0;

	if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
		r = now_nsec() ^ ((uint64_t)getpid() << 32);
	(void)snprintf(buf, size, "sb-%016llx", (unsigned long long)r);
}

/*
 * The sandbox's network namespace from the pool (privileged mode, or user mode with launcherd's
 * own user namespace, which owns the pool's namespaces: the child enters one before it unshares
 * its own user namespace); -1 without one: CLONE_NEWNET. Sets *ret_borrowed when the fd stays
 * the pool's.
 *
 * Network "unix" joins the requester's shared namespace (launcherd-net.h says why that is
 * safe) only when both locks that make it safe are on: the AF_UNIX-only seccomp floor, which
 * every "unix" sandbox gets (see sandbox_start()), and Landlock's abstract-unix-socket scope,
 * which the plan must carry and the kernel enforce (ABI >= 6). Otherwise a namespace of its
 * own: for "none" and "loopback" one of uid's earlier sandboxes' that ended clean, or a fresh
 * one (*ret_recycle: give it back when the sandbox ends); for "proxy" a fresh one (the
 * controller holds the proxy's listener in it).
 */
static int sandbox_netns(struct launcherd *d, const struct plan *plan, uid_t uid,
			 bool *ret_borrowed, bool *ret_recycle)
{
	*ret_borrowed = *ret_recycle = false;
	if (plan->network == PLAN_NETWORK_HOST)
		return -1;
	if (plan->network == PLAN_NETWORK_UNIX && plan->has_landlock && d->landlock_abi >= 6 &&
	    (plan->landlock_scope & CORDON_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET)) {
		int fd = netns_pool_shared(&d->netns_pool, uid);

		if (fd >= 0) {
			*ret_borrowed = true;
			return fd;
		}
	}
	if (plan->network == PLAN_NETWORK_NONE || plan->network == PLAN_NETWORK_LOOPBACK) {
		*ret_recycle = true;
		return netns_pool_take_private(&d->netns_pool, uid);
	}
	return netns_pool_take(&d->netns_pool);
}

/*
 * Whether this spawn may be light (launcherd-light.h): the set-up child shares our memory and
 * holds a slot until it execs, so every path it looks up must be answered without anyone
 * else's help. In privileged mode that holds when each bind source is on a local file system
 * (the screen's list) with nothing mounted at or beneath it: a clone of its mount alone then
 * is all the child can reach there, and the rest of the tree is ours (tmpfs, proc, the /dev
 * template). A mount made meanwhile is not in that clone, so no race lets one in. (Should the
 * spawn go the other way after all, those clones are as good: nothing was beneath them.) User
 * mode serves its own user only: a stall there would be self-inflicted, as it is in the other
 * path.
 */
static bool light_wanted(struct launcherd *d, const struct plan *plan, const int *fds)
{
	if (d->light.init_fd < 0)
		return false;
	if (d->mode == LAUNCHERD_USER)
		return true;
	if (!d->mounts)
		return false;
	for (size_t i = 0; i < plan->n_mounts; i++) {
		const char *fstype;

		if (plan->mounts[i].type == PLAN_MOUNT_BIND &&
		    (mount_table_query(d->mounts, fds[plan->mounts[i].source], &fstype) != 0 ||
		     !screen_fs_ok(fstype)))
			return false;
	}
	return true;
}

/* The light spawn's config (sandbox-init.h) in a pipe, whole, before the clone: the init reads
 * it once it runs, and we never wait for it. *ret_fd: the read end. -EAGAIN when it does not
 * fit (a user over its pipe quota gets small pipes): spawn the other way. */
static int light_config(const struct seccomp_program *floor, bool notify,
			const struct seccomp_program *filter, const struct seccomp_program *answer,
			const char *id, int *ret_fd)
{
	struct sandbox_init_config cfg = {
		.magic = SANDBOX_INIT_MAGIC,
		.n_floor = (uint32_t)floor->len,
		.n_plan = filter ? (uint32_t)filter->len : 0,
		.n_answer = answer ? (uint32_t)answer->len : 0,
		.landlock_flags = (uint16_t)audit_landlock_flags(),
		.seccomp_flags = (uint16_t)audit_seccomp_flags(),
		/* The notifying floor is not logged: its refusals come with their arguments from
		 * the init, and a second report from the audit record would repeat them. */
		.floor_flags = notify ? SECCOMP_FILTER_FLAG_NEW_LISTENER : audit_seccomp_flags(),
	};
	struct iovec iov[] = {
		{ &cfg, sizeof(cfg) },
		{ floor->insns, floor->len * sizeof(floor->insns[0]) },
		{ filter ? filter->insns : NULL,
		  filter ? filter->len * sizeof(filter->insns[0]) : 0 },
		{ answer ? answer->insns : NULL,
		  answer ? answer->len * sizeof(answer->insns[0]) : 0 },
	};
	size_t want = iov[0].iov_len + iov[1].iov_len + iov[2].iov_len + iov[3].iov_len;
	int p[2];
	ssize_t n;

	(void)snprintf(cfg.id, sizeof(cfg.id), "%s", id);
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	n = writev(p[1], iov, ELEMENTSOF(iov));
	safe_close(p[1]);
	if (n < 0 || (size_t)n != want) {
		safe_close(p[0]);
		return n < 0 && errno != EAGAIN ? -errno : -EAGAIN;
	}
	*ret_fd = p[0];
	return 0;
}

/* The user's supplementary groups are looked up once per connection (launcherd-dispatch.c). */
int sandbox_start(struct conn *c, int64_t seq, struct plan **planp, const int *fds, size_t n_fds,
		  struct seccomp_program *plan_filter, json_t *unenforced, const char **reterr_step,
		  int *reterr_index)
{
	struct plan *plan = *planp;
	struct light_slot *slot = NULL;
	struct launcherd *d = c->d;
	_cleanup_free_ struct sandbox *s = NULL;
	_cleanup_free_ int *tree_fds = NULL;
	struct apply_context ctx;
	struct clone_args args;
	int status[2] = { -1, -1 }, report[2] = { -1, -1 }, proxy_sv[2] = { -1, -1 },
	    cgroup_go[2] = { -1, -1 }, pidfd = -1, index = -1, netns_fd = -1, mntns_fd = -1,
	    config_fd = -1, cgroup_procs[2] = { -1, -1 }, r;
	bool netns_borrowed = false, netns_recycle = false, notify, own_session,
	     cgroup = (plan->pids_max || plan->memory_max) && d->cgroup.kind != CGROUP_NONE, light;
	const struct seccomp_program *floor, *nfloor,
		*filter = plan_filter->insns ? plan_filter : NULL;
	_cleanup_(seccomp_program_done) struct seccomp_program combined = { 0 };
	long pid;

	*reterr_step = apply_step_to_string(STEP_CLONE);
	s = calloc(1, sizeof(*s));
	tree_fds = calloc(plan->n_mounts + 1, sizeof(int));
	if (!s || !tree_fds)
		return -ENOMEM;
	for (size_t i = 0; i < plan->n_mounts; i++)
		tree_fds[i] = -1;
	s->d = d;
	s->conn = c;
	s->seq = seq;
	s->uid = c->peer.uid;
	s->pidfd = s->status_fd = s->report_fd = s->proxy_sock = s->mntns_fd = s->netns_fd = -1;
	s->die_with_requester = plan->die_with_requester;
	s->unenforced = unenforced ? json_incref(unenforced) : json_array();
	s->pids_max = plan->pids_max;
	s->memory_max = plan->memory_max;
	sandbox_cgroup_init(&s->cgroup);
	make_id(s->id, sizeof(s->id));
	launcherd_trace(s->id, "start");

	*reterr_step = apply_step_to_string(STEP_MOUNT);
	if (light_wanted(d, plan, fds))
		slot = light_slot_get(&d->light);
	light = slot;
	r = mount_prepare_binds(plan, fds, d->dev_template,
				light && d->mode == LAUNCHERD_PRIVILEGED, tree_fds, &index);
	if (r < 0) {
		*reterr_index = index;
		goto fail;
	}
	/* User mode: /dev from the pool's helper, which has a template (we have none). */
	for (size_t i = 0; i < plan->n_mounts && d->netns_pool.dev.enabled; i++)
		if (plan->mounts[i].type == PLAN_MOUNT_DEV && tree_fds[i] < 0) {
			tree_fds[i] = netns_pool_take_dev(&d->netns_pool);
			break;
		}

	*reterr_step = apply_step_to_string(STEP_CLONE);
	if (pipe2(status, O_CLOEXEC) < 0 || pipe2(report, O_CLOEXEC | O_NONBLOCK) < 0) {
		r = -errno;
		goto fail;
	}
	if (plan->network == PLAN_NETWORK_PROXY &&
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, proxy_sv) < 0) {
		r = -errno;
		goto fail;
	}

	netns_fd = sandbox_netns(d, plan, c->peer.uid, &netns_borrowed, &netns_recycle);
	mntns_fd = netns_pool_take_mnt(&d->netns_pool); /* each -1 when there is none */

	/* "unix": no socket but AF_UNIX, whichever namespace it sits in. */
	floor = &d->floors[plan->seccomp_kill][plan->network == PLAN_NETWORK_UNIX];
	/* Light only if the child has nothing to do in our mount namespace (privileged: every
	 * bind cloned here, the root from the pool) nor with libnl (lo of a new netns). */
	for (size_t i = 0; light && i < plan->n_mounts; i++)
		if (plan->mounts[i].type == PLAN_MOUNT_BIND && tree_fds[i] < 0 &&
		    d->mode == LAUNCHERD_PRIVILEGED)
			light = false;
	if (light && ((d->mode == LAUNCHERD_PRIVILEGED && mntns_fd < 0) ||
		      (plan->network != PLAN_NETWORK_HOST && netns_fd < 0)))
		light = false;
	/* The floor's refusals with their arguments (docs/DENIALS.md): the init holds the
	 * listener of a notifying floor, in a light spawn only (the other path has no init of
	 * ours to hold it), and only for a requester the denial reader serves. Kill mode kills.
	 * Why this is safe: the notifying floor refuses exactly what the other refuses (the same
	 * program but for its refusing RET constants); the listener is the init's alone (close-
	 * on-exec from the kernel, the init never dumpable), and the init answers EPERM, never
	 * CONTINUE; without a listener the kernel answers ENOSYS: refused all the same. */
	nfloor = &d->floors[FLOOR_ACTION_NOTIFY][plan->network == PLAN_NETWORK_UNIX];
	notify = light && !plan->seccomp_kill && audit_active() && nfloor->len > 0;
	/* And the plan's refusals too: its filter in front of the notifying floor, one program
	 * (seccomp_combine() says why that is safe), when the plan is one it can be done for
	 * (else combined stays empty, and the two are stacked). */
	if (notify && filter && d->floor_combinable)
		(void)seccomp_combine(filter, nfloor, &combined);
	if (light && light_config(combined.insns ? &combined
				  : notify	 ? nfloor
						 : floor,
				  notify, combined.insns ? NULL : filter,
				  combined.insns ? filter : NULL, s->id, &config_fd) < 0)
		light = false;
	notify = notify && light;
	/* Every refusal its init reports: no audit record to tie to the sandbox, no audit
	 * session needed (the kernel's login record and the /proc lookups it costs, per spawn).
	 * Otherwise the plan's filter (or the floor, off the light path or in kill mode) logs
	 * its refusals, and only the session says whose they are. */
	own_session = audit_active() && !(notify && (!filter || combined.insns));

	/* The cgroup: made after the clone while the child mounts, which waits for our word on
	 * cgroup_go; light, now, and the child moves itself in. */
	if (cgroup && !light &&
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, cgroup_go) < 0) {
		r = -errno;
		goto fail;
	}
	if (light && cgroup) {
		*reterr_step = apply_step_to_string(STEP_CGROUP);
		r = sandbox_cgroup_create(&d->cgroup, s->id, plan->pids_max, plan->memory_max, 0,
					  &s->cgroup, cgroup_procs);
		if (r < 0)
			goto fail;
		*reterr_step = apply_step_to_string(STEP_CLONE);
	}

	launcherd_trace(s->id, light ? "prepared-light" : "prepared");
	ctx = (struct apply_context){
		.plan = plan,
		.id = s->id,
		.fds = fds,
		.n_fds = n_fds,
		.tree_fds = tree_fds,
		.devnull_fd = d->devnull_fd,
		.netns_fd = netns_fd,
		.mntns_fd = mntns_fd,
		.status_fd = status[1],
		.report_fd = report[1],
		.proxy_sock = proxy_sv[1],
		.userns = d->mode == LAUNCHERD_USER,
		.userns_late = d->mode == LAUNCHERD_USER && d->own_userns,
		.uid = c->peer.uid,
		.gid = c->peer.gid,
		.groups = c->groups,
		.n_groups = c->n_groups,
		.limits_differ = c->limits_differ,
		/* Privileged mode only: no new user namespace, launcherd's empty bounding set. */
		.bset_empty = d->bset_empty,
		.audit_session = own_session,
		.cgroup_go_fd = cgroup_go[0],
		.cgroup_procs = { cgroup_procs[0], cgroup_procs[1] },
		.nproc_limit = d->cgroup.kind == CGROUP_NONE ? plan->pids_max : 0,
		.landlock_abi = d->landlock_abi,
		.floor = floor,
		.plan_filter = filter,
		.init_fd = light ? d->light.init_fd : -1,
		.config_fd = config_fd,
	};
	memcpy(ctx.limits, c->limits, sizeof(ctx.limits));
	args = (struct clone_args){
		.flags = apply_clone_flags(&ctx) | CLONE_PIDFD,
		.pidfd = (uint64_t)(uintptr_t)&pidfd,
		.exit_signal = SIGCHLD,
	};
	/* Why this is safe: the child runs only launcherd_apply(), which ends in execve() or
	 * _exit(); it holds our fds only until exec (all close-on-exec). A light child shares our
	 * memory meanwhile, but reads only the slot's copies (launcherd-light.h). */
	if (light) {
		sigset_t all, old;

		/* Born with every signal blocked: no handler of ours may ever run in the child,
		 * which shares our memory until its exec (launcherd_apply() keeps them so). */
		sigfillset(&all);
		(void)sigprocmask(SIG_SETMASK, &all, &old);
		pid = light_clone(slot, args.flags & ~(unsigned long long)CLONE_PIDFD, &ctx, plan,
				  &pidfd);
		(void)sigprocmask(SIG_SETMASK, &old, NULL);
		if (pid > 0)
			*planp = NULL; /* the slot's until the child has left our memory */
	} else {
		pid = syscall(SYS_clone3, &args, sizeof(args));
		if (pid == 0)
			launcherd_apply(&ctx);
		if (pid < 0)
			pid = -errno;
	}
	config_fd = safe_close(config_fd);
	close_many(cgroup_procs, 2);
	if (pid < 0) {
		r = (int)pid;
		goto fail;
	}

	/* Parent. The child has its copies; ours go now, so the pipe's EOF is the child's exec. */
	launcherd_trace(s->id, "cloned");
	status[1] = safe_close(status[1]);
	report[1] = safe_close(report[1]);
	proxy_sv[1] = safe_close(proxy_sv[1]);
	cgroup_go[0] = safe_close(cgroup_go[0]);
	if (netns_recycle)
		s->netns_fd = TAKE_FD(netns_fd);
	else if (!netns_borrowed)
		netns_fd = safe_close(netns_fd);
	s->mntns_fd = TAKE_FD(mntns_fd);
	for (size_t i = 0; i < plan->n_mounts; i++)
		safe_close(tree_fds[i]);
	s->pid = (pid_t)pid;
	s->pidfd = pidfd;
	s->status_fd = TAKE_FD(status[0]);
	s->report_fd = TAKE_FD(report[0]);
	s->session_first = ctx.audit_session;
	s->proxy_sock = TAKE_FD(proxy_sv[0]);
	s->start_usec = now_usec();
	(void)fd_set_nonblock(s->status_fd, true);
	/* its denials: its requester's */
	audit_sandbox_started(s->id, s->pid, s->uid, s->conn, notify, own_session);
	trail_start(s, plan, filter, cgroup);

	/* The cgroup, made while the child builds its mount tree: limits set, the child moved in,
	 * then let go on (it waits for that before anything in it can fork). A child that failed
	 * meanwhile has closed its end (EPIPE, no SIGPIPE on a socket): its status record says
	 * why. On failure the child is killed, and its status pipe's EOF reports the cgroup step
	 * (status_resolve()). */
	if (cgroup && !light) {
		r = sandbox_cgroup_create(&d->cgroup, s->id, plan->pids_max, plan->memory_max,
					  s->pid, &s->cgroup, (int[2]){ -1, -1 });
		if (r >= 0 && send(cgroup_go[1], "g", 1, MSG_NOSIGNAL) != 1 && errno != EPIPE &&
		    errno != ECONNRESET)
			r = -errno;
		if (r < 0) {
			/* Killed before it sees its channel close, so the reason is ours to give. */
			s->cgroup_error = r;
			(void)syscall(SYS_pidfd_send_signal, s->pidfd, SIGKILL, NULL, 0);
		}
		cgroup_go[1] = safe_close(cgroup_go[1]);
		launcherd_trace(s->id, "cgroup-joined");
	}

	r = event_add_io(d->loop, s->status_fd, EPOLLIN, on_status, s, &s->status_src);
	if (r >= 0)
		r = event_add_io(d->loop, s->pidfd, EPOLLIN, on_pidfd, s, &s->pidfd_src);
	if (r >= 0 && plan->timeout_ms)
		r = event_add_timer(d->loop, plan->timeout_ms * 1000, false, on_timeout, s,
				    &s->timer_src);
	if (r < 0) {
		/* Cannot supervise it: kill and reap it here rather than leave it running. */
		(void)syscall(SYS_pidfd_send_signal, s->pidfd, SIGKILL, NULL, 0);
		(void)waitid(P_PIDFD, (id_t)s->pidfd, &(siginfo_t){ 0 }, WEXITED);
		event_source_free(s->status_src);
		event_source_free(s->pidfd_src);
		event_source_free(s->timer_src);
		safe_close(s->pidfd);
		safe_close(s->status_fd);
		safe_close(s->report_fd);
		safe_close(s->proxy_sock);
		safe_close(s->mntns_fd);
		safe_close(s->netns_fd);
		cgroup_cleanup(d, &s->cgroup);
		json_decref(s->unenforced);
		return r;
	}
	s->next = d->sandboxes;
	d->sandboxes = s;
	d->n_sandboxes++;
	launcherd_trace(s->id, "supervised");
	TAKE_PTR(s);
	return 0;

fail:
	safe_close(config_fd);
	close_many(cgroup_procs, 2);
	if (!netns_borrowed)
		safe_close(netns_fd);
	safe_close(mntns_fd);
	safe_close(status[0]);
	safe_close(status[1]);
	safe_close(report[0]);
	safe_close(report[1]);
	safe_close(proxy_sv[0]);
	safe_close(proxy_sv[1]);
	close_many(cgroup_go, 2);
	for (size_t i = 0; i < plan->n_mounts; i++)
		safe_close(tree_fds[i]);
	cgroup_cleanup(d, &s->cgroup);
	json_decref(s->unenforced);
	return r;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The denial reader (launcherd-audit.h, docs/DENIALS.md): audit records in, "denial" messages
 * out, each to the requester of the sandbox it came from and to no one else.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <seccomp.h>

#include "common/cleanup.h"
#include "common/json-cleanup.h"
#include "common/log.h"
#include "common/seccomp-action.h"
#include "common/util.h"
#include "launcherd/launcherd-audit-record.h"
#include "launcherd/launcherd-audit.h"
#include "launcherd/launcherd-denial-args.h"
#include "launcherd/launcherd-landlock.h"
#include "launcherd/launcherd-seccomp.h"
#include "launcherd/launcherd.h"

#ifndef AUDIT_NLGRP_READLOG
#define AUDIT_NLGRP_READLOG 1
#endif
#ifndef SECCOMP_FILTER_FLAG_LOG
#define SECCOMP_FILTER_FLAG_LOG (1UL << 1)
#endif
#define CORDON_LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON (1U << 1) /* ABI 7 */
#define AUDIT_SESSION_NONE UINT32_MAX
/* Landlock records of a domain whose "allocated" record has not come yet (it follows the
 * first one at once): at most this many wait, each at most AUDIT_PENDING_USEC. */
#define AUDIT_PENDING_MAX 16
#define AUDIT_PENDING_USEC 500000ULL
#define AUDIT_TICK_USEC 250000ULL
#define AUDIT_CLOCK_SLACK_MSEC 20
/* Above the kernel's MAX_AUDIT_MESSAGE_LENGTH (8970) */
#define AUDIT_MSG_MAX 9216

struct audit_sb {
	struct audit_sb *next;
	char id[24];
	pid_t pid;
	uid_t uid;
	uint32_t session;
	bool session_read;   /* once its set-up is over: audit_sandbox_exec(), or a record */
	uint64_t domain;     /* 0 until its first Landlock record named it */
	uint64_t start_msec; /* realtime, for the records' own clock */
	struct conn *conn;   /* NULL once its requester went away */
	uint64_t ended_usec; /* monotonic; 0 while it runs */
	uint64_t window_usec;
	unsigned in_window;
	unsigned long suppressed;
	/* For the admin's trail: every record attributed to it, and those the rate limit held
	 * back; its end record, written with them when its identity goes (audit_sandbox_trail()). */
	unsigned long long denials, denials_suppressed;
	char *trail;
	/* The floor's refusals come from its init (audit_sandbox_notified()): a seccomp record
	 * of an errno refusal is then the plan's filter's. */
	bool notify;
};

struct pending {
	struct audit_record rec;
	uint64_t usec;
};

static struct {
	int fd;
	bool active;
	int open_error;	   /* audit_open()'s, or 0 */
	int audit_enabled; /* the kernel's, as last known: -1 unknown */
	int landlock_abi;
	uint32_t own_session;
	struct event_loop *loop;
	struct event_source *src, *tick;
	struct audit_sb *sbs;
	struct pending *pend;
	unsigned n_pend;
} A = { .fd = -1, .audit_enabled = -1 };

static uint64_t now_usec(clockid_t clk)
{
	struct timespec ts;

	(void)clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000ULL + (uint64_t)ts.tv_nsec / 1000;
}

/* A sessionid file's content (n bytes read into buf, NUL-terminated). No allocation. */
static uint32_t parse_session(const char *buf, ssize_t n)
{
	char *end;
	unsigned long v;

	if (n <= 0)
		return AUDIT_SESSION_NONE;
	errno = 0;
	v = strtoul(buf, &end, 10);
	if (errno || end == buf || v >= AUDIT_SESSION_NONE)
		return AUDIT_SESSION_NONE;
	return (uint32_t)v;
}

static uint32_t read_session(const char *path)
{
	char buf[16] = { 0 };
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);

	return parse_session(buf, fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1));
}

int audit_open(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK,
				  .nl_groups = 1U << (AUDIT_NLGRP_READLOG - 1) };
	_cleanup_close_ int fd = -1;
	int size = 1 << 20;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_AUDIT);
	if (fd < 0)
		return A.open_error = -errno;
	/*
	 * Why this is safe: joining AUDIT_NLGRP_READLOG (CAP_AUDIT_READ, checked by the kernel
	 * here, at bind) only lets us read copies of the records the kernel emits; we never send
	 * on this socket, so it changes nothing of the host's audit configuration (which we could
	 * not: launcherd holds no capability to). What we read is every process's records:
	 * launcherd passes on only those it can tie to a sandbox, to that sandbox's requester
	 * alone.
	 */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return A.open_error = -errno;
	/* Only the record types handle() reads are queued to us: every other record the host
	 * emits (logins, SYSCALL and PROCTITLE records, those of an admin's rules) is dropped by
	 * the kernel before it reaches the socket, and never wakes launcherd. The netlink
	 * header's type, loaded as network order, compares with htons() of each type. */
	{
		struct sock_filter insns[7];
		struct sock_fprog prog = { .len = 7, .filter = insns };
		const uint16_t want[] = { CORDON_AUDIT_CONFIG_CHANGE, CORDON_AUDIT_SECCOMP,
					  CORDON_AUDIT_LANDLOCK_ACCESS,
					  CORDON_AUDIT_LANDLOCK_DOMAIN };

		insns[0] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_H | BPF_ABS,
							offsetof(struct nlmsghdr, nlmsg_type));
		for (unsigned i = 0; i < 4; i++)
			insns[1 + i] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
								    htons(want[i]), 4 - i, 0);
		insns[5] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 0);
		insns[6] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 0xffffffffU);
		if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0)
			return A.open_error = -errno;
	}
	/* A burst must not overflow the socket before the loop drains it: best effort. */
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	A.own_session = read_session("/proc/self/sessionid");
	A.fd = TAKE_FD(fd);
	return 0;
}

bool audit_active(void)
{
	return A.active;
}

json_t *audit_hello(bool privileged)
{
	char reason[160];

	if (A.active)
		return json_pack("{s:b,s:s,s:b,s:b}", "reader", true, "audit",
				 A.audit_enabled == 0	? "off"
				 : A.audit_enabled == 1 ? "on"
				 : A.audit_enabled == 2 ? "locked"
							: "unknown",
				 "landlock", A.landlock_abi >= 7, "seccomp", true);
	if (!privileged)
		(void)snprintf(reason, sizeof(reason),
			       "user mode: reading the kernel's audit records needs a privileged "
			       "launcherd (CAP_AUDIT_READ)");
	else
		(void)snprintf(reason, sizeof(reason), "cannot join the audit group: %s",
			       A.open_error ? strerror(-A.open_error) : "not started");
	return json_pack("{s:b,s:s}", "reader", false, "reason", reason);
}

unsigned audit_landlock_flags(void)
{
	return A.active && A.landlock_abi >= 7 ? CORDON_LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON : 0;
}

unsigned audit_seccomp_flags(void)
{
	return A.active ? SECCOMP_FILTER_FLAG_LOG : 0;
}

uint32_t audit_child_session(uid_t uid)
{
	char buf[16] = { 0 };
	_cleanup_close_ int dir = -1, fd = -1;

	/*
	 * Why this is safe: it sets the login uid of this process only (the kernel allows that
	 * for ourselves alone), to the requester's uid, which is what the sandbox's processes run
	 * as anyway; the kernel then gives it a new audit session, inherited by everything the
	 * sandbox starts and out of its reach (changing a set login uid takes the audit-control
	 * capability, which no sandbox has, nor launcherd).
	 * When launcherd's own login uid is already set, this fails (we do not hold that
	 * capability) and nothing changes: the session read is launcherd's, which launcherd
	 * takes for none. One lookup of our /proc directory serves both files (it is the costly
	 * part: a new process's first).
	 */
	dir = open("/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return AUDIT_SESSION_NONE;
	fd = openat(dir, "loginuid", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		int k = snprintf(buf, sizeof(buf), "%u", (unsigned)uid);

		if (k > 0 && (size_t)k < sizeof(buf))
			(void)!write(fd, buf, (size_t)k);
		fd = safe_close(fd);
	}
	fd = openat(dir, "sessionid", O_RDONLY | O_CLOEXEC);
	memset(buf, 0, sizeof(buf));
	return parse_session(buf, fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1));
}

static void send_suppressed(struct audit_sb *s);

static struct audit_sb *find_id(const char *id)
{
	for (struct audit_sb *s = A.sbs; s; s = s->next)
		if (streq(s->id, id))
			return s;
	return NULL;
}

/* Its end record, with the denial counts, to the admin's trail. */
static void trail_flush(struct audit_sb *s)
{
	char msg[TRAIL_MSG_MAX];

	if (!s->trail)
		return;
	(void)snprintf(msg, sizeof(msg), "%s denials=%llu denialsSuppressed=%llu", s->trail,
		       s->denials, s->denials_suppressed);
	launcherd_trail(s->uid, msg);
	free(s->trail);
	s->trail = NULL;
}

static void sb_free(struct audit_sb *s)
{
	send_suppressed(s);
	trail_flush(s);
	free(s);
}

static void arm_tick(void)
{
	if (A.tick)
		(void)event_timer_set(A.tick, AUDIT_TICK_USEC, true);
}

void audit_sandbox_started(const char *id, pid_t pid, uid_t uid, struct conn *c, bool notify,
			   bool session)
{
	struct audit_sb *s;

	if (!A.active || pid <= 0 || strlen(id) >= sizeof(s->id))
		return;
	s = calloc(1, sizeof(*s));
	if (!s) {
		log_warning("no memory for a sandbox's audit identity: no denials for %s", id);
		return;
	}
	memcpy(s->id, id, strlen(id) + 1);
	s->pid = pid;
	s->uid = uid;
	s->conn = c;
	s->notify = notify;
	s->session = AUDIT_SESSION_NONE; /* audit_sandbox_session() or _exec() */
	s->session_read = !session;
	/* The records' clock is the coarse realtime one, up to a tick behind. */
	s->start_msec = now_usec(CLOCK_REALTIME) / 1000 - AUDIT_CLOCK_SLACK_MSEC;
	s->next = A.sbs;
	A.sbs = s;
}

/* final: its set-up is over (else it may still be before the login uid: read again later). */
static void read_sb_session(struct audit_sb *s, bool final)
{
	char path[64];

	if (s->session_read || s->ended_usec)
		return;
	/* The init is ours and not reaped (a zombie at most): its /proc entry is its own, and
	 * its set-up has set its login uid by now (before the command's exec). A session shared
	 * with launcherd (the set-up could not make one) names no sandbox. */
	(void)snprintf(path, sizeof(path), "/proc/%d/sessionid", (int)s->pid);
	s->session = read_session(path);
	if (s->session == A.own_session)
		s->session = AUDIT_SESSION_NONE;
	s->session_read = final || s->session != AUDIT_SESSION_NONE;
}

void audit_sandbox_session(const char *id, uint32_t session)
{
	struct audit_sb *s = A.active ? find_id(id) : NULL;

	if (!s || s->session_read)
		return;
	/* Written by launcherd's own set-up child before the sandbox ran anything (the report
	 * pipe's first record, launcherd-sandbox.c): as good as reading the init's /proc entry. */
	s->session = session == A.own_session ? AUDIT_SESSION_NONE : session;
	s->session_read = true;
}

void audit_sandbox_exec(const char *id)
{
	struct audit_sb *s = A.active ? find_id(id) : NULL;

	if (s)
		read_sb_session(s, true);
}

void audit_sandbox_ended(const char *id)
{
	struct audit_sb *s = A.active ? find_id(id) : NULL;

	if (!s || s->ended_usec)
		return;
	s->ended_usec = now_usec(CLOCK_MONOTONIC);
	arm_tick();
}

bool audit_sandbox_trail(const char *id, const char *msg)
{
	struct audit_sb *s = A.active ? find_id(id) : NULL;

	if (!s || s->trail)
		return false;
	s->trail = strdup(msg);
	return s->trail != NULL;
}

void audit_conn_closed(struct conn *c)
{
	for (struct audit_sb *s = A.sbs; s; s = s->next)
		if (s->conn == c)
			s->conn = NULL;
}

/* "fs.read_file,fs.write_file" -> ["read-file", "write-file"] and the kind ("fs") */
static json_t *access_names(const char *blockers, char *kind, size_t kind_size)
{
	_cleanup_json_ json_t *arr = json_array();
	char word[AUDIT_RECORD_BLOCKERS_MAX];
	const char *p = blockers;

	if (!arr)
		return NULL;
	kind[0] = 0;
	while (*p) {
		size_t n = strcspn(p, ",");
		const char *dot = memchr(p, '.', n);
		size_t k = dot ? (size_t)(dot - p) : 0;

		if (dot && !kind[0] && k < kind_size) {
			memcpy(kind, p, k);
			kind[k] = 0;
		}
		memcpy(word, dot ? dot + 1 : p, dot ? n - k - 1 : n);
		word[dot ? n - k - 1 : n] = 0;
		for (char *q = word; *q; q++)
			if (*q == '_')
				*q = '-';
		if (json_array_append_new(arr, json_string(word)) < 0)
			return NULL;
		p += n;
		if (*p == ',')
			p++;
	}
	return TAKE_PTR(arr);
}

static void send_msg(struct audit_sb *s, json_t *m)
{
	if (!m) {
		log_warning("no memory for a denial of %s", s->id);
		return;
	}
	if (s->conn && conn_send(s->conn, m, NULL, 0) < 0)
		log_debug("a denial of %s could not be sent", s->id);
	json_decref(m);
}

static void send_suppressed(struct audit_sb *s)
{
	if (!s->suppressed)
		return;
	send_msg(s, json_pack("{s:s,s:s,s:I}", "type", "denial", "sandbox", s->id, "suppressed",
			      (json_int_t)s->suppressed));
	s->suppressed = 0;
}

static json_t *denial_message(const struct audit_sb *s, const struct audit_record *r)
{
	_cleanup_json_ json_t *m = NULL;
	char kind[16];

	m = json_pack("{s:s,s:s,s:I}", "type", "denial", "sandbox", s->id, "timeMs",
		      (json_int_t)r->msec);
	if (!m)
		return NULL;
	if (r->type == CORDON_AUDIT_LANDLOCK_ACCESS) {
		json_t *access = access_names(r->blockers, kind, sizeof(kind));

		if (!access || json_object_set_new(m, "access", access) < 0 ||
		    json_object_set_new(m, "layer", json_string("landlock")) < 0 ||
		    json_object_set_new(m, "kind", json_string(kind)) < 0)
			return NULL;
		/* Paths and command names come from the sandbox: jansson refuses what is not
		 * UTF-8, and such a path is sent as missing rather than not at all. */
		if (r->path[0] &&
		    json_object_set_new(m, "path", json_string(r->path) ?: json_null()) < 0)
			return NULL;
		if (r->port >= 0 && json_object_set_new(m, "port", json_integer(r->port)) < 0)
			return NULL;
		if (r->addr[0] && json_object_set_new(m, "address", json_string(r->addr)) < 0)
			return NULL;
		return TAKE_PTR(m);
	}
	{
		_cleanup_free_ char *name = seccomp_syscall_resolve_num_arch(r->arch, r->syscall);

		if (json_object_set_new(m, "layer", json_string("seccomp")) < 0 ||
		    json_object_set_new(m, "kind", json_string("syscall")) < 0 ||
		    json_object_set_new(m, "syscallNr", json_integer(r->syscall)) < 0 ||
		    json_object_set_new(m, "action", json_string(seccomp_action_name(r->code))) <
			    0 ||
		    (name && json_object_set_new(m, "syscall", json_string(name)) < 0) ||
		    /* With a notifying floor, the floor never logs: an errno refusal logged is
		     * the plan's (it won, or it alone refused). */
		    (s->notify && (r->code & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_ERRNO &&
		     json_object_set_new(m, "filter", json_string("policy")) < 0) ||
		    json_object_set_new(m, "pid", json_integer(r->pid)) < 0 ||
		    (r->comm[0] &&
		     json_object_set_new(m, "comm", json_string(r->comm) ?: json_null()) < 0) ||
		    (r->exe[0] &&
		     json_object_set_new(m, "exe", json_string(r->exe) ?: json_null()) < 0))
			return NULL;
	}
	return TAKE_PTR(m);
}

/* Rate-limited per sandbox: AUDIT_DENIALS_PER_SEC in any one-second window, the rest counted
 * and reported as one record when the window ends. Whether this one may go. */
static bool admit(struct audit_sb *s)
{
	uint64_t now = now_usec(CLOCK_MONOTONIC);

	/* Counted whether or not its requester is still there to be told (the admin's trail). */
	s->denials++;
	if (now - s->window_usec >= 1000000ULL) {
		send_suppressed(s);
		s->window_usec = now;
		s->in_window = 0;
	}
	if (s->in_window >= AUDIT_DENIALS_PER_SEC) {
		s->denials_suppressed++;
		if (s->suppressed++ == 0)
			arm_tick();
		return false;
	}
	s->in_window++;
	return true;
}

static void deliver(struct audit_sb *s, const struct audit_record *r)
{
	if (admit(s))
		send_msg(s, denial_message(s, r));
}

static json_t *notified_message(const struct audit_sb *s, int32_t nr, uint32_t arch, uint32_t pid,
				const uint64_t args[6], const char comm[16], bool by_plan)
{
	char name16[16];

	_cleanup_free_ char *name = seccomp_syscall_resolve_num_arch(arch, nr);
	_cleanup_json_ json_t *m = NULL, *named = denial_args_json(name, args);

	m = json_pack("{s:s,s:s,s:I,s:s,s:s,s:i,s:s,s:s}", "type", "denial", "sandbox", s->id,
		      "timeMs", (json_int_t)(now_usec(CLOCK_REALTIME) / 1000), "layer", "seccomp",
		      "kind", "syscall", "syscallNr", (int)nr, "action", "errno", "filter",
		      by_plan ? "policy" : "floor");
	if (!m || (name && json_object_set_new(m, "syscall", json_string(name)) < 0) ||
	    (pid > 0 && pid <= DENIAL_PID_MAX &&
	     json_object_set_new(m, "sandboxPid", json_integer(pid)) < 0) ||
	    (named && json_object_update(m, named) < 0))
		return NULL;
	/* The command's name as the init read it: at most 15 bytes; jansson refuses what is not
	 * UTF-8, and such a name is sent as missing. */
	memcpy(name16, comm, sizeof(name16));
	name16[sizeof(name16) - 1] = 0;
	if (name16[0] && json_object_set_new(m, "comm", json_string(name16) ?: json_null()) < 0)
		return NULL;
	return TAKE_PTR(m);
}

/* Refusals the init counted but did not report: suppressed, as ours are. Bounded: a count
 * from the sandbox's side. */
static void add_dropped(struct audit_sb *s, uint32_t dropped)
{
	unsigned n = dropped < (1U << 20) ? dropped : (1U << 20);

	if (!n)
		return;
	/* Refusals its init counted without reporting them: the admin's trail counts them too. */
	s->denials += n;
	s->denials_suppressed += n;
	if (!s->conn)
		return;
	s->suppressed += n;
	arm_tick();
}

void audit_sandbox_dropped(const char *id, uint32_t dropped)
{
	struct audit_sb *s = A.active ? find_id(id) : NULL;

	if (s)
		add_dropped(s, dropped);
}

void audit_sandbox_notified(const char *id, uint32_t dropped, int32_t nr, uint32_t arch,
			    uint32_t pid, const uint64_t args[6], const char comm[16], bool by_plan)
{
	struct audit_sb *s = A.active ? find_id(id) : NULL;

	if (!s)
		return;
	/* From the sandbox's init, which runs as the requester: every field is checked here
	 * (denial_args_check(); the pid's range and the name in notified_message()), and a
	 * report that fails is dropped whole. */
	add_dropped(s, dropped);
	if (denial_args_check(nr, arch) < 0) {
		log_debug("a malformed refusal report from %s's init dropped", s->id);
		return;
	}
	if (admit(s))
		send_msg(s, notified_message(s, nr, arch, pid, args, comm, by_plan));
}

static void pend_add(const struct audit_record *r)
{
	if (!A.pend) {
		A.pend = calloc(AUDIT_PENDING_MAX, sizeof(*A.pend));
		if (!A.pend)
			return;
	}
	if (A.n_pend == AUDIT_PENDING_MAX) {
		memmove(A.pend, A.pend + 1, (AUDIT_PENDING_MAX - 1) * sizeof(*A.pend));
		A.n_pend--;
	}
	A.pend[A.n_pend].rec = *r;
	A.pend[A.n_pend].usec = now_usec(CLOCK_MONOTONIC);
	A.n_pend++;
	arm_tick();
}

/* Deliver (s) or drop (NULL) the pending records of a domain, and those too old. */
static void pend_resolve(uint64_t domain, struct audit_sb *s)
{
	uint64_t now = now_usec(CLOCK_MONOTONIC);
	unsigned j = 0;

	for (unsigned i = 0; i < A.n_pend; i++) {
		if (domain && A.pend[i].rec.domain == domain) {
			if (s)
				deliver(s, &A.pend[i].rec);
			continue;
		}
		if (now - A.pend[i].usec >= AUDIT_PENDING_USEC)
			continue;
		if (j != i)
			A.pend[j] = A.pend[i];
		j++;
	}
	A.n_pend = j;
}

static void handle(const struct audit_record *r)
{
	struct audit_sb *s;

	switch (r->type) {
	case CORDON_AUDIT_CONFIG_CHANGE:
		if (r->audit_enabled >= 0)
			A.audit_enabled = r->audit_enabled;
		return;
	case CORDON_AUDIT_LANDLOCK_DOMAIN:
		if (r->status != AUDIT_DOMAIN_ALLOCATED)
			return;
		/* The init restricted itself, as the requester: its pid (not reaped while the
		 * sandbox runs) and uid, in a record no older than the sandbox. The record may
		 * come after the sandbox ended (it lingers); should its pid be a newer sandbox's
		 * already, the one that started last before the record is the one. */
		{
			struct audit_sb *best = NULL;

			for (s = A.sbs; s; s = s->next)
				if (s->pid == r->pid && s->uid == r->uid && !s->domain &&
				    r->msec >= s->start_msec &&
				    (!best || s->start_msec > best->start_msec))
					best = s;
			if (best)
				best->domain = r->domain;
			pend_resolve(r->domain, best);
		}
		return;
	case CORDON_AUDIT_LANDLOCK_ACCESS:
		for (s = A.sbs; s; s = s->next)
			if (s->domain == r->domain)
				break;
		if (s)
			deliver(s, r);
		else
			pend_add(r);
		return;
	case CORDON_AUDIT_SECCOMP:
		/* clone3 is answered ENOSYS by the floor so that libc falls back to clone(): a
		 * redirection, not a refusal (the record does not carry the errno). */
		if (r->syscall == 435 && (r->code & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_ERRNO)
			return;
		if (r->session == AUDIT_SESSION_NONE)
			return;
		for (s = A.sbs; s; s = s->next) {
			/* Its exec may not have been handled yet: the loop reads this socket
			 * and the status pipes in any order. */
			read_sb_session(s, false);
			if (s->session == r->session && s->uid == r->uid)
				break;
		}
		if (s)
			deliver(s, r);
		return;
	default:
		return;
	}
}

static int on_tick(struct event_source *src, void *userdata)
{
	uint64_t now = now_usec(CLOCK_MONOTONIC);
	bool again = false;

	(void)userdata;
	pend_resolve(0, NULL);
	for (struct audit_sb **p = &A.sbs; *p;) {
		struct audit_sb *s = *p;

		if (s->suppressed && now - s->window_usec >= 1000000ULL) {
			send_suppressed(s);
			s->window_usec = now;
			s->in_window = 0;
		}
		if (s->ended_usec && now - s->ended_usec >= AUDIT_LINGER_USEC) {
			*p = s->next;
			sb_free(s);
			continue;
		}
		again = again || s->suppressed || s->ended_usec;
		p = &s->next;
	}
	if (!again && A.n_pend == 0)
		(void)event_timer_set(src, 0, false);
	return 0;
}

static int on_readable(struct event_source *src, int fd, uint32_t revents, void *userdata)
{
	_cleanup_free_ char *buf = malloc(AUDIT_MSG_MAX);
	_cleanup_free_ struct audit_record *r = malloc(sizeof(*r));

	(void)src, (void)revents, (void)userdata;
	if (!buf || !r)
		return 0;
	for (unsigned round = 0; round < 256; round++) {
		struct sockaddr_nl from = { 0 };
		struct iovec iov = { buf, AUDIT_MSG_MAX };
		struct msghdr mh = { .msg_name = &from,
				     .msg_namelen = sizeof(from),
				     .msg_iov = &iov,
				     .msg_iovlen = 1 };
		const struct nlmsghdr *h = (const struct nlmsghdr *)buf;
		ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT);

		if (n < 0) {
			if (errno == ENOBUFS) {
				log_warning("audit records were lost (the socket overflowed)");
				continue;
			}
			return 0; /* EAGAIN, or nothing we can do about it */
		}
		/* Only the kernel speaks on this group (port 0); one record per message. */
		if (from.nl_family != AF_NETLINK || from.nl_pid != 0 ||
		    (mh.msg_flags & MSG_TRUNC) || (size_t)n < NLMSG_HDRLEN ||
		    h->nlmsg_len < NLMSG_HDRLEN || h->nlmsg_len > (size_t)n)
			continue;
		if (audit_record_parse(h->nlmsg_type, buf + NLMSG_HDRLEN,
				       h->nlmsg_len - NLMSG_HDRLEN, r) < 0)
			continue;
		/* A Landlock denial or a configuration change means the kernel's audit is on
		 * (the kernel logs them only then): turning it on logs nothing, so this is how we
		 * learn it. A change that turns it off says so itself (handle()). Not a domain's
		 * end nor a seccomp record: the kernel logs those whatever the state. */
		if (A.audit_enabled != 2 && r->type != CORDON_AUDIT_SECCOMP &&
		    r->status != AUDIT_DOMAIN_DEALLOCATED)
			A.audit_enabled = 1;
		handle(r);
	}
	return 0;
}

int audit_start(struct launcherd *d)
{
	int r;

	if (A.fd < 0)
		return -EBADF;
	A.loop = d->loop;
	A.landlock_abi = d->landlock_abi;
	r = event_add_io(d->loop, A.fd, EPOLLIN, on_readable, NULL, &A.src);
	if (r < 0)
		return r;
	r = event_add_timer(d->loop, AUDIT_TICK_USEC, true, on_tick, NULL, &A.tick);
	if (r < 0) {
		event_source_free(TAKE_PTR(A.src));
		return r;
	}
	(void)event_timer_set(A.tick, 0, false);
	A.active = true;
	landlock_restrict_flags = audit_landlock_flags();
	seccomp_load_flags = audit_seccomp_flags();
	return 0;
}

void audit_stop(void)
{
	A.active = false;
	landlock_restrict_flags = 0;
	seccomp_load_flags = 0;
	event_source_free(TAKE_PTR(A.src));
	event_source_free(TAKE_PTR(A.tick));
	/* The end records still held are written with the counts so far. */
	while (A.sbs) {
		struct audit_sb *s = A.sbs;

		A.sbs = s->next;
		s->conn = NULL;
		sb_free(s);
	}
	free(TAKE_PTR(A.pend));
	A.n_pend = 0;
	A.fd = safe_close(A.fd);
}

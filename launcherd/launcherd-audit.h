/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Denials (docs/DENIALS.md): a privileged launcherd reads the kernel's audit records of
 * Landlock and seccomp refusals from the audit multicast group, matches each to the sandbox it
 * came from, and sends it as a "denial" message to that sandbox's requester only, at most
 * AUDIT_DENIALS_PER_SEC a second per sandbox (then one record saying how many were suppressed).
 *
 * One reader per launcherd, its state in this file (launcherd is one thread). Off (every call
 * below a no-op, and no sandbox logs anything) unless audit_open() succeeded: privileged mode
 * only, with CAP_AUDIT_READ (an optional capability of launcherd-main.c's).
 *
 * Which sandbox a record is from, without trusting anything the sandbox can write:
 *  - Landlock records name the domain; the domain's first record ("allocated") names the pid
 *    that restricted itself to it, the sandbox's init, which lives (unreaped by launcherd) as
 *    long as the sandbox does, and the uid it ran as: both must match a live sandbox.
 *  - seccomp records name the audit session: each sandbox's set-up sets its login uid, which
 *    gives it a session of its own that its processes inherit and cannot change (that needs
 *    the audit-control capability, which no sandbox has). Without one (the login uid was already set and
 *    could not be set again) its seccomp records are not attributed, hence not reported.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#define AUDIT_DENIALS_PER_SEC 10
/* A sandbox's identity is kept this long after it ended: its last records may still be on
 * their way through the kernel's audit queue. */
#define AUDIT_LINGER_USEC (2 * 1000000ULL)

struct launcherd;
struct conn;
struct event_loop;

/*
 * Privileged mode: open the audit netlink socket and join the read-only multicast group (needs
 * CAP_AUDIT_READ). Returns 0, or -errno: then
 * denials are off and the reason is logged.
 */
int audit_open(void);
/* Watch the socket in d's loop (after audit_open()); -errno turns denials off. */
int audit_start(struct launcherd *d);
void audit_stop(void);
/* Whether the reader runs. */
bool audit_active(void);
/* What hello says of denials: {reader: true, audit: "on"|"off"|"locked"|"unknown", landlock:
 * ABI >= 7, seccomp: true} or {reader: false, reason}. audit is the kernel's audit_enabled as
 * last known: "unknown" at start (reading it takes the audit-control capability, which
 * launcherd does not hold), "off" when a record says it was turned off, "on" at the next
 * Landlock or configuration-change record (turning it on is not logged). */
json_t *audit_hello(bool privileged);

/* What the set-up of a sandbox adds: landlock_restrict_self() flags (log denials after exec:
 * Landlock ABI 7), seccomp(SECCOMP_SET_MODE_FILTER) flags (log). 0 when the reader is off. */
unsigned audit_landlock_flags(void);
unsigned audit_seccomp_flags(void);
/* Child side, early in the set-up, when launcherd's reader runs: give the sandbox an audit
 * session of its own (its login uid set to uid), and return the session we then have (or
 * UINT32_MAX when it cannot be read). Best effort; no allocation (a light child shares
 * launcherd's memory). */
uint32_t audit_child_session(uid_t uid);

/* A sandbox's init (pid) runs for requester c: remember who it is. notify: the init holds the
 * floor's listener (sandbox-init.h) and reports its refusals itself. session: its set-up child
 * gives it an audit session of its own (audit_child_session()), else its seccomp records, if
 * any, are not looked for. */
void audit_sandbox_started(const char *id, pid_t pid, uid_t uid, struct conn *c, bool notify,
			   bool session);
/* Its init reported a refusal (struct apply_report, DENIAL; by_plan: the plan's filter's, else
 * the floor's): sent like the audit's, rate-limited with them, once its fields passed their
 * checks; dropped: refusals the init itself did not report (counted as suppressed). */
void audit_sandbox_notified(const char *id, uint32_t dropped, int32_t nr, uint32_t arch,
			    uint32_t pid, const uint64_t args[6], const char comm[16],
			    bool by_plan);
void audit_sandbox_dropped(const char *id, uint32_t dropped);
/* Its set-up child's report of its audit session (APPLY_REPORT_SESSION), taken as its own
 * unless it is launcherd's (the child could not make one). */
void audit_sandbox_session(const char *id, uint32_t session);
/* Its command was exec'd (the set-up is over): its audit session, read from its init's /proc
 * entry unless reported already. */
void audit_sandbox_exec(const char *id);
/* It ended (its identity lingers AUDIT_LINGER_USEC), or its requester went away. */
void audit_sandbox_ended(const char *id);
/* Its end record for the admin's trail (launcherd_trail()): kept, and written with
 * " denials=N denialsSuppressed=K" appended when its identity goes (AUDIT_LINGER_USEC after its
 * end, or at audit_stop()). false when the reader keeps no identity of it: write it now. */
bool audit_sandbox_trail(const char *id, const char *msg);
void audit_conn_closed(struct conn *c);
